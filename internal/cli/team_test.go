package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/store"
)

// serve runs `station serve` on home for the rest of the test and returns
// a client of it and its output.
func serve(t *testing.T, home string) (*daemon.Client, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--home", home}, cli.IO{Cache: testCache, In: strings.NewReader(""), Out: &out, Err: &out})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve %s exited %d:\n%s", home, code, out.String())
		}
	})
	// The state file is written just after "listening on" is printed.
	var c *daemon.Client
	fixture.Eventually(t, 20*time.Second, func() bool {
		var err error
		c, err = daemon.Dial(ctx, home)
		return err == nil
	})
	t.Cleanup(func() { c.Close() })
	return c, &out
}

// relayConnected waits until the daemon of home is connected to the hub's
// relay (its station.log says so).
func relayConnected(t *testing.T, home string) {
	t.Helper()
	fixture.Eventually(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(home, "station.log"))
		return strings.Contains(string(b), "hub relay connected")
	})
}

// TestTeamSyncWhileAGatedModuleRuns is the old failure, end to end: with
// dave/stripe-invoicing (allow: api.stripe.com, api.groq.com) installed
// from the hub and called continuously — in a daemon following the hub's
// relay and in the test's own process — `station team create` and `station
// team sync` against the hub on 127.0.0.1 succeed, while the module asked
// to fetch the hub's own URL is refused with a sandbox violation and the
// hub never sees its request.
func TestTeamSyncWhileAGatedModuleRuns(t *testing.T) {
	h, hubLog := startHub(t)
	tr := &transcript{}
	home := t.TempDir()
	ca := fixture.NewCA(t)
	stripe := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"in_1","status":"draft","amount_due":100,"currency":"eur"}`)
	}), "api.stripe.com")
	groq := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"message":{"content":"a summary"}}]}`)
	}), "api.groq.com")
	// The operator lets module egress reach loopback (the fixtures): the
	// hub on 127.0.0.1 is then refused by the module's allowlist alone.
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\", \"api.groq.com:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		stripe.Addr, groq.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)

	token := h.Account(t, "dave")
	login(t, tr, h, home, token)
	tr.add(station(t, home, "", "hub", "key", "create")).want(t, 0)
	tr.add(station(t, home, "", "module", "publish", moduleDir(t, "stripe-invoicing"))).want(t, 0)
	tr.add(station(t, home, "", "module", "install", "--yes", "dave/stripe-invoicing@1.4.0")).want(t, 0)
	station(t, home, "sk_test_1", "secret", "set", "STRIPE_KEY").want(t, 0) // the station's value, for every module that declares it
	station(t, home, "gsk_1", "secret", "set", "GROQ_KEY").want(t, 0)
	c, _ := serve(t, home)
	relayConnected(t, home)

	// Callers: through the daemon (the process that also follows the
	// relay) and in this process (where the CLI's hub client runs too).
	ctx, stop := context.WithCancel(context.Background())
	var calls atomic.Int64
	var wg sync.WaitGroup
	var failMu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			out, err := c.Run(ctx, "dave/stripe-invoicing", "create-invoice", []byte(`{"customer":"cus_1"}`), "")
			if ctx.Err() != nil {
				return
			}
			if err != nil || !strings.Contains(string(out), `"in_1"`) {
				fail("daemon call: %s, %v", out, err)
				return
			}
			calls.Add(1)
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			r := station(t, home, "", "run", "--no-daemon", "dave/stripe-invoicing", "summarize", "--input", `{"text":"invoice text"}`)
			if r.code != 0 || !strings.Contains(r.out, "a summary") {
				fail("in-process call: exit %d\n%s%s", r.code, r.out, r.err)
				return
			}
			calls.Add(1)
		}
	})
	fixture.Eventually(t, 30*time.Second, func() bool { return calls.Load() >= 2 })

	r := tr.add(station(t, home, "", "team", "create", "acme", "--from-installed")).want(t, 0)
	if !strings.Contains(r.out, "pushed lockfile revision 1: dave/stripe-invoicing@1.4.0") {
		t.Errorf("team create: %s", r.out)
	}
	r = tr.add(station(t, home, "", "team", "sync")).want(t, 0)
	if !strings.Contains(r.out, "team acme: lockfile revision 1") || !strings.Contains(r.out, "up to date dave/stripe-invoicing") {
		t.Errorf("team sync: %s", r.out)
	}
	tr.add(station(t, home, "", "team", "status")).want(t, 0)
	before := calls.Load()
	fixture.Eventually(t, 30*time.Second, func() bool { return calls.Load() >= before+2 })
	stop()
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("module calls failed while the team commands ran:\n%s", strings.Join(failures, "\n"))
	}
	t.Logf("%d module calls succeeded around team create and team sync", calls.Load())

	// The module may not reach the hub — not through the daemon, not in
	// process — and the hub never sees it try.
	probe := h.URL + "/v1/modules/sneaky/probe"
	for _, args := range [][]string{
		{"run", "dave/stripe-invoicing", "fetch", "--input", `{"url":"` + probe + `"}`},
		{"run", "--no-daemon", "dave/stripe-invoicing", "fetch", "--input", `{"url":"` + probe + `"}`},
	} {
		r := tr.add(station(t, home, "", args...)).want(t, cli.ExitViolation)
		want := fmt.Sprintf(`station: sandbox violation: module dave/stripe-invoicing: network: %q is not in its allowlist (api.stripe.com, api.groq.com)`, h.URL)
		if got := strings.TrimSpace(r.err); !strings.HasPrefix(got, want) {
			t.Errorf("%v:\n got %s\nwant %s", args, got, want)
		}
	}
	if strings.Contains(hubLog.String(), "sneaky") {
		t.Errorf("the hub saw the module's request:\n%s", hubLog.String())
	}
	// After all that, the station's own hub client still works.
	tr.add(station(t, home, "", "team", "sync")).want(t, 0)
	noSecrets(t, tr, hubLog, []string{home}, token)
}

