package attack_test

// The tests of this package are the data-driven adversarial suite
// (docs/security.md, classes A–I; doc.go describes it). Each case is one
// table entry: the probe actions a module runs, the outcome it must get, and
// the side effects it must not have.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/stationhttp"
	"github.com/station-dev/station/internal/wasmbuild"
)

// world is one station home wired to loopback fixtures through the
// operator's config.yaml (resolve overrides only: no real DNS is used for
// any name a case lets through to resolution).
// countingResolver answers no lookup and counts them: every name a case may
// resolve is in the operator's resolve map, so the real resolver must never
// be asked — and a name refused before resolution must never reach it.
type countingResolver struct{ n atomic.Int64 }

func (r *countingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.n.Add(1)
	return nil, fmt.Errorf("no DNS in the attack suite (%s)", host)
}

type world struct {
	dns     countingResolver
	t       *testing.T
	name    string
	home    string
	st      *station.Station
	ca      *fixture.CA
	srv     map[string]*fixture.Server // stripe, groq, evil, pay, plain
	log     *fixture.SyncBuffer
	d       string // the filesystem tree the E and F cases attack
	oom     string // the station's oom_score_adj before a case
	user    string // a home directory of the station's user (see userHome), outside every module's trees
	client  *http.Client
	lastHdr sync.Map // fixture name -> http.Header of its last request

	slowIn      chan struct{} // a request reached /slow
	slowRelease chan struct{} // releases /slow

	sock         string       // a Unix socket (an "agent") outside every module's trees
	sockAccepted atomic.Int32 // connections it accepted
}

const (
	modStripe = "atk/stripe" // allow api.stripe.com
	modGroq   = "atk/groq"   // allow api.groq.com
	modWild   = "atk/wild"   // allow *.stripe.com
	modBoth   = "atk/both"   // allow api.stripe.com, api.groq.com
	modFS     = "atk/fs"     // no network; writes d/out/**, reads d/in/**; timeout 30s (a 2 MiB write under -race and load took over 5s)
	modExec   = "atk/exec"   // subprocess [echo, touch, curl, cat, tee]; writes d/work/**
	modRun    = "atk/run"    // allow api.stripe.com; timeout 2s, memory 64MiB
	modUp     = "atk/up"     // reinstalled with fewer permissions by a case
)

// entriesLimit is the stations' filesystem.entries: small, so that a flood
// of files reaches it quickly.
const entriesLimit = 3000

