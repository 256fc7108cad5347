package netgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/units"
	"github.com/station-dev/station/sdk/abi"
)

// recorder collects decisions.
type recorder struct{ fixture.Recorder }

// summary renders the decisions one per line as "allow|deny target: reason".
func (r *recorder) summary() string {
	var b strings.Builder
	for _, d := range r.All() {
		verb := "deny"
		if d.Allowed {
			verb = "allow"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", verb, d.Target, d.Reason)
	}
	return b.String()
}

// fakeResolver answers from a table and counts queries.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	queries []string
	block   chan struct{} // when non-nil, lookups wait for ctx to end and report on it
}

func (f *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	f.queries = append(f.queries, host)
	a, ok := f.answers[host]
	block := f.block
	f.mu.Unlock()
	if block != nil {
		<-ctx.Done()
		close(block)
		return nil, ctx.Err()
	}
	if !ok {
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	return a, nil
}

func (f *fakeResolver) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

var loopbackGrant = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// world is a set of fixture servers reachable by name through operator
// settings, and the recorder and resolver gates built on it use.
type world struct {
	t       *testing.T
	ca      *fixture.CA
	rec     *recorder
	res     *fakeResolver
	resolve map[string]netip.AddrPort
	grants  []netip.Prefix
	servers map[string]*fixture.Server
}

func newWorld(t *testing.T) *world {
	return &world{
		t:       t,
		ca:      fixture.NewCA(t),
		rec:     &recorder{},
		res:     &fakeResolver{answers: map[string][]netip.Addr{}},
		resolve: map[string]netip.AddrPort{},
		grants:  loopbackGrant,
		servers: map[string]*fixture.Server{},
	}
}

// https starts an HTTPS server for name, reachable as name:443.
func (w *world) https(name string, h http.HandlerFunc) *fixture.Server {
	s := w.ca.TLSServer(w.t, h, name)
	w.resolve[name+":443"] = s.Addr
	w.servers[name] = s
	return s
}

// http starts a plain HTTP server for name, reachable as name:80.
func (w *world) http(name string, h http.HandlerFunc) *fixture.Server {
	s := fixture.HTTPServer(w.t, h)
	w.resolve[name+":80"] = s.Addr
	w.servers["http://"+name] = s
	return s
}

// accepted sums the connections every server accepted.
func (w *world) accepted() int64 {
	var n int64
	for _, s := range w.servers {
		n += s.Accepted()
	}
	return n
}

func (w *world) gate(module string, allow ...string) *Gate {
	w.t.Helper()
	return w.gateWith(Options{Module: module}, allow...)
}

// gateWith is a gate with opts, allowing allow, under the world's operator
// settings and recorder.
func (w *world) gateWith(opts Options, allow ...string) *Gate {
	w.t.Helper()
	a, err := Compile(allow)
	if err != nil {
		w.t.Fatal(err)
	}
	opts.Allow = a
	opts.Operator = &Operator{Resolve: w.resolve, RootCAs: w.ca.Pool(), AllowPrivate: w.grants, Resolver: w.res}
	opts.Recorder = w.rec
	g, err := New(opts)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(g.Close)
	return g
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return sandbox.WithCall(ctx, &sandbox.Call{Module: "ignored/by-gate", Command: "create-invoice"})
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s host=%s tls=%v auth=%q cookie=%q key=%q body=%q",
		r.Method, r.URL.RequestURI(), r.Host, r.TLS != nil,
		r.Header.Get("Authorization"), r.Header.Get("Cookie"), r.Header.Get("X-Api-Key"), body)
}

