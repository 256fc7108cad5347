package station_test

// The named regression tests of the failures of the system Station replaces
// (issue 2, "Must hold"). Every server is a fixture on 127.0.0.1; names like
// api.stripe.com reach them through the station's operator configuration.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/stationhttp"
	"github.com/station-dev/station/internal/store"
)

const (
	stripeMod = "test/stripe-only"
	groqMod   = "test/groq-only"
)

// 1. Station-level HTTP to a host in no module's allowlist succeeds while
// gated modules are loaded, and while a gated module call is blocked inside a
// slow request.
func TestStationClientsIgnoreModulePolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	wasm := probe.Wasm(t)
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, wasm)
	e.install(moduleSpec{id: groqMod, allow: []string{"api.groq.com"}}, wasm)

	// The hub/relay and the LLM provider stand-ins: hosts in no module's allowlist.
	relay := fixture.HTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "relay ok") }))
	llm := e.ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"choices":[]}`) }))
	relayClient := stationhttp.NewClient(stationhttp.Options{UserAgent: "station-relay"})
	llmClient := stationhttp.NewClient(stationhttp.Options{UserAgent: "station-llm", RootCAs: e.ca.Pool()})

	// Both gated modules are loaded and have made calls.
	wantOK(t, "stripe module to stripe", e.mustProbe(stripeMod, probe.HTTP("GET", "https://api.stripe.com/"))[0])
	wantDenied(t, "groq module to relay", e.mustProbe(groqMod, probe.HTTP("GET", relay.URL+"/"))[0], groqMod, "")
	for _, u := range []string{relay.URL + "/teams/sync", strings.Replace(relay.URL, "127.0.0.1", "localhost", 1) + "/teams/create"} {
		if err := stationGet(relayClient, u); err != nil {
			t.Fatalf("relay client while gated modules are loaded: %v", err)
		}
	}
	if err := stationGet(llmClient, llm.URL+"/v1/chat/completions"); err != nil {
		t.Fatalf("LLM client while gated modules are loaded: %v", err)
	}

	// Now block a gated module call inside a slow request.
	release := make(chan struct{})
	var entered sync.Once
	inSlow := make(chan struct{})
	e.stripeMux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		entered.Do(func() { close(inSlow) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "slow done")
	})
	done := make(chan []probe.Result, 1)
	go func() {
		res, err := e.probe(stripeMod, probe.HTTP("GET", "https://api.stripe.com/slow"))
		if err != nil {
			t.Errorf("slow call: %v", err)
		}
		done <- res
	}()
	select {
	case <-inSlow:
	case <-time.After(20 * time.Second):
		t.Fatal("the module call never reached the slow handler")
	}
	if err := stationGet(relayClient, relay.URL+"/teams/sync"); err != nil {
		t.Fatalf("relay client while a module call is blocked: %v", err)
	}
	if err := stationGet(llmClient, llm.URL+"/v1/chat/completions"); err != nil {
		t.Fatalf("LLM client while a module call is blocked: %v", err)
	}
	// The other module keeps working too, under its own policy.
	wantOK(t, "groq module during the slow call", e.mustProbe(groqMod, probe.HTTP("GET", "https://api.groq.com/"))[0])
	close(release)
	if res := <-done; res != nil {
		wantOK(t, "the slow call", res[0])
	}
	// The station's requests never appear in the audit log: they are not the modules'.
	for _, r := range e.audit(store.AuditFilter{}) {
		if strings.Contains(r.Target, "localhost") || r.Module == "" {
			t.Errorf("audit record %+v: station-level I/O must not be attributed to a module", r)
		}
	}
}

// 2. A module is refused hosts outside its allowlist (no connection reaches
// the fixture) and reaches the hosts inside it.
func TestModuleRefusedOffListHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	res := e.mustProbe(stripeMod,
		probe.HTTP("GET", "https://api.stripe.com/v1/charges"),
		probe.HTTP("GET", "https://evil.example/"),
		probe.HTTP("GET", "https://api.groq.com/"),
		probe.HTTP("GET", "http://api.stripe.com/"),       // plain http is not granted by a bare host
		probe.HTTP("GET", "https://api.stripe.com:8443/"), // neither is another port
		probe.HTTP("GET", e.evil.URL+"/"),                 // nor an address literal
	)
	wantOK(t, "allowed host", res[0])
	wantDenied(t, "evil.example", res[1], stripeMod, "evil.example:443")
	wantDenied(t, "api.groq.com", res[2], stripeMod, "api.groq.com:443")
	wantDenied(t, "http downgrade", res[3], stripeMod, "api.stripe.com")
	wantDenied(t, "other port", res[4], stripeMod, "api.stripe.com:8443")
	wantDenied(t, "address literal", res[5], stripeMod, "127.0.0.1")
	if got := e.evil.Accepted(); got != 0 {
		t.Errorf("evil.example fixture accepted %d connections, want 0", got)
	}
	if got := e.groq.Accepted(); got != 0 {
		t.Errorf("api.groq.com fixture accepted %d connections, want 0", got)
	}
	if got := e.stripe.Requests(); got != 1 {
		t.Errorf("api.stripe.com fixture served %d requests, want 1", got)
	}
	want := `sandbox violation: module test/stripe-only: network: "evil.example:443" is not in its allowlist (api.stripe.com)`
	if got := res[1].Error.Message; got != want {
		t.Errorf("denial message:\n got %s\nwant %s", got, want)
	}
	denied := e.audit(store.AuditFilter{DeniedOnly: true})
	if len(denied) < 5 {
		t.Fatalf("audit has %d denials, want at least 5: %+v", len(denied), denied)
	}
	for _, r := range denied {
		if r.Module != stripeMod || r.Command != probe.Command || r.Capability != sandbox.Network {
			t.Errorf("denial %+v: want module %s, command %s, capability network", r, stripeMod, probe.Command)
		}
	}
}

// 3. Two gated modules, loaded in either order and called concurrently
// hundreds of times each, are each checked against their own list only; every
// denial names the calling module.
func TestTwoModulesEachOwnAllowlist(t *testing.T) {
	t.Parallel()
	for _, order := range [][]string{{stripeMod, groqMod}, {groqMod, stripeMod}} {
		t.Run(strings.Join(order, "-then-"), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{})
			wasm := probe.Wasm(t)
			allow := map[string]string{stripeMod: "api.stripe.com", groqMod: "api.groq.com"}
			for _, id := range order {
				e.install(moduleSpec{id: id, allow: []string{allow[id]}}, wasm)
			}
			const calls = 200
			var wg sync.WaitGroup
			errs := make(chan error, 2*calls)
			for i := 0; i < calls; i++ {
				for _, id := range order {
					wg.Add(1)
					go func(id string) {
						defer wg.Done()
						res, err := e.probe(id,
							probe.HTTP("GET", "https://api.stripe.com/"),
							probe.HTTP("GET", "https://api.groq.com/"))
						if err != nil {
							errs <- fmt.Errorf("%s: %v", id, err)
							return
						}
						own, other := res[0], res[1]
						if id == groqMod {
							own, other = res[1], res[0]
						}
						if !own.OK || own.Status != 200 {
							errs <- fmt.Errorf("%s: own host refused: %+v", id, own.Error)
						}
						if other.OK || other.Error == nil || other.Error.Code != "denied" ||
							!strings.Contains(other.Error.Message, "module "+id+":") {
							errs <- fmt.Errorf("%s: other module's host: got ok=%v error=%+v, want a denial naming %s", id, other.OK, other.Error, id)
						}
					}(id)
				}
			}
			wg.Wait()
			close(errs)
			n := 0
			for err := range errs {
				if n++; n <= 10 {
					t.Error(err)
				}
			}
			for _, r := range e.audit(store.AuditFilter{DeniedOnly: true}) {
				want := map[string]string{stripeMod: "api.groq.com", groqMod: "api.stripe.com"}[r.Module]
				if want == "" || !strings.HasPrefix(r.Target, want) {
					t.Fatalf("denial %+v is attributed to the wrong module", r)
				}
			}
			if got := len(e.audit(store.AuditFilter{DeniedOnly: true})); got != 2*calls {
				t.Errorf("audit has %d denials, want %d", got, 2*calls)
			}
		})
	}
}

// 4. After a module's call returns, nothing of its policy applies anywhere.
func TestNoPolicyOutlivesTheCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	wantDenied(t, "in the call", e.mustProbe(stripeMod, probe.HTTP("GET", "https://evil.example/"))[0], stripeMod, "")

	// Plain Go in this process, the default client included, is untouched.
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.ca.Pool()}}}
	if err := stationGet(plain, e.evil.URL+"/"); err != nil {
		t.Fatalf("plain client after the call: %v", err)
	}
	if http.DefaultTransport.(*http.Transport).Proxy == nil {
		t.Errorf("http.DefaultTransport was modified")
	}
	relay := fixture.HTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	if err := stationGet(http.DefaultClient, relay.URL+"/"); err != nil {
		t.Fatalf("http.DefaultClient after the call: %v", err)
	}
	if err := stationGet(stationhttp.NewClient(stationhttp.Options{RootCAs: e.ca.Pool()}), e.evil.URL+"/"); err != nil {
		t.Fatalf("station client after the call: %v", err)
	}
	// A module installed later has its own policy, not the earlier one's.
	e.install(moduleSpec{id: groqMod, allow: []string{"api.groq.com"}}, probe.Wasm(t))
	wantOK(t, "later module", e.mustProbe(groqMod, probe.HTTP("GET", "https://api.groq.com/"))[0])
	// And the first module is still confined on its next call.
	wantDenied(t, "next call", e.mustProbe(stripeMod, probe.HTTP("GET", "https://api.groq.com/"))[0], stripeMod, "api.groq.com")
}

// 5. I/O done in goroutines a module starts stays under that module's
// policy, during the call and after the command returned.
func TestGoroutineIOStaysUnderModulePolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	// One instance, so the goroutine left behind runs in the next call.
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}, limits: "concurrency: 1"}, probe.Wasm(t))
	res := e.mustProbe(stripeMod,
		probe.Spawn(probe.HTTP("GET", "https://evil.example/in-goroutine"), true),
		probe.Spawn(probe.HTTP("GET", "https://api.stripe.com/in-goroutine"), true),
		probe.Spawn(probe.HTTP("GET", "https://evil.example/after-return"), false),
	)
	if res[0].Result == nil || res[1].Result == nil {
		t.Fatalf("spawned results missing: %+v", res)
	}
	wantDenied(t, "goroutine to evil.example", *res[0].Result, stripeMod, "evil.example")
	wantOK(t, "goroutine to api.stripe.com", *res[1].Result)

	// The goroutine left running after the first call does its I/O during
	// this one; it is still the module's.
	res = e.mustProbe(stripeMod, probe.Collect(5*time.Second))
	if len(res[0].Results) == 0 {
		t.Fatalf("collect returned nothing: %+v", res[0])
	}
	wantDenied(t, "goroutine after return", res[0].Results[0], stripeMod, "evil.example")
	if got := e.evil.Accepted(); got != 0 {
		t.Errorf("evil.example accepted %d connections, want 0", got)
	}
	for _, r := range e.audit(store.AuditFilter{DeniedOnly: true}) {
		if r.Module != stripeMod {
			t.Errorf("denial %+v not attributed to %s", r, stripeMod)
		}
	}
}

// 6. A redirect from an allowed host to an off-list host, and an allowed name
// that resolves to a loopback, private or metadata address (without an
// operator grant), are refused.
func TestRedirectsAndPrivateAddressesRefused(t *testing.T) {
	t.Parallel()
	t.Run("redirects", func(t *testing.T) {
		e := newEnv(t, envOpts{})
		for path, to := range map[string]string{
			"/to-evil":     "https://evil.example/",
			"/to-metadata": "http://169.254.169.254/latest/meta-data/",
			"/to-http":     "http://api.stripe.com/",
			"/to-literal":  e.evil.URL + "/",
		} {
			e.stripeMux.Handle(path, http.RedirectHandler(to, http.StatusFound))
		}
		e.stripeMux.Handle("/to-self", http.RedirectHandler("/", http.StatusFound))
		e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
		res := e.mustProbe(stripeMod,
			probe.HTTP("GET", "https://api.stripe.com/to-evil"),
			probe.HTTP("GET", "https://api.stripe.com/to-metadata"),
			probe.HTTP("GET", "https://api.stripe.com/to-http"),
			probe.HTTP("GET", "https://api.stripe.com/to-literal"),
			probe.HTTP("GET", "https://api.stripe.com/to-self"),
		)
		wantDenied(t, "redirect to evil.example", res[0], stripeMod, "evil.example")
		wantDenied(t, "redirect to metadata", res[1], stripeMod, "169.254.169.254")
		wantDenied(t, "redirect to http", res[2], stripeMod, "api.stripe.com")
		wantDenied(t, "redirect to an address literal", res[3], stripeMod, "127.0.0.1")
		wantOK(t, "redirect on the same host", res[4])
		if got := e.evil.Accepted(); got != 0 {
			t.Errorf("evil.example accepted %d connections, want 0", got)
		}
	})
	t.Run("addresses", func(t *testing.T) {
		// Without the operator's loopback grant, api.stripe.com resolving to
		// 127.0.0.1 is refused at connect time; so are private and metadata
		// addresses (refused before any packet is sent).
		e := newEnv(t, envOpts{noLoopbackGrant: true, extraResolve: map[string]string{
			"private.stripe.com:443":  "10.1.2.3:443",
			"metadata.stripe.com:443": "169.254.169.254:443",
			"mapped.stripe.com:443":   "[::ffff:127.0.0.1]:443",
		}})
		e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com", "*.stripe.com"}}, probe.Wasm(t))
		res := e.mustProbe(stripeMod,
			probe.HTTP("GET", "https://api.stripe.com/"),
			probe.HTTP("GET", "https://private.stripe.com/"),
			probe.HTTP("GET", "https://metadata.stripe.com/"),
			probe.HTTP("GET", "https://mapped.stripe.com/"),
		)
		wantDenied(t, "loopback", res[0], stripeMod, "api.stripe.com")
		wantDenied(t, "private", res[1], stripeMod, "private.stripe.com")
		wantDenied(t, "metadata", res[2], stripeMod, "metadata.stripe.com")
		wantDenied(t, "ipv4-mapped loopback", res[3], stripeMod, "mapped.stripe.com")
		for i, class := range []string{"loopback", "private", "link-local", "loopback"} {
			if !strings.Contains(res[i].Error.Reason, class) && !strings.Contains(res[i].Error.Reason, "metadata") {
				t.Errorf("result %d: reason %q does not name the address class %q", i, res[i].Error.Reason, class)
			}
		}
		if got := e.stripe.Accepted(); got != 0 {
			t.Errorf("the fixture accepted %d connections, want 0", got)
		}
	})
}

// 7. A guest that loops forever, grows memory without bound, or passes
// out-of-range pointers or lengths to a host call fails with an error naming
// the module; the station and other modules keep working.
func TestRunawayGuestsFailAndStationSurvives(t *testing.T) {
	e := newEnv(t, envOpts{})
	wasm := probe.Wasm(t)
	const bad = "test/runaway"
	// A second is the loop's deadline, and far more than any other case takes.
	e.install(moduleSpec{id: bad, allow: []string{"api.stripe.com"}, limits: "timeout: 1s\nmemory: 64MiB"}, wasm)
	e.install(moduleSpec{id: groqMod, allow: []string{"api.groq.com"}}, wasm)

	cases := []struct {
		name   string
		action probe.Action
		kind   host.ErrorKind
		want   string
	}{
		{"infinite loop", probe.Loop(), host.KindTimeout, "deadline"},
		{"unbounded memory", probe.Alloc(1<<30, true), host.KindCrash, ""},
		{"pointer out of range", probe.Raw("http_request", 0xfffffff0, 64), host.KindFault, "outside guest memory"},
		{"length out of range", probe.Raw("output_set", 0xffff0000, 0x20000), host.KindFault, ""},
		{"log from a wild pointer", probe.Raw("log", 1, -1, 100), host.KindFault, ""},
		{"wasm trap", probe.Trap(), host.KindCrash, ""},
		{"exit", probe.Exit(3), host.KindCrash, "exit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.probe(bad, c.action)
			var ce *host.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *host.CallError", err)
			}
			if ce.Module != bad || !strings.Contains(err.Error(), "module "+bad) {
				t.Errorf("error %q does not name module %s", err, bad)
			}
			if c.kind == host.KindFault && ce.Kind != host.KindFault && ce.Kind != host.KindCrash {
				t.Errorf("kind %s, want %s", ce.Kind, c.kind)
			} else if c.kind != host.KindFault && ce.Kind != c.kind {
				t.Errorf("kind %s, want %s (%v)", ce.Kind, c.kind, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			// The same module works again on a fresh instance, and so does another.
			wantOK(t, "same module afterwards", e.mustProbe(bad, probe.HTTP("GET", "https://api.stripe.com/"))[0])
			wantOK(t, "other module afterwards", e.mustProbe(groqMod, probe.HTTP("GET", "https://api.groq.com/"))[0])
		})
	}
	// The station's own I/O is fine too.
	if err := stationGet(stationhttp.NewClient(stationhttp.Options{RootCAs: e.ca.Pool()}), e.evil.URL+"/"); err != nil {
		t.Fatal(err)
	}
}
