package station_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

// testCache lets every station in this test binary reuse compiled code, as
// a long-running station would; it is shared with the other packages' tests
// and kept on disk across runs (wasmbuild.CacheForTest). A station given it
// compiles in process: the compile child is tested with openFresh.
func testCache(testing.TB) wazero.CompilationCache { return wasmbuild.CacheForTest() }

// env is a station home wired to loopback fixtures that stand in for
// api.stripe.com, api.groq.com and evil.example, through the same operator
// configuration a person would write.
//
// Each test has its own env (home, fixtures, store, host), so the tests
// that use one run in parallel (t.Parallel, first thing). Those that do
// not: the ones that change the process's environment (broad_test.go sets
// HOME) or measure the whole process (the host buffers' heap), and those
// whose outcome depends on time a parallel test would take from them
// (installlimits_test.go's compile bounds, the runaway guests' deadline).
type env struct {
	t                  *testing.T
	home               string
	st                 *station.Station
	ca                 *fixture.CA
	stripe, groq, evil *fixture.Server
	stripeMux, groqMux *http.ServeMux
	logBuf             *fixture.SyncBuffer
}

// gateLog returns the station log lines about module id.
func (e *env) gateLog(id string) string {
	var out []string
	for _, l := range strings.Split(e.logBuf.String(), "\n") {
		if strings.Contains(l, "module "+id+":") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

type envOpts struct {
	noLoopbackGrant bool              // leave 127.0.0.0/8 ungranted
	extraResolve    map[string]string // more "host:port=addr" lines
	auditClock      func() time.Time  // the audit rate limit's clock (nil: time.Now)
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{t: t, home: t.TempDir(), ca: fixture.NewCA(t), stripeMux: http.NewServeMux(), groqMux: http.NewServeMux()}
	ok := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", name) }
	}
	e.stripeMux.HandleFunc("/", ok("stripe"))
	e.groqMux.HandleFunc("/", ok("groq"))
	e.stripe = e.ca.TLSServer(t, e.stripeMux, "api.stripe.com")
	e.groq = e.ca.TLSServer(t, e.groqMux, "api.groq.com")
	e.evil = e.ca.TLSServer(t, ok("evil"), "evil.example", "127.0.0.1")
	caPath := e.ca.WriteFile(t, e.home)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "network:\n  resolve:\n")
	fmt.Fprintf(&cfg, "    - api.stripe.com:443=%s\n", e.stripe.Addr)
	fmt.Fprintf(&cfg, "    - api.groq.com:443=%s\n", e.groq.Addr)
	fmt.Fprintf(&cfg, "    - evil.example:443=%s\n", e.evil.Addr)
	for k, v := range o.extraResolve {
		fmt.Fprintf(&cfg, "    - %s=%s\n", k, v)
	}
	fmt.Fprintf(&cfg, "  extra_ca: %s\n", caPath)
	if !o.noLoopbackGrant {
		fmt.Fprintf(&cfg, "  allow_private: [127.0.0.0/8]\n")
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	e.logBuf = &fixture.SyncBuffer{}
	st, err := station.Open(context.Background(), e.home, station.Options{Cache: testCache(t), Logger: slog.New(slog.NewTextHandler(e.logBuf, nil)), AuditClock: o.auditClock})
	if err != nil {
		t.Fatalf("open station: %v", err)
	}
	e.st = st
	t.Cleanup(func() { st.Close(context.Background()) })
	return e
}

// reopen closes the station and opens it again (after a config change).
func (e *env) reopen() {
	e.t.Helper()
	e.st.Close(context.Background())
	st, err := station.Open(context.Background(), e.home, station.Options{Cache: testCache(e.t), Logger: slog.New(slog.NewTextHandler(e.logBuf, nil))})
	if err != nil {
		e.t.Fatalf("reopen station: %v", err)
	}
	e.st = st
	e.t.Cleanup(func() { st.Close(context.Background()) })
}

// moduleSpec describes a test module's manifest.
type moduleSpec struct {
	id     string
	allow  []string
	limits string   // YAML lines under limits:, e.g. "timeout: 1s"
	writes []string // filesystem_writes
	extra  string   // more YAML lines under requires:
	subp   string   // the YAML value of requires.subprocess (default false)
}

// install writes a module directory for wasm under spec and installs it.
func (e *env) install(spec moduleSpec, wasm []byte) { e.installWith(spec, wasm) }

func (e *env) installWith(spec moduleSpec, wasm []byte) {
	e.t.Helper()
	dir := e.t.TempDir()
	var m strings.Builder
	fmt.Fprintf(&m, "id: %s\nversion: \"1.0.0\"\ndescription: test module\nwasm: module.wasm\n", spec.id)
	fmt.Fprintf(&m, "commands:\n  - name: %s\n    description: run probe actions\n", probe.Command)
	if spec.subp == "" {
		spec.subp = "false"
	}
	fmt.Fprintf(&m, "requires:\n  network:\n    allow: [%s]\n  subprocess: %s\n  filesystem_writes: [%s]\n%s", quoteAll(spec.allow), spec.subp, quoteAll(spec.writes), spec.extra)
	if spec.limits != "" {
		fmt.Fprintf(&m, "limits:\n")
		for _, l := range strings.Split(spec.limits, "\n") {
			fmt.Fprintf(&m, "  %s\n", l)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m.String()), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := e.tryInstall(dir); err != nil {
		e.t.Fatalf("install %s: %v", spec.id, err)
	}
}

func (e *env) tryInstall(dir string) error {
	_, err := e.st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil })
	return err
}

