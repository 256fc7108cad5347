package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/audit"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

// world is a station home whose api.stripe.com is a loopback fixture, with
// a daemon serving it.
type world struct {
	home   string
	st     *station.Station
	stripe *fixture.Server
	srv    *Server
	addr   string
	client *Client
}

const stripeMod = "test/stripe-only"

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{home: t.TempDir()}
	ca := fixture.NewCA(t)
	w.stripe = ca.TLSServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "hello from stripe") }), "api.stripe.com")
	cfg := fmt.Sprintf("network:\n  resolve:\n    - api.stripe.com:443=%s\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n", w.stripe.Addr, ca.WriteFile(t, w.home))
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w.st = w.open(t)
	w.install(t, w.st, "api.stripe.com")

	srv, err := New(Options{Station: w.st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = srv
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(w.home, StateFile))
		return err == nil
	}, "the state file")
	c, err := Dial(context.Background(), w.home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w.client = c
	return w
}

func (w *world) open(t *testing.T) *station.Station {
	t.Helper()
	st, err := station.Open(context.Background(), w.home, station.Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// install installs the probe as stripeMod with the given allowlist.
func (w *world) install(t *testing.T, st *station.Station, allow ...string) {
	t.Helper()
	dir := t.TempDir()
	m := fmt.Sprintf("id: %s\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: %s\nrequires:\n  network:\n    allow: [%s]\n", stripeMod, probe.Command, strings.Join(allow, ", "))
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
}

// TestRunThroughDaemon: a call through the API gives what the same call in
// process gives — the output, or the same typed error (so the CLI maps it
// to the same exit code) — and the trace reaches the audit log.
func TestRunThroughDaemon(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	out, err := w.client.Run(ctx, stripeMod, probe.Command, probe.Run(probe.HTTP("GET", "https://api.stripe.com/")), "daemon/test/1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := probe.Decode(out)
	if err != nil || len(res) != 1 || res[0].Body != "hello from stripe" {
		t.Fatalf("result %+v, %v: want the fixture's answer", res, err)
	}

	// A denial, then the command fails: the same *host.CallError, violation inside.
	failing := probe.Run(probe.HTTP("GET", "https://evil.example/"), probe.Panic("gave up"))
	_, err = w.client.Run(ctx, stripeMod, probe.Command, failing, "")
	_, inproc := w.st.Run(ctx, stripeMod, probe.Command, failing)
	var ce *host.CallError
	var v *sandbox.Violation
	if !errors.As(err, &ce) || !errors.As(err, &v) {
		t.Fatalf("daemon error %T %v: want a *host.CallError wrapping a *sandbox.Violation", err, err)
	}
	if inproc == nil || err.Error() != inproc.Error() {
		t.Errorf("daemon error %q, in-process error %q: want the same", err, inproc)
	}
	if v.Module != stripeMod || v.Capability != sandbox.Network || v.Target != "evil.example:443" {
		t.Errorf("violation %+v", v)
	}

	// A result over the limit: the same *host.CallError, the limit inside.
	_, err = w.client.Run(ctx, stripeMod, probe.Command, probe.Run(probe.Output(17<<20)), "")
	if !errors.As(err, &ce) || ce.Limit == nil || ce.Limit.Module != stripeMod || ce.Limit.Limit != 16<<20 || ce.Limit.Capability != sandbox.Host {
		t.Errorf("daemon error %v (limit %+v): want a *host.CallError with the limit of 16 MiB", err, ce.Limit)
	}

	// Unknown module and command.
	if _, err := w.client.Run(ctx, "nobody/none", "x", nil, ""); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("unknown module: %v", err)
	}
	if _, err := w.client.Run(ctx, stripeMod, "nope", nil, ""); !errors.As(err, &ce) || ce.Kind != host.KindUnknown {
		t.Errorf("unknown command: %v, want kind unknown", err)
	}

	recs, err := w.client.Audit(ctx, store.AuditFilter{Trace: "daemon/test/1"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("traced audit: %v, %v", recs, err)
	}
	for _, r := range recs {
		if r.Module != stripeMod || !r.Allowed {
			t.Errorf("traced record %+v", r)
		}
	}
	ms, err := w.client.Modules(ctx)
	if err != nil || len(ms) != 1 || ms[0].ID != stripeMod || !ms[0].Loaded || len(ms[0].Permissions.Network) != 1 {
		t.Errorf("modules %+v, %v", ms, err)
	}
}

// TestAuditThroughDaemonFolds: GET /v1/audit flushes the rate limit's
// counts and carries them in the folded field: a call that floods denials
// past the one-by-one allowance reads back as that allowance of records
// and summary rows whose folded counts make up the rest.
func TestAuditThroughDaemonFolds(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const flood = audit.RecordsPerWindow + 50
	actions := make([]probe.Action, flood)
	for i := range actions {
		actions[i] = probe.HTTP("GET", "https://evil.example/")
	}
	if _, err := w.client.Run(ctx, stripeMod, probe.Command, probe.Run(probe.Seq(actions...)), "daemon/flood"); err != nil {
		t.Fatal(err)
	}
	recs, err := w.client.Audit(ctx, store.AuditFilter{Trace: "daemon/flood", DeniedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	single, folded := 0, 0
	for _, r := range recs {
		if r.Folded > 0 {
			folded += r.Folded
		} else {
			single++
		}
	}
	if single != audit.RecordsPerWindow || single+folded != flood {
		t.Errorf("through the daemon: %d records one by one and %d folded, want %d and %d in all", single, folded, audit.RecordsPerWindow, flood)
	}
}

// TestAdmission: only the station's own user, through the token, drives the
// daemon; a web page (Origin, Sec-Fetch-Site) and a rebinding name (Host)
// are refused even with the token, and nothing runs.
func TestAdmission(t *testing.T) {
	w := newWorld(t)
	body := `{"module":"` + stripeMod + `","command":"run","input":` + string(probe.Run(probe.HTTP("GET", "https://api.stripe.com/"))) + `}`
	cases := []struct {
		name   string
		host   string
		hdr    map[string]string
		status int
	}{
		{"no token", "", nil, 401},
		{"wrong token", "", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"token without scheme", "", map[string]string{"Authorization": w.srv.Token()}, 401},
		{"web page", "", map[string]string{"Authorization": "Bearer " + w.srv.Token(), "Origin": "https://evil.example"}, 403},
		{"null origin", "", map[string]string{"Authorization": "Bearer " + w.srv.Token(), "Origin": "null"}, 403},
		{"fetch metadata", "", map[string]string{"Authorization": "Bearer " + w.srv.Token(), "Sec-Fetch-Site": "cross-site"}, 403},
		{"rebinding", "evil.example:" + strings.Split(w.addr, ":")[1], map[string]string{"Authorization": "Bearer " + w.srv.Token()}, 403},
		{"other port", "127.0.0.1:1", map[string]string{"Authorization": "Bearer " + w.srv.Token()}, 403},
		{"control", "", map[string]string{"Authorization": "Bearer " + w.srv.Token()}, 200},
		{"control localhost", "localhost:" + strings.Split(w.addr, ":")[1], map[string]string{"Authorization": "Bearer " + w.srv.Token()}, 200},
	}
	for _, c := range cases {
		before := w.stripe.Requests()
		req, _ := http.NewRequest("POST", "http://"+w.addr+"/v1/run", strings.NewReader(body))
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.name, resp.StatusCode, b, c.status)
		}
		if ran := w.stripe.Requests() != before; ran != (c.status == 200) {
			t.Errorf("%s: the module ran = %v", c.name, ran)
		}
		if resp.StatusCode != 200 && (resp.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(string(b), `"error"`)) {
			t.Errorf("%s: answer %q headers %v", c.name, b, resp.Header)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%s) succeeded: want only loopback addresses", addr)
		}
	}
}

// TestBadRequests: malformed and oversized bodies are refused with a clear
// error and run nothing.
func TestBadRequests(t *testing.T) {
	w := newWorld(t)
	big := `{"module":"` + stripeMod + `","command":"run","input":"` + strings.Repeat("A", MaxRequestBytes) + `"}`
	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{`{`, 400, CodeBadRequest},
		{`{"module":"a/b"}`, 400, CodeBadRequest},
		{`{"module":"a/b","command":"c","extra":1}`, 400, CodeBadRequest},
		{`{"module":"a/b","command":"c"} {}`, 400, CodeBadRequest},
		{big, 413, CodeTooLarge},
	} {
		req, _ := http.NewRequest("POST", "http://"+w.addr+"/v1/run", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+w.srv.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb errorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != c.status || eb.Error == nil || eb.Error.Code != c.code {
			t.Errorf("body %.40q: status %d %+v, want %d %s", c.body, resp.StatusCode, eb.Error, c.status, c.code)
		}
	}
	if n := w.stripe.Requests(); n != 0 {
		t.Errorf("the fixture served %d requests", n)
	}
}

// TestStateFile: the token is readable only by the station's user, and a
// daemon that is gone is not mistaken for a running one.
func TestStateFile(t *testing.T) {
	w := newWorld(t)
	path := filepath.Join(w.home, StateFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	st, err := readState(path)
	if err != nil || st.Token != w.srv.Token() || st.Addr != w.addr || st.PID != os.Getpid() {
		t.Errorf("state %+v, %v", st, err)
	}

	stale := t.TempDir()
	if err := writeState(filepath.Join(stale, StateFile), State{Addr: "127.0.0.1:1", Token: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), stale); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Dial with a stale state file: %v, want ErrNotRunning", err)
	}
	if _, err := Dial(context.Background(), t.TempDir()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Dial without a state file: %v, want ErrNotRunning", err)
	}
}

// TestDialRefusesAnImpostor: after a daemon died without removing its
// state file (a crash, a reboot), another local user may listen on the
// address it names. The client must not take that listener for the daemon
// — it would send it every run's input and workflow, and show its answers —
// because it cannot prove it knows the token (and could not echo the
// instance id only the state file holds): it is sent the identity challenge
// and nothing else. TestTheTokenGoesOnlyToTheDaemon tries harder impostors.
func TestDialRefusesAnImpostor(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	impostor := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"api_version":1,"version":"test","pid":4242,"output":{}}`)
	}))
	defer impostor.Close()
	home := t.TempDir()
	st := State{Addr: impostor.Listener.Addr().String(), Token: "dead-daemon-token", PID: 4242, Instance: "the-dead-daemons-instance"}
	if err := writeState(filepath.Join(home, StateFile), st); err != nil {
		t.Fatal(err)
	}
	c, err := Dial(context.Background(), home)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Dial to an impostor on the state file's address: %v, want ErrNotRunning", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if p != "GET "+IdentityPath {
			t.Errorf("the impostor was sent %s", p)
		}
	}
}

// TestReloadAppliesAnotherProcessesInstall: a module reinstalled with fewer
// permissions by another process (the CLI) is refused the dropped host in
// the daemon once the daemon is told to reload it.
func TestReloadAppliesAnotherProcessesInstall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	get := probe.Run(probe.HTTP("GET", "https://api.stripe.com/"), probe.Panic("no answer"))
	if _, err := w.client.Run(ctx, stripeMod, probe.Command, get, ""); err == nil || errors.As(err, new(*sandbox.Violation)) {
		t.Fatalf("before the reinstall: %v, want only the panic", err)
	}
	other := w.open(t) // the CLI, in its own process
	w.install(t, other, "api.groq.com")
	if err := w.client.Reload(ctx, stripeMod); err != nil {
		t.Fatal(err)
	}
	_, err := w.client.Run(ctx, stripeMod, probe.Command, get, "")
	var v *sandbox.Violation
	if !errors.As(err, &v) || v.Target != "api.stripe.com:443" {
		t.Fatalf("after the reinstall: %v, want api.stripe.com denied", err)
	}
}

// TestOpenAPIDescribesEveryAuditField keeps docs/openapi.yaml's Decision,
// what GET /v1/audit answers, true to store.AuditRecord's JSON: every field
// described, and nothing else.
func TestOpenAPIDescribesEveryAuditField(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	b, err := json.Marshal(store.AuditRecord{Decision: sandbox.Decision{Command: "c", Reason: "r", Trace: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	described := doc.Components.Schemas["Decision"].Properties
	for f := range fields {
		if _, ok := described[f]; !ok {
			t.Errorf("audit record field %q is not in docs/openapi.yaml's Decision", f)
		}
	}
	for f := range described {
		if _, ok := fields[f]; !ok {
			t.Errorf("docs/openapi.yaml's Decision describes %q, which an audit record does not have", f)
		}
	}
}

// TestOpenAPIListsEveryRoute keeps docs/openapi.yaml true: every route the
// server registers is described, and nothing else.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			if m != "parameters" {
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	for _, e := range (&Server{}).endpoints() {
		if !documented[e.pattern] {
			t.Errorf("route %s is not in docs/openapi.yaml", e.pattern)
		}
		delete(documented, e.pattern)
	}
	for r := range documented {
		t.Errorf("docs/openapi.yaml describes %s, which the server does not serve", r)
	}
}

// TestStopIsNotHeldByASilentConnection: a client that has connected but
// sent nothing yet (an MCP client reconnecting its event stream as the
// daemon stops) held Shutdown for net/http's five seconds — longer than
// the grace, so the stop failed. The stop closes such connections.
func TestStopIsNotHeldByASilentConnection(t *testing.T) {
	w := &world{home: t.TempDir()}
	w.st = w.open(t)
	srv, err := New(Options{Station: w.st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 2*time.Second) }()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(w.home, StateFile))
		return err == nil
	}, "the state file")
	time.Sleep(100 * time.Millisecond) // the server has accepted it (StateNew)
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve with a silent connection open: %v (after %s)", err, time.Since(start))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the stop took %s with a silent connection open", took)
	}
	silent.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Error("the silent connection is still open")
	}
}