func TestGateAllowed(t *testing.T) {
	w := newWorld(t)
	stripe := w.https("api.stripe.com", echo)
	g := w.gate("dave/stripe-invoicing", "api.stripe.com", "api.groq.com")

	resp, err := g.Do(callCtx(t), &abi.HTTPRequest{
		Method:  "POST",
		URL:     "HTTPS://API.Stripe.com./v1/invoices?limit=3#frag",
		Headers: map[string][]string{"authorization": {"Bearer sk"}, "Content-Type": {"text/plain"}},
		Body:    []byte("hi"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(resp.Body), `POST /v1/invoices?limit=3 host=api.stripe.com tls=true auth="Bearer sk" cookie="" key="" body="hi"`; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	if got, want := resp.Status, 200; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if got, want := resp.URL, "https://api.stripe.com/v1/invoices?limit=3"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	if got, want := fmt.Sprint(stripe.ServerNames()), "[api.stripe.com]"; got != want {
		t.Errorf("SNI = %s, want %s", got, want)
	}
	want := "allow api.stripe.com:443: allowlist entry api.stripe.com\n" +
		"allow api.stripe.com:443 (" + stripe.Addr.Addr().String() + "): connect to a loopback address granted by the operator (127.0.0.0/8)\n"
	if got := w.rec.summary(); got != want {
		t.Errorf("decisions:\n%s\nwant:\n%s", got, want)
	}
	for _, d := range w.rec.All() {
		if d.Module != "dave/stripe-invoicing" || d.Command != "create-invoice" || d.Capability != sandbox.Network || d.Time.IsZero() {
			t.Errorf("decision %+v: want module dave/stripe-invoicing, command create-invoice, capability network, a time", d)
		}
	}
	if got := w.res.count(); got != 0 {
		t.Errorf("resolver queried %d times, want 0 (resolve override)", got)
	}
}

func TestGateReusesConnections(t *testing.T) {
	w := newWorld(t)
	var protos sync.Map
	s := w.https("api.stripe.com", func(rw http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		rw.Header().Set("Content-Length", "5")
		rw.Write([]byte("hello"))
	})
	g := w.gate("dave/stripe", "api.stripe.com")
	for i := range 5 {
		method := "GET"
		if i == 2 {
			method = "HEAD"
		}
		resp, err := g.Do(callCtx(t), &abi.HTTPRequest{Method: method, URL: "https://api.stripe.com/" + fmt.Sprint(i)})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		want := "hello"
		if method == "HEAD" {
			want = ""
		}
		if got := string(resp.Body); got != want {
			t.Errorf("%s body = %q, want %q", method, got, want)
		}
	}
	protos.Range(func(k, _ any) bool {
		if k != "HTTP/2.0" {
			t.Errorf("request over %v, want HTTP/2.0", k)
		}
		return true
	})
	if got, want := s.Accepted(), int64(1); got != want {
		t.Errorf("connections = %d, want %d", got, want)
	}
	if got, want := s.Requests(), int64(5); got != want {
		t.Errorf("requests = %d, want %d", got, want)
	}
}

func TestGatePlainHTTP(t *testing.T) {
	w := newWorld(t)
	w.http("api.test", echo)
	g := w.gate("dave/plain", "http://api.test")
	resp, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "http://api.test/x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(resp.Body), `GET /x host=api.test tls=false auth="" cookie="" key="" body=""`; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	// The same host over https is a different rule.
	_, err = g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.test/x"})
	var v *sandbox.Violation
	if !errors.As(err, &v) || v.Target != "api.test:443" {
		t.Errorf("https://api.test/x: error = %v, want a violation for api.test:443", err)
	}
}

// TestGateRefusals covers requests refused before any connection: none may
// reach a server or the resolver.
func TestGateRefusals(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", echo)
	w.https("evil.example", echo)
	w.res.answers["evil.example"] = addrs("127.0.0.1")
	g := w.gate("dave/stripe-invoicing", "api.stripe.com", "api.groq.com")

	const list = "(api.stripe.com, api.groq.com)"
	cases := []struct {
		url     string
		method  string
		headers map[string][]string
		want    string // "violation <target>: <reason>" or "invalid: <substring>"
	}{
		{url: "https://evil.example/", want: "violation evil.example:443: is not in its allowlist " + list},
		{url: "https://EVIL.example./x?token=1", want: "violation evil.example:443: is not in its allowlist " + list},
		{url: "https://evil.example#@api.stripe.com/", want: "violation evil.example:443: is not in its allowlist " + list},
		{url: "https://xapi.stripe.com/", want: "violation xapi.stripe.com:443: is not in its allowlist " + list},
		{url: "https://api.stripe.com.evil.example/", want: "violation api.stripe.com.evil.example:443: is not in its allowlist " + list},
		{url: "https://api.stripe.com:8443/", want: "violation api.stripe.com:8443: is not in its allowlist " + list},
		{url: "http://api.stripe.com/", want: "violation http://api.stripe.com:80: is not in its allowlist " + list},
		{url: "https://127.0.0.1/", want: "violation 127.0.0.1:443: is not in its allowlist " + list},
		{url: "https://[::ffff:127.0.0.1]/", want: "violation [::ffff:127.0.0.1]:443: is not in its allowlist " + list},
		{url: "https://api.stripe.com@evil.example/", want: "invalid: userinfo"},
		{url: `https://evil.example\@api.stripe.com/`, want: "invalid: backslash"},
		{url: "https://api%2estripe.com/", want: "invalid: percent-encoded"},
		{url: "https://api.stripe.com\t/", want: "invalid: control"},
		{url: "https://аpi.stripe.com/", want: "invalid: non-ASCII"},
		{url: "https://2130706433/", want: "invalid: not a canonical IPv4"},
		{url: "https://0x7f000001/", want: "invalid: not a canonical IPv4"},
		{url: "https://127.1/", want: "invalid: not a canonical IPv4"},
		{url: "ftp://api.stripe.com/", want: "invalid: scheme"},
		{url: "https://api.stripe.com/", method: "CONNECT", want: "invalid: method CONNECT is not allowed"},
		{url: "https://api.stripe.com/", method: "trace", want: "invalid: method TRACE is not allowed"},
		{url: "https://api.stripe.com/", method: "GET /evil HTTP/1.1\r\n", want: "invalid: not a valid HTTP method"},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Host": {"evil.example"}}, want: `invalid: header "Host" is set by the station`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"host": {"evil.example"}}, want: `invalid: header "Host"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Connection": {"close"}}, want: `invalid: header "Connection"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Transfer-Encoding": {"chunked"}}, want: `invalid: header "Transfer-Encoding"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Content-Length": {"0"}}, want: `invalid: header "Content-Length"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"TE": {"trailers"}}, want: `invalid: header "Te"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Upgrade": {"h2c"}}, want: `invalid: header "Upgrade"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Proxy-Authorization": {"x"}}, want: `invalid: header "Proxy-Authorization"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Expect": {"100-continue"}}, want: `invalid: header "Expect"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"HTTP2-Settings": {"x"}}, want: `invalid: header "Http2-Settings"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"Keep-Alive": {"1"}}, want: `invalid: header "Keep-Alive"`},
		{url: "https://api.stripe.com/", headers: map[string][]string{"X-A": {"v\r\nHost: evil.example"}}, want: "invalid: CR, LF, NUL"},
		{url: "https://api.stripe.com/", headers: map[string][]string{"X-A": {"v\x00"}}, want: "invalid: CR, LF, NUL"},
		{url: "https://api.stripe.com/", headers: map[string][]string{"X A": {"v"}}, want: "invalid: not a valid token"},
		{url: "https://api.stripe.com/", headers: map[string][]string{"X-A:": {"v"}}, want: "invalid: not a valid token"},
	}
	for _, c := range cases {
		before := len(w.rec.All())
		_, err := g.Do(callCtx(t), &abi.HTTPRequest{Method: c.method, URL: c.url, Headers: c.headers})
		var got string
		var v *sandbox.Violation
		switch {
		case err == nil:
			got = "allowed"
		case errors.As(err, &v):
			got = "violation " + v.Target + ": " + v.Reason
			if v.Module != "dave/stripe-invoicing" || v.Capability != sandbox.Network {
				t.Errorf("%s: violation %+v, want module dave/stripe-invoicing and capability network", c.url, v)
			}
		case errors.Is(err, ErrInvalid):
			got = "invalid: " + err.Error()
		default:
			got = "other: " + err.Error()
		}
		if want, ok := strings.CutPrefix(c.want, "invalid: "); ok {
			if !strings.HasPrefix(got, "invalid: ") || !strings.Contains(got, want) {
				t.Errorf("%s %q: got %s, want ErrInvalid containing %q", c.method, c.url, got, want)
			}
		} else if got != c.want {
			t.Errorf("%s %q: got %s, want %s", c.method, c.url, got, c.want)
		}
		ds := w.rec.All()[before:]
		if len(ds) != 1 || ds[0].Allowed || ds[0].Module != "dave/stripe-invoicing" || ds[0].Command != "create-invoice" {
			t.Errorf("%s %q: decisions %+v, want one denial for the module and command", c.method, c.url, ds)
		}
		if strings.Contains(ds[len(ds)-1].Target, "token=1") {
			t.Errorf("%q: recorded target %q carries the query", c.url, ds[0].Target)
		}
	}
	if got := w.accepted(); got != 0 {
		t.Errorf("servers accepted %d connections, want 0", got)
	}
	if got := w.res.count(); got != 0 {
		t.Errorf("resolver queried %d times, want 0", got)
	}
}

func TestGateViolationText(t *testing.T) {
	w := newWorld(t)
	g := w.gate("dave/stripe-invoicing", "api.stripe.com", "api.groq.com")
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://evil.example/"})
	want := `sandbox violation: module dave/stripe-invoicing: network: "evil.example:443" is not in its allowlist (api.stripe.com, api.groq.com)`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestGateRequestBodyTooLarge(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", echo)
	g := w.gate("dave/stripe", "api.stripe.com")
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{Method: "POST", URL: "https://api.stripe.com/", Body: make([]byte, MaxRequestBytes+1)})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("error = %v, want ErrTooLarge", err)
	}
	if got := w.accepted(); got != 0 {
		t.Errorf("accepted %d connections, want 0", got)
	}
}