func newWorld(t *testing.T, strict bool) *world {
	t.Helper()
	w := &world{t: t, home: t.TempDir(), ca: fixture.NewCA(t), srv: map[string]*fixture.Server{},
		slowIn: make(chan struct{}, 16), slowRelease: make(chan struct{})}
	w.name = "main"
	if strict {
		w.name = "strict"
	}
	t.Cleanup(func() {
		select {
		case <-w.slowRelease:
		default:
			close(w.slowRelease)
		}
	})
	hello := func(name string, mux *http.ServeMux) {
		mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
			w.lastHdr.Store(name, r.Header.Clone())
			fmt.Fprintf(rw, "hello from %s", name)
		})
	}
	stripe, groq, evil, pay, plain := http.NewServeMux(), http.NewServeMux(), http.NewServeMux(), http.NewServeMux(), http.NewServeMux()
	hello("stripe", stripe)
	hello("groq", groq)
	hello("evil", evil)
	hello("pay", pay)
	hello("plain", plain)
	w.srv["evil"] = w.ca.TLSServer(t, evil, "evil.example", "127.0.0.1")
	w.srv["groq"] = w.ca.TLSServer(t, groq, "api.groq.com")
	w.srv["pay"] = w.ca.TLSServer(t, pay, "pay.stripe.com")
	w.srv["plain"] = fixture.HTTPServer(t, plain)
	evilURL := w.srv["evil"].URL
	for path, to := range map[string]string{
		"/to-evil":      "https://evil.example/",
		"/to-metadata":  "http://169.254.169.254/latest/meta-data/",
		"/to-http":      "http://api.stripe.com/",
		"/to-plain":     "http://plain.stripe.com/",
		"/to-literal":   evilURL + "/",
		"/to-userinfo":  "https://api.stripe.com@evil.example/",
		"/to-port":      "https://api.stripe.com:8443/",
		"/to-groq":      "https://api.groq.com/",
		"/to-self":      "/",
		"/to-loop":      "/to-loop",
		"/to-decimal":   "https://2130706433/",
		"/to-backslash": "https://evil.example\\@api.stripe.com/",
	} {
		stripe.Handle(path, http.RedirectHandler(to, http.StatusFound))
	}
	stripe.Handle("/307-evil", http.RedirectHandler("https://evil.example/", http.StatusTemporaryRedirect))
	stripe.HandleFunc("/endless", func(rw http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("A"), 1<<20)
		for {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
	})
	stripe.HandleFunc("/slow", func(rw http.ResponseWriter, r *http.Request) {
		w.slowIn <- struct{}{}
		select {
		case <-w.slowRelease:
		case <-r.Context().Done():
		}
		io.WriteString(rw, "slow done")
	})
	w.srv["stripe"] = w.ca.TLSServer(t, stripe, "api.stripe.com")

	w.d = fsTree(t)
	w.user = userHome(t)
	w.sock = filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.sockAccepted.Add(1)
			c.Close()
		}
	}()
	caPath := w.ca.WriteFile(t, w.home)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "network:\n  resolve:\n")
	res := map[string]string{
		"api.stripe.com:443":  w.srv["stripe"].Addr.String(),
		"api.groq.com:443":    w.srv["groq"].Addr.String(),
		"evil.example:443":    w.srv["evil"].Addr.String(),
		"pay.stripe.com:443":  w.srv["pay"].Addr.String(),
		"plain.stripe.com:80": w.srv["plain"].Addr.String(),
		"api.stripe.com:8443": w.srv["evil"].Addr.String(),
	}
	if strict {
		evilPort := fmt.Sprint(w.srv["evil"].Addr.Port())
		for k, v := range map[string]string{
			"private.stripe.com:443":    "10.1.2.3:443",
			"private172.stripe.com:443": "172.16.5.5:443",
			"private192.stripe.com:443": "192.168.1.1:443",
			"metadata.stripe.com:443":   "169.254.169.254:443",
			"mapped.stripe.com:443":     "[::ffff:127.0.0.1]:" + evilPort,
			"nat64.stripe.com:443":      "[64:ff9b::7f00:1]:" + evilPort,
			"cgnat.stripe.com:443":      "100.64.1.1:443",
			"ula.stripe.com:443":        "[fd00::1]:443",
			"unspec.stripe.com:443":     "0.0.0.0:" + evilPort,
			"v6loop.stripe.com:443":     "[::1]:" + evilPort,
			"ll6.stripe.com:443":        "[fe80::1]:443",
			"mcast.stripe.com:443":      "224.0.0.1:443",
			"bcast.stripe.com:443":      "255.255.255.255:443",
			"loop2.stripe.com:443":      "127.0.0.2:" + evilPort,
			"mapped10.stripe.com:443":   "[::ffff:10.0.0.1]:443",
			"v6unspec.stripe.com:443":   "[::]:" + evilPort,
		} {
			res[k] = v
		}
	}
	for k, v := range res {
		fmt.Fprintf(&cfg, "    - %s=%s\n", k, v)
	}
	fmt.Fprintf(&cfg, "  extra_ca: %s\n", caPath)
	if !strict {
		fmt.Fprintf(&cfg, "  allow_private: [127.0.0.0/8]\n")
	}
	fmt.Fprintf(&cfg, "filesystem:\n  quota: 1MiB\n  entries: %d\n", entriesLimit)
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	w.log = &fixture.SyncBuffer{}
	st, err := station.Open(context.Background(), w.home, station.Options{Cache: wasmbuild.CacheForTest(), Logger: slog.New(slog.NewTextHandler(w.log, nil)), Resolver: &w.dns})
	if err != nil {
		t.Fatalf("open station: %v", err)
	}
	w.st = st
	t.Cleanup(func() { st.Close(context.Background()) })
	w.client = stationhttp.NewClient(stationhttp.Options{RootCAs: w.ca.Pool(), Timeout: 10 * time.Second})

	full, nonet := probe.Wasm(t), probe.Wasm(t, probe.NoNetworkTag)
	w.install(spec{id: modStripe, allow: []string{"api.stripe.com"}}, full)
	w.install(spec{id: modGroq, allow: []string{"api.groq.com"}}, full)
	w.install(spec{id: modFS, writes: []string{w.d + "/out/**"}, reads: []string{w.d + "/in/**"}, limits: "timeout: 30s"}, nonet)
	if !strict {
		w.install(spec{id: modWild, allow: []string{"*.stripe.com"}}, full)
		w.install(spec{id: modBoth, allow: []string{"api.stripe.com", "api.groq.com"}}, full)
		w.install(spec{id: modRun, allow: []string{"api.stripe.com"}, limits: "timeout: 2s\nmemory: 64MiB"}, full)
		w.install(spec{id: modUp, allow: []string{"api.stripe.com"}}, full)
		w.install(spec{id: modExec, subp: "{allow: [echo, touch, curl, cat, tee]}", writes: []string{w.d + "/work/**"}, limits: "timeout: 10s"}, probe.Wasm(t, probe.ExecTag))
	} else {
		w.install(spec{id: modWild, allow: []string{"api.stripe.com", "*.stripe.com"}}, full)
	}
	return w
}

