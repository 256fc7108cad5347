package moduletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/wasmbuild"
)

// exampleDir copies the example module (its manifest and its built wasm)
// into a temporary directory, with files added.
func exampleDir(t *testing.T, example string, files map[string]string) string {
	t.Helper()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	man, err := os.ReadFile(filepath.Join(root, example, "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return moduleDir(t, string(man), wasmbuild.ForTest(t, example), files)
}

// probeDir is a module directory of the probe under a manifest that
// allows allow, with the YAML lines limits under limits:.
func probeDir(t *testing.T, allow []string, limits string, files map[string]string) string {
	t.Helper()
	q := make([]string, len(allow))
	for i, a := range allow {
		q[i] = fmt.Sprintf("%q", a)
	}
	man := fmt.Sprintf("id: test/probe\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: %s\nrequires:\n  network:\n    allow: [%s]\n  subprocess: false\n  filesystem_writes: []\n",
		probe.Command, strings.Join(q, ", "))
	if limits != "" {
		man += "limits:\n  " + strings.ReplaceAll(limits, "\n", "\n  ") + "\n"
	}
	return moduleDir(t, man, probe.Wasm(t), files)
}

func moduleDir(t *testing.T, manifest string, wasm []byte, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "module.yaml", manifest)
	write(t, dir, "module.wasm", string(wasm))
	for name, body := range files {
		write(t, dir, name, body)
	}
	return dir
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// open loads dir and opens its session in a home under a directory of the
// test's, which it checks is empty again once the session is closed.
func open(t *testing.T, req Request) (*Suite, *Session) {
	t.Helper()
	s, err := Load(req)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	sess, err := s.Open(context.Background(), OpenOptions{TempDir: tmp, Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sess.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkEmpty(t, tmp)
	})
	return s, sess
}

func checkEmpty(t *testing.T, dir string) {
	t.Helper()
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("%s still holds %v after the run", dir, left)
	}
}

const invoiceRoutes = `{"routes": [{"method": "POST", "path": "/v1/invoices", "body": {"id": "in_1", "status": "draft", "amount_due": 1200, "currency": "usd"}}]}`

// TestStripeInvoicing runs the example through its allowlist: a fixture
// answers api.stripe.com, the gate denies evil.example, api.groq.com
// (allowed, without a fixture) answers 502, and each call's decisions are
// its own.
func TestStripeInvoicing(t *testing.T) {
	t.Parallel()
	dir := exampleDir(t, "examples/stripe-invoicing", map[string]string{
		"tests.yaml": `fixtures:
  api.stripe.com: testdata/invoice.json
tests:
  - name: creates an invoice
    command: create-invoice
    input: {customer: cus_1}
    want: {id: in_1, status: draft, amount_due: 1200.0, currency: usd}
  - command: fetch
    input: {url: "https://evil.example/"}
    want_error: not in its allowlist
  - command: fetch
    input: {url: "https://api.groq.com/x"}
  - name: wants another invoice
    command: create-invoice
    input: {customer: cus_1}
    want: {id: in_2, status: draft, amount_due: 1200, currency: usd}
  - name: wants a denial it does not get
    command: fetch
    input: {url: "https://api.stripe.com/v1/invoices"}
    want_error: refused
`,
		"testdata/invoice.json": invoiceRoutes,
	})
	s, sess := open(t, Request{Dir: dir})
	if len(sess.Notes) != 3 || !strings.Contains(sess.Notes[0], "api.groq.com is in the allowlist but has no fixture") ||
		sess.Notes[1] != "secret STRIPE_KEY has the test value test-value-of-STRIPE_KEY, sent only to api.stripe.com" || len(sess.Warnings) != 0 {
		t.Errorf("notes %q, warnings %q", sess.Notes, sess.Warnings)
	}
	var rs []*Result
	for _, tc := range s.Tests {
		rs = append(rs, sess.Run(context.Background(), tc))
	}
	ok := []bool{true, true, true, false, false}
	for i, r := range rs {
		if r.OK != ok[i] {
			t.Errorf("%s: ok %v (%s, %v), want %v", r.Name, r.OK, r.Failure, r.Err, ok[i])
		}
	}
	invoice := rs[0]
	if len(invoice.Decisions) != 2 || !invoice.Decisions[0].Allowed || invoice.Decisions[0].Target != "api.stripe.com:443" {
		t.Errorf("create-invoice decisions %+v", invoice.Decisions)
	}
	if len(invoice.Served) != 1 || invoice.Served[0].Path != "/v1/invoices" || invoice.Served[0].Status != 200 || invoice.Served[0].Fixture != "testdata/invoice.json" {
		t.Errorf("create-invoice served %+v", invoice.Served)
	}
	if len(invoice.Logs) != 1 || invoice.Logs[0].Text != "invoice created id=in_1 status=draft" || invoice.Logs[0].Source != "log" {
		t.Errorf("create-invoice logs %+v", invoice.Logs)
	}
	evil := rs[1]
	if len(evil.Decisions) != 1 || evil.Decisions[0].Allowed || evil.Decisions[0].Target != "evil.example:443" ||
		evil.Decisions[0].Reason != "is not in its allowlist (api.stripe.com, api.groq.com)" || len(evil.Served) != 0 {
		t.Errorf("the denial's decisions %+v, served %+v", evil.Decisions, evil.Served)
	}
	groq := rs[2]
	var fetched struct{ Status, Bytes int }
	json.Unmarshal(groq.Output, &fetched)
	if fetched.Status != 502 || fetched.Bytes != len(NoFixtureBody("api.groq.com")) || len(groq.Served) != 1 || groq.Served[0].Fixture != "" {
		t.Errorf("api.groq.com without a fixture: %s, served %+v", groq.Output, groq.Served)
	}
	if f := rs[3].Failure; f != `the result is not the one wanted: at .id: got "in_1", want "in_2"` {
		t.Errorf("a wrong result: %q", f)
	}
	if f := rs[4].Failure; f != `the call returned a result; want an error containing "refused"` {
		t.Errorf("a want_error that does not happen: %q", f)
	}
}

// TestNetworkPlan covers how hosts are mapped: a fixture over https and
// the plain http the allowlist grants for it, a port of its own, a
// wildcard with a fixture below it and without, an IP literal without a
// fixture (502), a fixture the allowlist does not name (a warning).
func TestNetworkPlan(t *testing.T) {
	t.Parallel()
	dir := probeDir(t, []string{"api.example.test", "http://api.example.test", "api.example.test:8443", "*.wild.test", "192.0.2.10"}, "",
		map[string]string{
			"tests.yaml":     "fixtures:\n  api.example.test: hello.txt\n  a.wild.test: hello.txt\n  other.test: hello.txt\ntests:\n  - command: run\n",
			"hello.txt":      "hello from the fixture",
			"ignored.txt":    "",
			"sub/readme.txt": "",
		})
	s, sess := open(t, Request{Dir: dir})
	run := func(actions ...probe.Action) ([]probe.Result, *Result) {
		t.Helper()
		r := sess.Run(context.Background(), Test{Command: probe.Command, Input: probe.Run(actions...)})
		if r.Err != nil {
			t.Fatalf("probe: %v", r.Err)
		}
		res, err := probe.Decode(r.Output)
		if err != nil {
			t.Fatal(err)
		}
		return res, r
	}
	res, r := run(
		probe.HTTP("GET", "https://api.example.test/a"),
		probe.HTTP("GET", "http://api.example.test/b"),
		probe.HTTP("GET", "https://api.example.test:8443/c"),
		probe.HTTP("GET", "https://a.wild.test/d"),
		probe.HTTP("GET", "https://b.wild.test/e"),
		probe.HTTP("GET", "https://192.0.2.10/f"),
		probe.HTTP("GET", "https://other.test/g"),
		probe.Log("a log line"),
		probe.Print("stdout", "an output line"),
	)
	for i, want := range []string{"hello from the fixture", "hello from the fixture", "hello from the fixture", "hello from the fixture"} {
		if res[i].Status != 200 || res[i].Body != want {
			t.Errorf("request %d: %d %q %+v", i, res[i].Status, res[i].Body, res[i].Error)
		}
	}
	if res[4].OK || !strings.Contains(res[4].Error.Message, "no fixture for b.wild.test") {
		t.Errorf("a name under the wildcard without a fixture resolved: %+v", res[4])
	}
	if res[5].Status != 502 || res[5].Body != NoFixtureBody("192.0.2.10") {
		t.Errorf("an IP literal without a fixture: %d %q", res[5].Status, res[5].Body)
	}
	if res[6].OK || res[6].Error.Capability != "network" {
		t.Errorf("a fixture host off the allowlist was reached: %+v", res[6])
	}
	if len(r.Served) != 5 || r.Served[1].Path != "/b" {
		t.Errorf("served %+v", r.Served)
	}
	var logs []string
	for _, l := range r.Logs {
		logs = append(logs, l.Source+": "+l.Text)
	}
	if got := strings.Join(logs, "; "); !strings.Contains(got, "log: a log line") || !strings.Contains(got, "stdout/stderr: an output line") {
		t.Errorf("logs %q", got)
	}
	denied := 0
	for _, d := range r.Decisions {
		if !d.Allowed {
			denied++
			if d.Target != "other.test:443" {
				t.Errorf("denied %+v", d)
			}
		}
	}
	if denied != 1 {
		t.Errorf("%d denials, want 1: %+v", denied, r.Decisions)
	}
	joined := strings.Join(sess.Warnings, "\n") + strings.Join(sess.Notes, "\n")
	for _, want := range []string{"fixture other.test is not in the module's allowlist", "other names under *.wild.test have no fixture", "192.0.2.10 is in the allowlist but has no fixture"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes and warnings lack %q:\n%s", want, joined)
		}
	}
	if len(s.Fixtures) != 3 {
		t.Errorf("fixtures %+v", s.Fixtures)
	}
}