// moduleDir writes a module directory for wasm under spec without
// installing it.
func (e *env) moduleDir(spec moduleSpec, wasm []byte) string {
	e.t.Helper()
	if spec.subp == "" {
		spec.subp = "false"
	}
	dir := e.t.TempDir()
	m := fmt.Sprintf("id: %s\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: %s\nrequires:\n  network:\n    allow: [%s]\n  subprocess: %s\n  filesystem_writes: [%s]\n%s",
		spec.id, probe.Command, quoteAll(spec.allow), spec.subp, quoteAll(spec.writes), spec.extra)
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600)
	return dir
}

// probe runs the probe's actions in module id and decodes the results.
func (e *env) probe(id string, actions ...probe.Action) ([]probe.Result, error) {
	out, err := e.st.Run(context.Background(), id, probe.Command, probe.Run(actions...))
	if err != nil {
		return nil, err
	}
	return probe.Decode(out)
}

func (e *env) mustProbe(id string, actions ...probe.Action) []probe.Result {
	e.t.Helper()
	res, err := e.probe(id, actions...)
	if err != nil {
		e.t.Fatalf("probe %s: %v", id, err)
	}
	if len(res) != len(actions) {
		e.t.Fatalf("probe %s: got %d results, want %d", id, len(res), len(actions))
	}
	return res
}

// audit flushes and returns the audit records of the station.
func (e *env) audit(f store.AuditFilter) []store.AuditRecord {
	e.t.Helper()
	if err := e.st.Audit.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	if f.Limit == 0 {
		f.Limit = 100000
	}
	recs, err := e.st.Store.Audit(context.Background(), f)
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// wantOK fails unless r is a successful HTTP result with status 200.
func wantOK(t *testing.T, what string, r probe.Result) {
	t.Helper()
	if !r.OK || r.Status != 200 {
		t.Fatalf("%s: got ok=%v status=%d error=%+v, want 200", what, r.OK, r.Status, r.Error)
	}
}

// wantDenied fails unless r is a network denial naming module and target.
func wantDenied(t *testing.T, what string, r probe.Result, module, target string) {
	t.Helper()
	if r.OK || r.Error == nil {
		t.Fatalf("%s: got ok=%v status=%d, want a denial", what, r.OK, r.Status)
	}
	if r.Error.Code != "denied" || r.Error.Capability != "network" {
		t.Fatalf("%s: got error %+v, want code denied, capability network", what, r.Error)
	}
	if !strings.Contains(r.Error.Message, "module "+module+":") {
		t.Fatalf("%s: denial %q does not name module %s", what, r.Error.Message, module)
	}
	if target != "" && !strings.Contains(r.Error.Target, target) {
		t.Fatalf("%s: denial target %q, want it to contain %q", what, r.Error.Target, target)
	}
}

// stationGet does a GET the way the station's own clients do.
func stationGet(client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