// TestGateAddresses covers names the allowlist allows but whose addresses
// are refused at connect time.
func TestGateAddresses(t *testing.T) {
	cases := []struct {
		answers []netip.Addr
		grants  []netip.Prefix
		want    string // "ok" or the recorded denial "target: reason"
	}{
		{answers: addrs("127.0.0.1"), grants: loopbackGrant, want: "ok"},
		{answers: addrs("::ffff:127.0.0.1"), grants: loopbackGrant, want: "ok"},
		{answers: addrs("127.0.0.1"), want: "api.internal.test:PORT (127.0.0.1): resolves to a loopback address, which the operator has not granted"},
		{answers: addrs("::ffff:127.0.0.1"), want: "api.internal.test:PORT (::ffff:127.0.0.1): resolves to a ipv4-mapped loopback address, which the operator has not granted"},
		{answers: addrs("169.254.169.254"), grants: loopbackGrant, want: "api.internal.test:PORT (169.254.169.254): resolves to a metadata address, which the operator has not granted"},
		{answers: addrs("10.0.0.7"), grants: loopbackGrant, want: "api.internal.test:PORT (10.0.0.7): resolves to a private address, which the operator has not granted"},
		{answers: addrs("64:ff9b::a9fe:a9fe"), grants: loopbackGrant, want: "api.internal.test:PORT (64:ff9b::a9fe:a9fe): resolves to a nat64 metadata address, which the operator has not granted"},
		{answers: addrs("0.0.0.0"), grants: loopbackGrant, want: "api.internal.test:PORT (0.0.0.0): resolves to a unspecified address, which the operator has not granted"},
		// One refused address refuses the name, even after an allowed one.
		{answers: addrs("127.0.0.1", "10.0.0.7"), grants: loopbackGrant, want: "api.internal.test:PORT (10.0.0.7): resolves to a private address, which the operator has not granted"},
	}
	for _, c := range cases {
		w := newWorld(t)
		w.grants = c.grants
		s := fixture.HTTPServer(t, http.HandlerFunc(echo))
		port := s.Addr.Port()
		w.res.answers["api.internal.test"] = c.answers
		g := w.gate("dave/internal", fmt.Sprintf("http://api.internal.test:%d", port))
		_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: fmt.Sprintf("http://api.internal.test:%d/", port)})
		want := strings.ReplaceAll(c.want, "PORT", fmt.Sprint(port))
		if want == "ok" {
			if err != nil {
				t.Errorf("%v: %v", c.answers, err)
			}
			continue
		}
		var v *sandbox.Violation
		if !errors.As(err, &v) {
			t.Errorf("%v: error = %v, want a violation", c.answers, err)
			continue
		}
		if got := v.Target + ": " + v.Reason; got != want {
			t.Errorf("%v: violation %q, want %q", c.answers, got, want)
		}
		ds := w.rec.All()
		if last := ds[len(ds)-1]; last.Allowed || last.Target+": "+last.Reason != want {
			t.Errorf("%v: last decision %+v, want the denial", c.answers, last)
		}
		if got := s.Accepted(); got != 0 {
			t.Errorf("%v: server accepted %d connections, want 0", c.answers, got)
		}
	}
}