// TestFlagFixtureReplacesTheFile: --fixture for a host tests.yaml names
// too wins, and may name a file outside the directory.
func TestFlagFixtureReplacesTheFile(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "reply.txt")
	os.WriteFile(outside, []byte("from the flag"), 0o644)
	dir := probeDir(t, []string{"api.example.test"}, "", map[string]string{
		"tests.yaml":  "fixtures:\n  api.example.test: broken.json\n",
		"broken.json": "{not json",
	})
	// The ad hoc command needs no tests in tests.yaml, and the flag
	// replaces the broken fixture before it is read.
	s, sess := open(t, Request{Dir: dir, Fixtures: []string{"API.example.test=" + outside}, Command: probe.Command,
		Input: probe.Run(probe.HTTP("GET", "https://api.example.test/"))})
	if len(s.Fixtures) != 1 || s.Fixtures[0].From != "--fixture" {
		t.Fatalf("fixtures %+v", s.Fixtures)
	}
	r := sess.Run(context.Background(), s.Tests[0])
	res, _ := probe.Decode(r.Output)
	if len(res) != 1 || res[0].Body != "from the flag" {
		t.Errorf("got %s (%v)", r.Output, r.Err)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := probeDir(t, nil, "", nil)
	if _, err := Load(Request{Dir: dir}); !errors.Is(err, ErrNoTests) || !strings.Contains(err.Error(), "tests.yaml, for example\n  tests:\n    - command: run\n      input: {}\nor pass --command") {
		t.Errorf("no tests.yaml: %v", err)
	}
	write(t, dir, "tests.yaml", "fixtures: {}\n")
	if _, err := Load(Request{Dir: dir}); !errors.Is(err, ErrNoTests) || !strings.Contains(err.Error(), "has no tests") {
		t.Errorf("tests.yaml without tests: %v", err)
	}
	write(t, dir, "tests.yaml", "tests:\n  - command: rnu\n")
	if _, err := Load(Request{Dir: dir}); err == nil || !strings.Contains(err.Error(), `tests.yaml:2: tests[0].command: unknown command "rnu"; did you mean "run"? of module test/probe`) {
		t.Errorf("an unknown command: %v", err)
	}
	if _, err := Load(Request{Dir: dir, Command: "nope"}); err == nil || !strings.Contains(err.Error(), `--command: module test/probe has no unknown command "nope"`) {
		t.Errorf("an unknown --command: %v", err)
	}
	write(t, dir, "tests.yaml", "fixtures:\n  api.example.test: missing.json\n  b.example.test: bad.json\ntests:\n  - command: run\n")
	write(t, dir, "bad.json", `{"routes": [{"path": "x"}]}`)
	_, err := Load(Request{Dir: dir, Fixtures: []string{"nohost", "https://x.test=f", "c.example.test=" + filepath.Join(dir, "missing")}})
	for _, want := range []string{"--fixture nohost: want HOST=FILE", `--fixture https://x.test=f: "https://x.test" must be a host`, "tests.yaml:2: fixture for api.example.test", "bad.json:1:22: routes[0].path", "fixture for c.example.test"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad fixtures: %v; want it to say %q", err, want)
		}
	}
}

