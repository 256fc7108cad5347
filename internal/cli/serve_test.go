package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
)

// lockedBuffer is a bytes.Buffer safe to read while the daemon writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeAndRunThroughIt: with `station serve` running, `station run` goes
// through the daemon with the same output and exit codes as in process
// (3 for a denial), a removal reaches the daemon at once, and --no-daemon
// still runs in process.
func TestServeAndRunThroughIt(t *testing.T) {
	home := t.TempDir()
	ca := fixture.NewCA(t)
	stripe := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"in_1","status":"draft","amount_due":100,"currency":"eur"}`)
	}), "api.stripe.com")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n", stripe.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	station(t, home, "", "module", "install", "--yes", moduleDir(t, "stripe-invoicing")).want(t, 0)
	station(t, home, "sk_test_1", "secret", "set", "STRIPE_KEY", "--module", "dave/stripe-invoicing").want(t, 0)

	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--home", home}, cli.IO{Cache: testCache, In: strings.NewReader(""), Out: &out, Err: &out})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not start:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := daemon.Dial(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	r := station(t, home, "", "run", "dave/stripe-invoicing", "create-invoice", "--input", `{"customer":"cus_1"}`).want(t, 0)
	if !strings.Contains(r.out, `"id": "in_1"`) {
		t.Errorf("create-invoice output: %s", r.out)
	}
	if h, err := c.Health(ctx); err != nil || len(h.Loaded) != 1 {
		t.Errorf("the daemon did not run the call: health %+v, %v", h, err)
	}
	r = station(t, home, "", "run", "dave/stripe-invoicing", "fetch", "--input", `{"url":"https://evil.example/"}`).want(t, cli.ExitViolation)
	if want := `station: sandbox violation: module dave/stripe-invoicing: network: "evil.example:443" is not in its allowlist`; !strings.HasPrefix(strings.TrimSpace(r.err), want) {
		t.Errorf("denial through the daemon:\n got %s\nwant %s", r.err, want)
	}
	station(t, home, "", "run", "--no-daemon", "dave/stripe-invoicing", "create-invoice", "--input", `{"customer":"cus_1"}`).want(t, 0)

	station(t, home, "", "module", "remove", "--yes", "dave/stripe-invoicing").want(t, 0)
	if h, err := c.Health(ctx); err != nil || len(h.Loaded) != 0 {
		t.Errorf("the daemon still holds the removed module: %+v, %v", h, err)
	}
	r = station(t, home, "", "run", "dave/stripe-invoicing", "create-invoice").want(t, cli.ExitError)
	if !strings.Contains(r.err, "not installed") {
		t.Errorf("run after remove: %s", r.err)
	}

	// A second daemon on the same home is refused.
	station(t, home, "", "serve", "--addr", "127.0.0.1:0").want(t, cli.ExitError)

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d:\n%s", code, out.String())
	}
	if _, err := os.Stat(filepath.Join(home, daemon.StateFile)); !os.IsNotExist(err) {
		t.Errorf("the state file outlived the daemon: %v", err)
	}
}

// TestWorkflowThroughDaemon: with a daemon running, `workflow run` runs in
// it — the modules end up warm there — with the same progress, output and
// exit codes (3 for a step's violation, with station run's message) as in
// process, and `workflow resume` goes through it too.
func TestWorkflowThroughDaemon(t *testing.T) {
	h := newWFHome(t)
	env := map[string]string{}
	for k, v := range h.env {
		if k != "STATION_NO_DAEMON" {
			env[k] = v
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, cli.IO{Cache: testCache, In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not start:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := daemon.Dial(ctx, env["STATION_HOME"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	file := h.file(t, "invoice.yaml", invoiceWorkflow)
	r := stationEnv(t, env, "workflow", "run", file, "--input", "customer=cus_42", "--input", "key=sk_test_1").want(t, 0)
	if !strings.Contains(r.out, `"invoice": "in_1"`) || !strings.Contains(r.out, `"note": "echo: Invoice in_1 is draft"`) {
		t.Errorf("output through the daemon:\n%s", r.out)
	}
	for _, want := range []string{"run 1: workflow invoice (3 steps)", "started   invoice (dave/stripe-invoicing create-invoice)", "ok        note in", "run 1 succeeded in"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("progress through the daemon does not contain %q:\n%s", want, r.err)
		}
	}
	if hl, err := c.Health(ctx); err != nil || len(hl.Loaded) != 2 {
		t.Errorf("the daemon did not run the steps: %+v, %v", hl, err)
	}

	steal := h.file(t, "steal.yaml", "steps:\n  - id: steal\n    uses: dave/stripe-invoicing fetch\n    with: {url: \"https://evil.example/steal\"}\n")
	r = stationEnv(t, env, "workflow", "run", steal).want(t, cli.ExitViolation)
	direct := stationEnv(t, env, "run", "dave/stripe-invoicing", "fetch", "--input", `{"url":"https://evil.example/steal"}`).want(t, cli.ExitViolation)
	want := strings.TrimPrefix(strings.TrimSpace(direct.err), "station: ")
	if !strings.Contains(r.err, "station: workflow steal: step steal: "+want) {
		t.Errorf("workflow error through the daemon:\n%s\nwant it to end with:\n%s", r.err, want)
	}
	r = stationEnv(t, env, "workflow", "resume", "2").want(t, cli.ExitViolation)
	if !strings.Contains(r.err, "started   steal (dave/stripe-invoicing fetch, attempt 2)") {
		t.Errorf("resume through the daemon:\n%s", r.err)
	}
	if h.evil.Accepted() != 0 {
		t.Errorf("evil.example accepted %d connections", h.evil.Accepted())
	}
}