// TestGateControlRecheck shows that the Control hook refuses an address even
// when the pre-dial check is bypassed.
func TestGateControlRecheck(t *testing.T) {
	w := newWorld(t)
	w.grants = nil
	g := w.gate("dave/control", "api.stripe.com")
	err := g.control(callCtx(t), "tcp4", "127.0.0.1:443", nil)
	var v *sandbox.Violation
	if !errors.As(err, &v) {
		t.Fatalf("control(127.0.0.1:443) = %v, want a violation", err)
	}
	if got, want := v.Reason, "connects to a loopback address, which the operator has not granted"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	if err := g.control(callCtx(t), "tcp4", "93.184.216.34:443", nil); err != nil {
		t.Errorf("control(public) = %v, want nil", err)
	}
}

func TestGateResolveOverrideNeedsGrant(t *testing.T) {
	w := newWorld(t)
	w.grants = nil
	s := w.https("api.stripe.com", echo)
	g := w.gate("dave/stripe", "api.stripe.com")
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/"})
	var v *sandbox.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Reason, "loopback") {
		t.Errorf("error = %v, want a loopback violation", err)
	}
	if got := s.Accepted(); got != 0 {
		t.Errorf("accepted %d connections, want 0", got)
	}
}

func TestGateRedirects(t *testing.T) {
	w := newWorld(t)
	var hops atomic.Int64
	w.https("api.stripe.com", func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-files":
			http.Redirect(rw, r, "https://files.stripe.com/f?x=1", http.StatusFound)
		case "/to-self":
			http.Redirect(rw, r, "/final", http.StatusFound)
		case "/to-evil":
			http.Redirect(rw, r, "https://evil.example/", http.StatusFound)
		case "/to-http":
			http.Redirect(rw, r, "http://api.stripe.com/", http.StatusMovedPermanently)
		case "/to-metadata":
			http.Redirect(rw, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-metadata-https":
			http.Redirect(rw, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-userinfo":
			http.Redirect(rw, r, "https://api.stripe.com@evil.example/", http.StatusFound)
		case "/to-numeric":
			http.Redirect(rw, r, "https://2130706433/", http.StatusFound)
		case "/to-port":
			http.Redirect(rw, r, "https://api.stripe.com:8443/", http.StatusFound)
		case "/loop":
			hops.Add(1)
			http.Redirect(rw, r, "/loop", http.StatusFound)
		case "/post-303":
			http.Redirect(rw, r, "/final", http.StatusSeeOther)
		case "/post-307":
			http.Redirect(rw, r, "https://files.stripe.com/final", http.StatusTemporaryRedirect)
		default:
			echo(rw, r)
		}
	})
	w.https("files.stripe.com", echo)
	w.https("evil.example", echo)
	evil := w.servers["evil.example"]
	g := w.gate("dave/stripe", "api.stripe.com", "files.stripe.com", "169.254.169.254")

	headers := map[string][]string{
		"Authorization": {"Bearer sk"},
		"Cookie":        {"c=1"},
		"X-Api-Key":     {"k"},
	}
	cases := []struct {
		method, path string
		want         string // "body" or "violation target: reason" or "error: substring"
		url          string
	}{
		{method: "GET", path: "/to-self", want: `GET /final host=api.stripe.com tls=true auth="Bearer sk" cookie="c=1" key="k" body=""`, url: "https://api.stripe.com/final"},
		{method: "GET", path: "/to-files", want: `GET /f?x=1 host=files.stripe.com tls=true auth="" cookie="" key="" body=""`, url: "https://files.stripe.com/f?x=1"},
		{method: "POST", path: "/post-303", want: `GET /final host=api.stripe.com tls=true auth="Bearer sk" cookie="c=1" key="k" body=""`, url: "https://api.stripe.com/final"},
		{method: "POST", path: "/post-307", want: `POST /final host=files.stripe.com tls=true auth="" cookie="" key="" body="data"`, url: "https://files.stripe.com/final"},
		{method: "GET", path: "/to-evil", want: "violation evil.example:443: is not in its allowlist (api.stripe.com, files.stripe.com, 169.254.169.254) (redirect from api.stripe.com:443)"},
		{method: "GET", path: "/to-http", want: "violation http://api.stripe.com:80: is a redirect from https to http (redirect from api.stripe.com:443); downgrades are refused"},
		{method: "GET", path: "/to-metadata", want: "violation http://169.254.169.254:80: is a redirect from https to http (redirect from api.stripe.com:443); downgrades are refused"},
		{method: "GET", path: "/to-metadata-https", want: "violation 169.254.169.254:443 (169.254.169.254): resolves to a metadata address, which the operator has not granted"},
		{method: "GET", path: "/to-userinfo", want: "violation https://REDACTED@evil.example/: is a redirect the gate will not follow: invalid request: URL has userinfo"},
		{method: "GET", path: "/to-numeric", want: "violation https://2130706433/: is a redirect the gate will not follow: invalid request: URL host \"2130706433\" is not a canonical IPv4 address"},
		{method: "GET", path: "/to-port", want: "violation api.stripe.com:8443: is not in its allowlist (api.stripe.com, files.stripe.com, 169.254.169.254) (redirect from api.stripe.com:443)"},
		{method: "GET", path: "/loop", want: "error: limit exceeded: module dave/stripe: network: \"https://api.stripe.com/loop\" stopped after 10 redirects, the limit of one request"},
	}
	for _, c := range cases {
		resp, err := g.Do(callCtx(t), &abi.HTTPRequest{Method: c.method, URL: "https://api.stripe.com" + c.path, Headers: headers, Body: []byte("data")})
		var got string
		var v *sandbox.Violation
		switch {
		case err == nil:
			got = string(resp.Body)
			if resp.URL != c.url {
				t.Errorf("%s %s: URL = %q, want %q", c.method, c.path, resp.URL, c.url)
			}
		case errors.As(err, &v):
			got = "violation " + v.Target + ": " + v.Reason
		default:
			got = "error: " + err.Error()
		}
		if strings.HasPrefix(c.want, "error: ") || strings.Contains(c.want, "will not follow") {
			if !strings.HasPrefix(got, c.want[:strings.Index(c.want, ":")]) || !strings.Contains(got, c.want[strings.Index(c.want, ":")+2:]) {
				t.Errorf("%s %s: got %s, want %s", c.method, c.path, got, c.want)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.method, c.path, got, c.want)
		}
	}
	var le *sandbox.LimitError
	w.rec.Reset()
	if _, err := g.Do(callCtx(t), &abi.HTTPRequest{Method: "GET", URL: "https://api.stripe.com/loop"}); !errors.As(err, &le) || le.Limit != 10 {
		t.Errorf("the redirect limit: %v, want a *sandbox.LimitError with the limit 10", err)
	}
	if ds := w.rec.All(); len(ds) == 0 || ds[len(ds)-1].Allowed || !strings.Contains(ds[len(ds)-1].Reason, "stopped after 10 redirects") {
		t.Errorf("the redirect limit was not recorded as a refusal: %+v", ds)
	}
	hops.Add(-11)
	if got, want := hops.Load(), int64(11); got != want {
		t.Errorf("/loop served %d times, want %d (the request and 10 redirects)", got, want)
	}
	if got := evil.Accepted(); got != 0 {
		t.Errorf("evil.example accepted %d connections, want 0", got)
	}
	if got := w.res.count(); got != 0 {
		t.Errorf("resolver queried %d times, want 0", got)
	}

	// Every hop is a recorded decision.
	w.rec.Reset()
	if _, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/to-files"}); err != nil {
		t.Fatal(err)
	}
	var requests []string
	for _, d := range w.rec.All() {
		if !strings.Contains(d.Target, "(") {
			requests = append(requests, d.Target+": "+d.Reason)
		}
	}
	want := "api.stripe.com:443: allowlist entry api.stripe.com|files.stripe.com:443: allowlist entry files.stripe.com (redirect from api.stripe.com:443)"
	if got := strings.Join(requests, "|"); got != want {
		t.Errorf("request decisions = %q, want %q", got, want)
	}
}