// TestHangingModule: a call that never returns is stopped at the
// module's timeout, and one cut short by the caller's context (Ctrl-C)
// returns at once; Close removes the home either way.
func TestHangingModule(t *testing.T) {
	t.Parallel()
	dir := probeDir(t, nil, "timeout: 1s", nil)
	s, sess := open(t, Request{Dir: dir, Command: probe.Command, Input: probe.Run(probe.Loop())})
	start := time.Now()
	r := sess.Run(context.Background(), s.Tests[0])
	var ce *host.CallError
	if r.OK || !errors.As(r.Err, &ce) || ce.Kind != host.KindTimeout || time.Since(start) > 20*time.Second {
		t.Errorf("a looping call: ok %v, %v after %s", r.OK, r.Err, time.Since(start))
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	r = sess.Run(ctx, Test{Command: probe.Command, Input: probe.Run(probe.Sleep(time.Hour))})
	if r.OK || r.Failure != "interrupted" || time.Since(start) > 10*time.Second {
		t.Errorf("an interrupted call: ok %v, %q, %v after %s", r.OK, r.Failure, r.Err, time.Since(start))
	}
	home := sess.Home
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the throwaway home %s is still there: %v", home, err)
	}
}

// TestOpenFailsCleanly: an install that fails (a wasm that is not one)
// leaves nothing behind.
func TestOpenFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := probeDir(t, []string{"api.example.test"}, "", nil)
	write(t, dir, "module.wasm", "not wasm")
	s, err := Load(Request{Dir: dir, Command: probe.Command})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if _, err := s.Open(context.Background(), OpenOptions{TempDir: tmp, Cache: wasmbuild.CacheForTest()}); err == nil {
		t.Fatal("installed a wasm file that is not one")
	}
	checkEmpty(t, tmp)
	// A context that is done before Open starts fails it the same way.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2, _ := Load(Request{Dir: probeDir(t, nil, "", nil), Command: probe.Command})
	if sess, err := s2.Open(ctx, OpenOptions{TempDir: tmp, Cache: wasmbuild.CacheForTest()}); err == nil {
		sess.Close()
	}
	checkEmpty(t, tmp)
}

func TestConfigYAML(t *testing.T) {
	n, err := startNetwork([]string{"api.example.test", "[2001:db8::1]:8443"}, []*Fixture{{Host: "api.example.test", File: "f"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	got := string(configYAML(n.mappings))
	for _, want := range []string{"extra_ca: fixture-ca.pem", "allow_private: [127.0.0.1/32]", `- "api.example.test:443=127.0.0.1:`, `- "[2001:db8::1]:8443=127.0.0.1:`} {
		if !strings.Contains(got, want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, got)
		}
	}
}