// TestTeamRelayBetweenTwoStations: two stations of one team, both
// daemons following the relay. A push by the owner's station is installed
// by the member's daemon within a second on loopback; an escalating push
// is recorded as pending there while the approved version keeps running,
// `station team status` shows the difference, and `station team sync
// --yes` applies it.
func TestTeamRelayBetweenTwoStations(t *testing.T) {
	h, hubLog := startHub(t)
	tr := &transcript{}
	homeA, homeB := t.TempDir(), t.TempDir()
	alice, bob := h.Account(t, "alice"), h.Account(t, "bob")
	login(t, tr, h, homeA, alice)
	login(t, tr, h, homeB, bob)
	tr.add(station(t, homeA, "", "hub", "key", "create")).want(t, 0)
	tr.add(station(t, homeA, "", "module", "publish", moduleAs(t, "hello", "alice/hello", "1.0.0"))).want(t, 0)
	tr.add(station(t, homeA, "", "module", "install", "--yes", "alice/hello@1.0.0")).want(t, 0)
	tr.add(station(t, homeA, "", "team", "create", "acme")).want(t, 0)
	// The invite code is printed once, on stdout, by design; nowhere else.
	code := strings.TrimSpace(station(t, homeA, "", "team", "invite", "acme", "--account", "bob").want(t, 0).out)
	r := tr.add(station(t, homeB, code+"\n", "team", "join", "-")).want(t, 0)
	if !strings.Contains(r.out, "joined team acme as member") {
		t.Errorf("team join: %s", r.out)
	}

	// B has compiled this binary before (as a station that ran any module
	// with these bytes has): the bound below then measures the relay, the
	// download and the checks, not wazero compiling 2 MiB of Go cold
	// (about a second on a loaded 2-core machine; see the report).
	tr.add(station(t, homeB, "", "module", "install", "--yes", moduleAs(t, "hello", "bob/warm-up", "1.0.0"))).want(t, 0)
	tr.add(station(t, homeB, "", "module", "remove", "--yes", "bob/warm-up")).want(t, 0)

	_, _ = serve(t, homeA)
	cb, outB := serve(t, homeB)
	relayConnected(t, homeA)
	relayConnected(t, homeB)

	installedB := func() map[string]daemon.Module {
		t.Helper()
		ms, err := cb.Modules(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]daemon.Module{}
		for _, m := range ms {
			out[m.ID] = m
		}
		return out
	}

	// A pushes hello 1.0.0: B's daemon installs it through the relay.
	bound := time.Second
	if raceDetector {
		bound = 15 * time.Second // the race detector slows the install several times over
	}
	tr.add(station(t, homeA, "", "team", "push", "acme", "alice/hello")).want(t, 0)
	pushed := time.Now()
	var latency time.Duration
	for {
		if m, ok := installedB()["alice/hello"]; ok && m.Version == "1.0.0" {
			latency = time.Since(pushed)
			break
		}
		if time.Since(pushed) > bound {
			b, _ := os.ReadFile(filepath.Join(homeB, "station.log"))
			t.Fatalf("B did not install alice/hello 1.0.0 within %s of the push returning; daemon output:\n%s\nstation.log:\n%s", bound, outB.String(), b)
		}
		time.Sleep(2 * time.Millisecond) // a bounded poll: the bound is the assertion
	}
	t.Logf("relay: B installed alice/hello 1.0.0 %s after A's push returned", latency)
	greet := func() {
		t.Helper()
		out, err := cb.Run(context.Background(), "alice/hello", "greet", []byte(`{"name":"Bob"}`), "")
		if err != nil || !strings.Contains(string(out), "Hello, Bob!") {
			t.Errorf("greet on B: %s, %v", out, err)
		}
	}
	greet()

	// A publishes 1.1.0, which may connect to api.stripe.com, approves it
	// on its own station and pushes it.
	tr.add(station(t, homeA, "", "module", "publish", moduleAs(t, "hello", "alice/hello", "1.1.0", "api.stripe.com"))).want(t, 0)
	tr.add(station(t, homeA, "", "module", "upgrade", "--yes", "alice/hello")).want(t, 0)
	tr.add(station(t, homeA, "", "team", "push", "acme")).want(t, 0)
	// The owner's station is at the revision it pushed (it used to show
	// the revision of its last sync).
	if r := tr.add(station(t, homeA, "", "team", "status", "acme")).want(t, 0); !strings.Contains(r.out, "team acme (owner)") || !strings.Contains(r.out, "lockfile revision 2 applied") {
		t.Errorf("team status on A after its push:\n%s", r.out)
	}

	st, err := store.Open(filepath.Join(homeB, "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fixture.Eventually(t, 20*time.Second, func() bool {
		ps, _ := st.HubPendings(context.Background(), "acme")
		return len(ps) == 1
	})
	ps, _ := st.HubPendings(context.Background(), "acme")
	if p := ps[0]; p.Module != "alice/hello" || p.Version != "1.1.0" || p.FromVersion != "1.0.0" || strings.Join(p.Escalations, "; ") != "may now connect to api.stripe.com" {
		t.Errorf("pending on B = %+v", p)
	}
	// B keeps running 1.0.0 with what was approved for it.
	m := installedB()["alice/hello"]
	if m.Version != "1.0.0" || len(m.Permissions.Network) != 0 {
		t.Errorf("B runs %s with network %v; want 1.0.0 with none", m.Version, m.Permissions.Network)
	}
	greet()
	// B's daemon said what it did, one line each: nothing of the relay
	// replaying B's join, whose revision 0 B applied when it joined, and
	// the escalation once (the relay's log lines are station.log's).
	if out := outB.String(); strings.Contains(out, "revision 0") || strings.Count(out, "alice/hello") != 2 {
		t.Errorf("B's daemon reports the replay of a revision it had applied, or a change twice:\n%s", out)
	}
	for _, want := range []string{"following the hub relay at " + h.URL + " as bob", "team acme: applied lockfile revision 1 from the hub (installed alice/hello@1.0.0)",
		"team acme: alice/hello@1.1.0 waits for your approval (revision 2; 1.0.0 keeps running): it may now connect to api.stripe.com"} {
		if !strings.Contains(outB.String(), want) {
			t.Errorf("B's daemon output does not say %q:\n%s", want, outB.String())
		}
	}
	r = tr.add(station(t, homeB, "", "team", "status")).want(t, 0)
	for _, want := range []string{"team acme (member)", "PENDING alice/hello@1.1.0 (revision 2; 1.0.0 keeps running)", "+ may now connect to api.stripe.com", "station team sync acme"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("team status on B does not contain %q:\n%s", want, r.out)
		}
	}
	// Without a terminal or --yes, sync leaves it pending (exit 5).
	r = tr.add(station(t, homeB, "", "team", "sync")).want(t, cli.ExitDeclined)
	if !strings.Contains(r.out, "PENDING alice/hello@1.1.0") || installedB()["alice/hello"].Version != "1.0.0" {
		t.Errorf("team sync without approval:\n%s%s", r.out, r.err)
	}

	r = tr.add(station(t, homeB, "", "team", "sync", "--yes")).want(t, 0)
	if !strings.Contains(r.out, "installed alice/hello@1.1.0") {
		t.Errorf("team sync --yes: %s", r.out)
	}
	m = installedB()["alice/hello"]
	if m.Version != "1.1.0" || strings.Join(m.Permissions.Network, ",") != "api.stripe.com" {
		t.Errorf("after approval B runs %s with network %v", m.Version, m.Permissions.Network)
	}
	greet()
	if ps, _ := st.HubPendings(context.Background(), ""); len(ps) != 0 {
		t.Errorf("pending after approval: %+v", ps)
	}
	var status []map[string]any
	json.Unmarshal([]byte(tr.add(station(t, homeB, "", "team", "status", "--json")).want(t, 0).out), &status)
	if len(status) != 1 || status[0]["revision"] != float64(2) {
		t.Errorf("team status --json: %v", status)
	}
	noSecrets(t, tr, hubLog, []string{homeA, homeB}, alice, bob, code)
}