// fsTree builds the tree the filesystem and subprocess cases attack:
//
//	d/secret.txt d/out.bak d/out/keep.txt d/out2/x.txt d/in/data.txt d/work/
//	d/out/planted -> ../secret.txt   d/out/planted-dir -> ../in
//	d/out/hl (a hard link of d/secret.txt)   d/out/fifo (a FIFO)
func fsTree(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, dir := range []string{"out", "out2", "in", "work"} {
		os.Mkdir(filepath.Join(d, dir), 0o755)
	}
	for name, data := range map[string]string{"secret.txt": "secret", "out/keep.txt": "keep", "out2/x.txt": "x", "out.bak": "bak", "in/data.txt": "data"} {
		os.WriteFile(filepath.Join(d, name), []byte(data), 0o644)
	}
	os.Symlink("../secret.txt", filepath.Join(d, "out", "planted"))
	os.Symlink("../in", filepath.Join(d, "out", "planted-dir"))
	if err := os.Link(filepath.Join(d, "secret.txt"), filepath.Join(d, "out", "hl")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "out", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// userHome builds what a user's home holds that a module must never reach:
// a private key (0600, in a 0700 .ssh) and a shell start-up file.
//
//	user/.ssh/id_ed25519 user/.bashrc
func userHome(t *testing.T) string {
	t.Helper()
	u := t.TempDir()
	if err := os.Mkdir(filepath.Join(u, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{".ssh/id_ed25519": "PRIVATE KEY", ".bashrc": "# rc\n"} {
		if err := os.WriteFile(filepath.Join(u, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// resetOut removes what a case may have created in the writable trees.
func (w *world) resetOut() {
	keep := map[string]bool{"keep.txt": true, "planted": true, "planted-dir": true, "hl": true, "fifo": true}
	ents, _ := os.ReadDir(filepath.Join(w.d, "out"))
	for _, e := range ents {
		if !keep[e.Name()] {
			os.RemoveAll(filepath.Join(w.d, "out", e.Name()))
		}
	}
	ents, _ = os.ReadDir(filepath.Join(w.d, "work"))
	for _, e := range ents {
		os.RemoveAll(filepath.Join(w.d, "work", e.Name()))
	}
}

type spec struct {
	id            string
	allow, writes []string
	reads         []string
	limits        string
	subp          string
}

func (s spec) manifest() string {
	if s.subp == "" {
		s.subp = "false"
	}
	var m strings.Builder
	fmt.Fprintf(&m, "id: %s\nversion: \"1.0.0\"\ndescription: attack module\nwasm: module.wasm\n", s.id)
	fmt.Fprintf(&m, "commands:\n  - name: %s\n    description: run probe actions\n", probe.Command)
	fmt.Fprintf(&m, "requires:\n  network:\n    allow: [%s]\n  subprocess: %s\n  filesystem_writes: [%s]\n  filesystem_reads: [%s]\n",
		quoteAll(s.allow), s.subp, quoteAll(s.writes), quoteAll(s.reads))
	if s.limits != "" {
		m.WriteString("limits:\n")
		for _, l := range strings.Split(s.limits, "\n") {
			fmt.Fprintf(&m, "  %s\n", l)
		}
	}
	return m.String()
}

func (w *world) install(s spec, wasm []byte) {
	w.t.Helper()
	if err := w.tryInstall(s.manifest(), wasm); err != nil {
		w.t.Fatalf("install %s: %v", s.id, err)
	}
}

func (w *world) tryInstall(manifest string, wasm []byte) error {
	dir, err := os.MkdirTemp(w.t.TempDir(), "mod")
	if err != nil {
		return err
	}
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(manifest), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600)
	_, err = w.st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil })
	return err
}

func (w *world) run(id string, actions ...probe.Action) ([]probe.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := w.st.Run(ctx, id, probe.Command, probe.Run(actions...))
	if err != nil {
		return nil, err
	}
	return probe.Decode(out)
}

// accepted returns the connections each fixture has accepted so far.
func (w *world) accepted() map[string]int64 {
	m := map[string]int64{}
	for k, s := range w.srv {
		m[k] = s.Accepted()
	}
	return m
}

// stationGet does a GET with the station's own client.
func (w *world) stationGet(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "hello from") {
		return fmt.Errorf("GET %s: status %d body %q", url, resp.StatusCode, b)
	}
	return nil
}

// alive checks that the station, its modules and its own client all work.
func (w *world) alive(t *testing.T) {
	t.Helper()
	if w.name == "main" {
		for id, host := range map[string]string{modStripe: "api.stripe.com", modGroq: "api.groq.com", modBoth: "api.groq.com"} {
			res, err := w.run(id, probe.HTTP("GET", "https://"+host+"/"))
			if err != nil || len(res) != 1 || !res[0].OK || res[0].Status != 200 {
				t.Errorf("%s: module %s no longer reaches %s: %v %+v", w.name, id, host, err, res)
			}
		}
	} else {
		res, err := w.run(modGroq, probe.Env())
		if err != nil || len(res) != 1 || !res[0].OK {
			t.Errorf("%s: module %s no longer runs: %v %+v", w.name, modGroq, err, res)
		}
	}
	if res, err := w.run(modFS, probe.Read(filepath.Join(w.d, "in", "data.txt"))); err != nil || len(res) != 1 || res[0].Data != "data" {
		t.Errorf("%s: module %s no longer reads its file: %v %+v", w.name, modFS, err, res)
	}
	if err := w.stationGet(w.srv["evil"].URL + "/"); err != nil {
		t.Errorf("%s: the station's own client: %v", w.name, err)
	}
}

// fileState is what "byte-for-byte unchanged" means for one path.
type fileState struct {
	data  string
	mode  fs.FileMode
	mtime time.Time
	nlink uint64
	link  string
}

func snapshot(dir string) map[string]fileState {
	out := map[string]fileState{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		st := fileState{mode: fi.Mode(), mtime: fi.ModTime(), nlink: uint64(fi.Sys().(*syscall.Stat_t).Nlink)}
		switch {
		case fi.Mode().Type() == fs.ModeSymlink:
			st.link, _ = os.Readlink(p)
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			st.data = string(b)
		}
		out[p] = st
		return nil
	})
	return out
}

// sameTree reports every difference between before and after outside the
// paths in may (and the directories that directly hold them).
func sameTree(t *testing.T, root string, before, after map[string]fileState, may []string) {
	t.Helper()
	allowed := func(p string) bool {
		for _, m := range may {
			m = filepath.Join(root, m)
			if p == m || strings.HasPrefix(p, m+"/") || p == filepath.Dir(m) {
				return true
			}
		}
		return false
	}
	for p, b := range before {
		if allowed(p) {
			continue
		}
		a, ok := after[p]
		if !ok {
			t.Errorf("%s was removed", p)
		} else if a != b {
			t.Errorf("%s changed: before %+v, after %+v", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !allowed(p) {
			t.Errorf("%s was created", p)
		}
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
