package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk/abi"
)

// requestLog keeps every request a fixture received, headers and body.
type requestLog struct {
	mu  sync.Mutex
	all bytes.Buffer
}

func (l *requestLog) record(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.all, "%s %s\n", r.Method, r.URL.RequestURI())
	r.Header.Write(&l.all)
	l.all.ReadFrom(r.Body)
	l.all.WriteString("\n")
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// TestSecretOnlyToItsHost is issue 19's must-hold, as a user runs it: a
// module bound to api.stripe.com gets the real key sent there (the fixture
// sees it), a request carrying the placeholder to an allowed but unbound
// host is denied and audited and reaches nothing, and no byte of the value
// is anywhere in STATION_HOME (the database, its WAL, the log, the
// compilation cache) or in anything the CLI printed.
func TestSecretOnlyToItsHost(t *testing.T) {
	const value = "sk_live_9f8e7d6c5b4a_DO_NOT_LEAK"
	home := t.TempDir()
	ca := fixture.NewCA(t)
	var stripeLog, groqLog requestLog
	stripe := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stripeLog.record(r)
		// A server that echoes the credential back, in a header and the body.
		w.Header().Set("X-Seen-Authorization", r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"you_sent":%q}`, r.Header.Get("Authorization"))
	}), "api.stripe.com")
	groq := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		groqLog.record(r)
		fmt.Fprint(w, "ok")
	}), "api.groq.com")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\", \"api.groq.com:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		stripe.Addr, groq.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)

	dir := t.TempDir()
	man := `id: test/secrets
version: "1.0.0"
description: sends what its input says
wasm: module.wasm
commands:
  - name: run
requires:
  network:
    allow: [api.stripe.com, api.groq.com]
  secrets:
    STRIPE_KEY:
      description: a Stripe secret key
      hosts: [api.stripe.com]
`
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(man), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600)

	var printed strings.Builder // everything the CLI printed, both streams
	run := func(stdin string, code int, args ...string) result {
		t.Helper()
		r := station(t, home, stdin, args...)
		printed.WriteString(r.out + r.err)
		return r.want(t, code)
	}

	r := run("", cli.ExitUsage, "module", "install", dir)
	if want := "may have the station send secret STRIPE_KEY, only to api.stripe.com (in headers); the module never sees its value"; !strings.Contains(r.err, want) {
		t.Errorf("the approval does not show the binding %q:\n%s", want, r.err)
	}
	run("", 0, "module", "install", "--yes", dir)

	// Unset: the request needing it fails, saying how to set it, and
	// nothing is sent.
	placeholder := abi.SecretPlaceholder("STRIPE_KEY")
	call := func(code int, a probe.Action) probe.Result {
		t.Helper()
		r := run("", code, "--verbose", "run", "test/secrets", "run", "--input", string(probe.Run(a)))
		if code != 0 {
			return probe.Result{}
		}
		res, err := probe.Decode([]byte(r.out))
		if err != nil || len(res) != 1 {
			t.Fatalf("results %v, %v\n%s", res, err, r.out)
		}
		return res[0]
	}
	res := call(0, probe.HTTP("GET", "https://api.stripe.com/v1/charges").WithHeader("Authorization", "Bearer "+placeholder))
	if res.OK || res.Error == nil || !strings.Contains(res.Error.Message, "station secret set STRIPE_KEY --module test/secrets") {
		t.Fatalf("unset secret: %+v", res)
	}
	if s := stripeLog.String(); s != "" {
		t.Fatalf("a request went out without its secret:\n%s", s)
	}

	// The value comes from standard input, never a flag.
	run("", cli.ExitUsage, "secret", "set", "STRIPE_KEY", "--module", "test/secrets")
	r = run(value+"\n", 0, "secret", "set", "STRIPE_KEY", "--module", "test/secrets")
	if !strings.Contains(r.out, "test/secrets sends it only to api.stripe.com") {
		t.Errorf("secret set does not say where the value goes:\n%s", r.out)
	}
	run("x", 1, "secret", "set", "OTHER", "--module", "test/secrets")        // not declared
	run("x", 1, "secret", "set", "STRIPE_KEY", "--module", "test/not-there") // not installed

	// The bound host receives the value; what it echoes comes back as the
	// placeholder.
	res = call(0, probe.HTTP("GET", "https://api.stripe.com/v1/charges").WithHeader("Authorization", "Bearer "+placeholder))
	if !res.OK || res.Status != 200 {
		t.Fatalf("bound host: %+v", res)
	}
	if s := stripeLog.String(); !strings.Contains(s, "Authorization: Bearer "+value) {
		t.Fatalf("api.stripe.com did not receive the value:\n%s", s)
	}
	if want := `{"you_sent":"Bearer ` + placeholder + `"}`; res.Body != want || fmt.Sprint(res.Headers["X-Seen-Authorization"]) != "[Bearer "+placeholder+"]" {
		t.Errorf("the echo the module reads: body %s headers %v, want %s", res.Body, res.Headers, want)
	}

	// Allowed by the allowlist, not bound: denied, audited, nothing sent.
	res = call(0, probe.HTTP("POST", "https://api.groq.com/v1/steal").WithHeader("X-Key", placeholder))
	if res.OK || res.Error == nil || res.Error.Code != "denied" || !strings.Contains(res.Error.Reason, "bound to api.stripe.com only") {
		t.Fatalf("unbound host: %+v", res.Error)
	}
	if s := groqLog.String(); s != "" {
		t.Fatalf("api.groq.com received:\n%s", s)
	}
	r = run("", 0, "audit", "--denied", "--json")
	if !strings.Contains(r.out, `"target": "api.groq.com:443"`) || !strings.Contains(r.out, "secret STRIPE_KEY") {
		t.Errorf("the denial is not in the audit log:\n%s", r.out)
	}
	// The module may still reach api.groq.com without the secret.
	if res := call(0, probe.HTTP("GET", "https://api.groq.com/")); !res.OK {
		t.Errorf("control: %+v", res)
	}

	r = run("", 0, "secret", "list", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 1 || rows[0]["name"] != "STRIPE_KEY" || rows[0]["set"] != "module" {
		t.Errorf("secret list --json: %v %v\n%s", rows, err, r.out)
	}
	r = run("", 0, "secret", "list")
	if !strings.Contains(r.out, "STRIPE_KEY") || !strings.Contains(r.out, "api.stripe.com") {
		t.Errorf("secret list:\n%s", r.out)
	}
	run("", 0, "module", "show", "test/secrets")
	run("", 0, "audit", "--json")

	// No byte of the value anywhere: every file of the home, and all the
	// CLI printed.
	for _, probeBytes := range []string{value, value[8:24]} {
		if strings.Contains(printed.String(), probeBytes) {
			t.Errorf("the CLI printed the value (%q)", probeBytes)
		}
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(probeBytes)) {
				t.Errorf("%s holds the value (%q)", p, probeBytes)
			}
			return nil
		})
	}

	run("", 0, "secret", "rm", "STRIPE_KEY", "--module", "test/secrets")
	run("", 1, "secret", "rm", "STRIPE_KEY", "--module", "test/secrets")
}