// TestTeamApproveAndReject: a member's station, without a daemon, refuses
// an escalating team change (station team reject), and later syncs — even
// with --yes — leave it rejected while 1.0.0 keeps running; station team
// status shows it as REJECTED; station team approve then takes it after
// all. Approving a version that is not the pending one says which is.
func TestTeamApproveAndReject(t *testing.T) {
	h, hubLog := startHub(t)
	tr := &transcript{}
	homeA, homeB := t.TempDir(), t.TempDir()
	alice, bob := h.Account(t, "alice"), h.Account(t, "bob")
	login(t, tr, h, homeA, alice)
	login(t, tr, h, homeB, bob)
	tr.add(station(t, homeA, "", "hub", "key", "create")).want(t, 0)
	tr.add(station(t, homeA, "", "module", "publish", moduleAs(t, "hello", "alice/hello", "1.0.0"))).want(t, 0)
	tr.add(station(t, homeA, "", "module", "install", "--yes", "alice/hello@1.0.0")).want(t, 0)
	tr.add(station(t, homeA, "", "team", "create", "acme", "--from-installed")).want(t, 0)
	code := strings.TrimSpace(station(t, homeA, "", "team", "invite", "acme", "--account", "bob").want(t, 0).out)
	tr.add(station(t, homeB, code+"\n", "team", "join", "-")).want(t, 0)
	tr.add(station(t, homeA, "", "module", "publish", moduleAs(t, "hello", "alice/hello", "1.1.0", "api.stripe.com"))).want(t, 0)
	tr.add(station(t, homeA, "", "module", "upgrade", "--yes", "alice/hello")).want(t, 0)
	tr.add(station(t, homeA, "", "team", "push", "acme")).want(t, 0)

	st, err := store.Open(filepath.Join(homeB, "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs := func() string {
		t.Helper()
		m, err := st.Module(context.Background(), "alice/hello")
		if err != nil {
			t.Fatal(err)
		}
		return m.Version
	}
	tr.add(station(t, homeB, "", "team", "sync")).want(t, cli.ExitDeclined)
	r := tr.add(station(t, homeB, "", "team", "status")).want(t, 0)
	for _, want := range []string{"PENDING alice/hello@1.1.0 (revision 2; 1.0.0 keeps running)", "+ may now connect to api.stripe.com",
		"approve: station team approve acme alice/hello, or reject: station team reject acme alice/hello"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("team status does not say %q:\n%s", want, r.out)
		}
	}
	r = tr.add(station(t, homeB, "", "team", "approve", "acme", "alice/hello@1.0.5")).want(t, 1)
	if !strings.Contains(r.err, "no change to alice/hello@1.0.5 is pending in team acme on this station (the pending change of alice/hello is to 1.1.0)") {
		t.Errorf("approve of another version: %s", r.err)
	}

	r = tr.add(station(t, homeB, "", "team", "reject", "acme", "alice/hello")).want(t, 0)
	if !strings.HasPrefix(r.out, "rejected alice/hello@1.1.0 of team acme; 1.0.0 keeps running") {
		t.Errorf("team reject: %s", r.out)
	}
	r = tr.add(station(t, homeB, "", "team", "status")).want(t, 0)
	if want := "REJECTED alice/hello@1.1.0 (revision 2; 1.0.0 keeps running): station team approve acme alice/hello to take it after all"; !strings.Contains(r.out, want) || strings.Contains(r.out, "PENDING") {
		t.Errorf("team status after the rejection does not say %q:\n%s", want, r.out)
	}
	var status []struct {
		Pending []map[string]any
	}
	json.Unmarshal([]byte(tr.add(station(t, homeB, "", "team", "status", "--json")).want(t, 0).out), &status)
	if len(status) != 1 || len(status[0].Pending) != 1 || status[0].Pending[0]["rejected_at"] == nil {
		t.Errorf("team status --json after the rejection: %+v", status)
	}
	// A sync, even with --yes, leaves it rejected: exit 0, nothing asked.
	r = tr.add(station(t, homeB, "", "team", "sync", "--yes")).want(t, 0)
	if !strings.Contains(r.out, "REJECTED alice/hello@1.1.0 stays rejected") || strings.Contains(r.out, "installed alice/hello") || runs() != "1.0.0" {
		t.Errorf("team sync --yes after the rejection (runs %s):\n%s%s", runs(), r.out, r.err)
	}

	r = tr.add(station(t, homeB, "", "team", "approve", "acme", "alice/hello", "--json")).want(t, 0)
	var approved struct {
		Approved bool
		Version  string
		Asks     []string
	}
	if err := json.Unmarshal([]byte(r.out), &approved); err != nil || !approved.Approved || approved.Version != "1.1.0" || strings.Join(approved.Asks, "; ") != "may now connect to api.stripe.com" {
		t.Errorf("team approve --json: %s (%v)", r.out, err)
	}
	if v := runs(); v != "1.1.0" {
		t.Errorf("after the approval B runs %s, want 1.1.0", v)
	}
	if ps, _ := st.HubPendings(context.Background(), ""); len(ps) != 0 {
		t.Errorf("pending after the approval: %+v", ps)
	}
	noSecrets(t, tr, hubLog, []string{homeA, homeB}, alice, bob, code)
}