func TestGateRedirectsUnfollowed(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "https://evil.example/", http.StatusFound)
	})
	a, _ := Compile([]string{"api.stripe.com"})
	g, err := New(Options{Module: "dave/stripe", Allow: a, MaxRedirects: -1, Operator: &Operator{Resolve: w.resolve, RootCAs: w.ca.Pool(), AllowPrivate: loopbackGrant}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	resp, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Status, http.StatusFound; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if got, want := resp.Headers["Location"], []string{"https://evil.example/"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Location = %q, want %q", got, want)
	}
}

func TestGateResponseTooLarge(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			rw.(http.Flusher).Flush() // no Content-Length
		} else {
			rw.Header().Set("Content-Length", "2048")
		}
		rw.Write(make([]byte, 2048))
	})
	a, _ := Compile([]string{"api.stripe.com"})
	g, err := New(Options{Module: "dave/stripe", Allow: a, MaxResponseBytes: 1024, Operator: &Operator{Resolve: w.resolve, RootCAs: w.ca.Pool(), AllowPrivate: loopbackGrant}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, path := range []string{"/length", "/chunked"} {
		_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com" + path})
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: error = %v, want ErrTooLarge", path, err)
		}
	}
}

func TestGateDeadline(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	w.https("api.stripe.com", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	g := w.gate("dave/stripe", "api.stripe.com")
	ctx, cancel := context.WithTimeout(callCtx(t), 100*time.Millisecond)
	defer cancel()
	_, err := g.Do(ctx, &abi.HTTPRequest{URL: "https://api.stripe.com/slow?secret=1"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want context.DeadlineExceeded", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q shows the query", err)
	}
}

// TestGateDialBoundByCall shows that a dial (here, a resolution that never
// answers) ends with the call, although the transport detaches dials from
// the request.
func TestGateDialBoundByCall(t *testing.T) {
	w := newWorld(t)
	ended := make(chan struct{})
	w.res.block = ended
	g := w.gate("dave/slow-dns", "api.slow.test")
	ctx, cancel := context.WithTimeout(callCtx(t), 100*time.Millisecond)
	defer cancel()
	_, err := g.Do(ctx, &abi.HTTPRequest{URL: "https://api.slow.test/"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the resolution outlived the call by 5s")
	}
}

// TestGateIsolation runs two modules with different allowlists concurrently:
// each is held to its own list and every decision names its own module.
func TestGateIsolation(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", echo)
	w.https("api.groq.com", echo)
	stripe := w.gate("dave/stripe", "api.stripe.com")
	groq := w.gate("erin/groq", "api.groq.com")

	type call struct {
		g      *Gate
		module string
		url    string
		ok     bool
	}
	calls := []call{
		{stripe, "dave/stripe", "https://api.stripe.com/", true},
		{stripe, "dave/stripe", "https://api.groq.com/", false},
		{groq, "erin/groq", "https://api.groq.com/", true},
		{groq, "erin/groq", "https://api.stripe.com/", false},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		c := calls[i%len(calls)]
		wg.Go(func() {
			_, err := c.g.Do(callCtx(t), &abi.HTTPRequest{URL: c.url})
			var v *sandbox.Violation
			switch {
			case c.ok && err != nil:
				errs <- fmt.Errorf("%s %s: %v", c.module, c.url, err)
			case !c.ok && (!errors.As(err, &v) || v.Module != c.module):
				errs <- fmt.Errorf("%s %s: error %v, want a violation naming %s", c.module, c.url, err, c.module)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range w.rec.All() {
		host := strings.SplitN(d.Target, ":", 2)[0]
		want := map[string]bool{
			"dave/stripe api.stripe.com": true, "dave/stripe api.groq.com": false,
			"erin/groq api.groq.com": true, "erin/groq api.stripe.com": false,
		}
		allowed, ok := want[d.Module+" "+host]
		if !ok || allowed != d.Allowed {
			t.Errorf("decision %+v is not what %s may do", d, d.Module)
		}
	}
}

// TestGateIgnoresEnvironment: a proxy in the environment is never used.
func TestGateIgnoresEnvironment(t *testing.T) {
	proxy := fixture.HTTPServer(t, http.HandlerFunc(echo))
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	w := newWorld(t)
	w.https("api.stripe.com", echo)
	w.http("api.test", echo)
	g := w.gate("dave/stripe", "api.stripe.com", "http://api.test")
	for _, u := range []string{"https://api.stripe.com/", "http://api.test/"} {
		if _, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: u}); err != nil {
			t.Fatal(err)
		}
	}
	if got := proxy.Accepted(); got != 0 {
		t.Errorf("proxy accepted %d connections, want 0", got)
	}
}

func TestGateTLSVerification(t *testing.T) {
	w := newWorld(t)
	// The server's certificate names another host.
	s := w.ca.TLSServer(t, http.HandlerFunc(echo), "other.example")
	w.resolve["api.stripe.com:443"] = s.Addr
	g := w.gate("dave/stripe", "api.stripe.com")
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/"})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("error = %v, want a certificate error", err)
	}
}

func TestNew(t *testing.T) {
	cases := []struct {
		opts Options
		err  string
	}{
		{Options{Module: "a/b"}, ""},
		{Options{}, "module id is required"},
		{Options{Module: "a/b", MaxRedirects: 11}, "MaxRedirects 11 exceeds 10"},
		{Options{Module: "a/b", Operator: &Operator{Resolve: map[string]netip.AddrPort{"api.stripe.com": netip.MustParseAddrPort("127.0.0.1:1")}}}, `resolve override "api.stripe.com"`},
		{Options{Module: "a/b", Operator: &Operator{Resolve: map[string]netip.AddrPort{"api.stripe.com:443": {}}}}, "no address"},
		{Options{Module: "a/b", Operator: &Operator{AllowPrivate: []netip.Prefix{{}}}}, "not valid"},
		{Options{Module: "a/b", Operator: &Operator{Resolve: map[string]netip.AddrPort{
			"api.stripe.com:443": netip.MustParseAddrPort("127.0.0.1:1"),
			"API.stripe.com:443": netip.MustParseAddrPort("127.0.0.1:2"),
		}}}, "disagree"},
	}
	for _, c := range cases {
		g, err := New(c.opts)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("New(%+v): %v", c.opts, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("New(%+v) error = %v, want %q", c.opts, err, c.err)
		}
		if g != nil {
			g.Close()
		}
	}
}

// TestNewCopiesOperator: changing the operator's settings after New has no
// effect on the gate.
func TestNewCopiesOperator(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", echo)
	op := &Operator{Resolve: w.resolve, RootCAs: w.ca.Pool(), AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	a, _ := Compile([]string{"api.stripe.com"})
	g, err := New(Options{Module: "dave/stripe", Allow: a, Operator: op})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	op.AllowPrivate[0] = netip.MustParsePrefix("10.0.0.0/8")
	delete(op.Resolve, "api.stripe.com:443")
	if _, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://API.STRIPE.COM/"}); err != nil {
		t.Errorf("after changing the operator settings: %v", err)
	}
}

// TestGateHandshakeBoundByCall: a server that accepts but never completes
// the TLS handshake holds the call only until its deadline, and the gate
// closes the connection then.
func TestGateHandshakeBoundByCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c) // returns when the gate closes its end
		c.Close()
		close(closed)
	}()
	w := newWorld(t)
	w.resolve["api.stripe.com:443"] = netip.MustParseAddrPort(ln.Addr().String())
	g := w.gate("dave/stripe", "api.stripe.com")
	ctx, cancel := context.WithTimeout(callCtx(t), 100*time.Millisecond)
	defer cancel()
	_, err = g.Do(ctx, &abi.HTTPRequest{URL: "https://api.stripe.com/"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the handshake outlived the call by 5s")
	}
}

// Every size limit is a recorded refusal naming the module, the target and
// the limit, returned as a *sandbox.LimitError that still wraps ErrTooLarge.
func TestGateLimitsNameTheModule(t *testing.T) {
	w := newWorld(t)
	w.https("api.stripe.com", func(rw http.ResponseWriter, r *http.Request) {
		rw.Write(make([]byte, DefaultMaxResponseBytes+1))
	})
	g := w.gate("dave/stripe", "api.stripe.com")
	big := http.Header{"X-Big": {strings.Repeat("a", maxHeaderBytes)}}
	tests := []struct {
		name   string
		req    *abi.HTTPRequest
		target string
		reason string
		limit  int64
	}{
		{"request body", &abi.HTTPRequest{Method: "POST", URL: "https://api.stripe.com/v1/files?key=secret", Body: make([]byte, MaxRequestBytes+1)},
			"https://api.stripe.com/v1/files?REDACTED", fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", MaxRequestBytes+1, MaxRequestBytes), MaxRequestBytes},
		{"request headers", &abi.HTTPRequest{URL: "https://api.stripe.com/", Headers: big},
			"https://api.stripe.com/", fmt.Sprintf("request headers exceed the limit of %d bytes", maxHeaderBytes), maxHeaderBytes},
		{"URL", &abi.HTTPRequest{URL: "https://api.stripe.com/" + strings.Repeat("a", maxURLBytes)},
			"https://api.stripe.com/aaaa", fmt.Sprintf("URL of %d bytes exceeds the limit of %d bytes", len("https://api.stripe.com/")+maxURLBytes, maxURLBytes), maxURLBytes},
		{"response body", &abi.HTTPRequest{URL: "https://api.stripe.com/export"},
			"https://api.stripe.com/export", fmt.Sprintf("GET response body is larger than the limit of %d bytes", DefaultMaxResponseBytes), DefaultMaxResponseBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(w.rec.All())
			_, err := g.Do(callCtx(t), tt.req)
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("error = %v, want ErrTooLarge", err)
			}
			var le *sandbox.LimitError
			if !errors.As(err, &le) {
				t.Fatalf("error = %v (%T), want a *sandbox.LimitError", err, err)
			}
			if got, want := *le, (sandbox.LimitError{Module: "dave/stripe", Capability: sandbox.Network, Target: le.Target, Reason: tt.reason, Limit: tt.limit, Bytes: true, Err: ErrTooLarge}); got != want {
				t.Errorf("limit error\n got %+v\nwant %+v", got, want)
			}
			if !strings.HasPrefix(le.Target, tt.target) {
				t.Errorf("target %q, want %q", le.Target, tt.target)
			}
			if msg := err.Error(); !strings.Contains(msg, "module dave/stripe") || !strings.Contains(msg, strconv.FormatInt(tt.limit, 10)) ||
				!strings.HasSuffix(msg, "; the limit is "+units.Bytes(tt.limit)) {
				t.Errorf("error %q does not name the module and the limit, in bytes and for people", msg)
			}
			recs := w.rec.All()[before:]
			last := recs[len(recs)-1]
			if last.Allowed || last.Module != "dave/stripe" || last.Capability != sandbox.Network || last.Command != "create-invoice" || last.Target != le.Target || last.Reason != tt.reason {
				t.Errorf("recorded %+v, want the refusal of %s", last, tt.name)
			}
		})
	}
}
