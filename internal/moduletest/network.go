package moduletest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/station-dev/station/internal/localca"
	"github.com/station-dev/station/internal/netgate"
)

// Served is one request a fixture server answered, attributed to the call
// it was made in.
type Served struct {
	Host   string `json:"host"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	// Fixture is the file that answered; "" when the host has none (the
	// answer is a 502 that says so).
	Fixture string `json:"fixture,omitempty"`
	// Note says which route answered, or why none did.
	Note string `json:"note,omitempty"`
}

// Mapping is where the throwaway station sends a host and port the
// module's allowlist grants.
type Mapping struct {
	// Host and Port are what the module asks for; Scheme is the
	// allowlist's.
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Scheme string `json:"scheme"`
	// Fixture is the file that answers, "" for the 502 of a host without
	// one.
	Fixture string `json:"fixture,omitempty"`
	// To is the loopback server's address.
	To netip.AddrPort `json:"-"`
}

// network is the fixture servers of one run, on 127.0.0.1, and what the
// throwaway station's config.yaml needs to reach them.
type network struct {
	ca       *localca.CA // the run's: the throwaway station trusts it (network.extra_ca), nothing else does
	servers  []*http.Server
	mappings []Mapping
	// Notes are for the author: hosts without a fixture, fixtures the
	// module can never reach.
	notes, warnings []string

	mu     sync.Mutex
	record func(Served) // nil between calls
}

// target is one host:port the allowlist grants, by scheme.
type target struct {
	host, scheme string
	port         int
}

// plan works out, from the module's allowlist and the fixtures, which
// host:port goes to which server: every host:port an allowlist entry
// names for a fixture host goes to that fixture's server (https or plain
// http, as the entry says), every exact host or IP the allowlist names
// without a fixture to the server that answers 502, and a fixture host
// the allowlist does not name is a warning. Names under a wildcard that
// have no fixture are not mapped: the throwaway station's resolver
// refuses them.
func plan(allow []string, fixtures []*Fixture) (targets map[target]*Fixture, unfixtured []target, notes, warnings []string, err error) {
	rules := make([]netgate.Rule, 0, len(allow))
	for _, e := range allow {
		r, err := netgate.ParseRule(e)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rules = append(rules, r)
	}
	targets = map[target]*Fixture{}
	taken := map[string]string{} // host:port → scheme
	add := func(t target) bool {
		k := hostPort(t.host, t.port)
		if s, ok := taken[k]; ok {
			if s != t.scheme {
				notes = append(notes, fmt.Sprintf("%s is granted as both http and https; requests to it are answered over %s", k, s))
			}
			return false
		}
		taken[k] = t.scheme
		return true
	}
	for _, r := range rules {
		one, _ := netgate.Compile([]string{r.String()})
		matched := false
		for _, fx := range fixtures {
			if one.Allows(r.Scheme, fx.Host, r.Port) {
				matched = true
				if t := (target{fx.Host, r.Scheme, r.Port}); add(t) {
					targets[t] = fx
				}
			}
		}
		switch {
		case r.Wildcard:
			notes = append(notes, fmt.Sprintf("other names under %s have no fixture: a request to one fails to resolve (pass --fixture NAME=FILE)", r.String()))
		case !matched:
			if t := (target{r.Host, r.Scheme, r.Port}); add(t) {
				unfixtured = append(unfixtured, t)
				notes = append(notes, fmt.Sprintf("%s is in the allowlist but has no fixture: requests to it are answered 502 (pass --fixture %s=FILE)", r.String(), displayHost(r.Host)))
			}
		}
	}
	list, _ := netgate.Compile(allow)
	for _, fx := range fixtures {
		reachable := false
		for _, r := range rules {
			if list.Allows(r.Scheme, fx.Host, r.Port) {
				reachable = true
			}
		}
		if !reachable {
			warnings = append(warnings, fmt.Sprintf("fixture %s is not in the module's allowlist (%s): the module can never reach it", displayHost(fx.Host), list))
		}
		// HOST:443 reaches the fixture in any case: a request the gate
		// refuses never gets there, and one it allows finds its server.
		if t := (target{fx.Host, "https", 443}); add(t) {
			targets[t] = fx
		}
	}
	return targets, unfixtured, notes, warnings, nil
}

// startNetwork starts the servers plan asks for.
func startNetwork(allow []string, fixtures []*Fixture) (n *network, err error) {
	targets, unfixtured, notes, warnings, err := plan(allow, fixtures)
	if err != nil {
		return nil, err
	}
	ca, err := localca.New("station module test CA (one run)")
	if err != nil {
		return nil, fmt.Errorf("fixture CA: %w", err)
	}
	n = &network{ca: ca, notes: notes, warnings: warnings}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	// One server per fixture and scheme; one per scheme for the hosts
	// without a fixture.
	type key struct {
		fx     *Fixture
		scheme string
	}
	addrs := map[key]netip.AddrPort{}
	serverFor := func(k key, hosts []string) (netip.AddrPort, error) {
		if a, ok := addrs[k]; ok {
			return a, nil
		}
		var h http.Handler
		if k.fx != nil {
			h = n.fixtureHandler(k.fx)
		} else {
			h = http.HandlerFunc(n.noFixture)
		}
		a, err := n.serve(h, k.scheme == "https", hosts)
		if err != nil {
			return netip.AddrPort{}, err
		}
		addrs[k] = a
		return a, nil
	}
	var order []target
	for t := range targets {
		order = append(order, t)
	}
	slices.SortFunc(order, func(a, b target) int {
		if c := cmpString(a.host, b.host); c != 0 {
			return c
		}
		return a.port - b.port
	})
	for _, t := range order {
		fx := targets[t]
		a, err := serverFor(key{fx, t.scheme}, []string{fx.Host})
		if err != nil {
			return nil, err
		}
		n.mappings = append(n.mappings, Mapping{Host: t.host, Port: t.port, Scheme: t.scheme, Fixture: fx.File, To: a})
	}
	var tlsHosts []string
	for _, t := range unfixtured {
		if t.scheme == "https" && !slices.Contains(tlsHosts, t.host) {
			tlsHosts = append(tlsHosts, t.host)
		}
	}
	for _, t := range unfixtured {
		a, err := serverFor(key{nil, t.scheme}, tlsHosts)
		if err != nil {
			return nil, err
		}
		n.mappings = append(n.mappings, Mapping{Host: t.host, Port: t.port, Scheme: t.scheme, To: a})
	}
	return n, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// serve starts a server for h on 127.0.0.1: HTTPS with a certificate for
// hosts, or plain HTTP.
func (n *network) serve(h http.Handler, useTLS bool, hosts []string) (netip.AddrPort, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("fixture server: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: quietLog}
	if useTLS {
		cert, err := n.ca.Leaf("station module test fixture", hosts...)
		if err != nil {
			ln.Close()
			return netip.AddrPort{}, fmt.Errorf("fixture certificate: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	n.servers = append(n.servers, srv)
	return netip.MustParseAddrPort(ln.Addr().String()), nil
}

func (n *network) close() {
	for _, s := range n.servers {
		s.Close()
	}
}

// recordTo sends what the servers answer to f until the next call (nil:
// nowhere).
func (n *network) recordTo(f func(Served)) {
	n.mu.Lock()
	n.record = f
	n.mu.Unlock()
}

func (n *network) served(s Served) {
	n.mu.Lock()
	f := n.record
	n.mu.Unlock()
	if f != nil {
		f(s)
	}
}

func (n *network) fixtureHandler(fx *Fixture) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		a := fx.serve(w, r)
		n.served(Served{Host: requestHost(r), Method: r.Method, Path: r.URL.Path, Status: a.status, Fixture: fx.File, Note: a.note})
	})
}

// NoFixtureBody is the body of the 502 a host without a fixture answers.
func NoFixtureBody(host string) string {
	return fmt.Sprintf("no fixture for %s: pass --fixture %s=FILE (or name it under fixtures: in tests.yaml)\n", host, host)
}

func (n *network) noFixture(w http.ResponseWriter, r *http.Request) {
	drain(r)
	host := requestHost(r)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadGateway)
	io.WriteString(w, NoFixtureBody(host))
	n.served(Served{Host: host, Method: r.Method, Path: r.URL.Path, Status: http.StatusBadGateway, Note: "no fixture for " + host})
}

// drain reads what is left of a request body (bounded), so that the
// module's request completes before the answer.
func drain(r *http.Request) {
	io.Copy(io.Discard, io.LimitReader(r.Body, netgate.MaxRequestBytes))
}

// requestHost is the host a request names, without the port.
func requestHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		return h
	}
	return r.Host
}

// hostPort joins a canonical host and a port (IPv6 in brackets).
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// displayHost is a canonical host as an allowlist writes it.
func displayHost(host string) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + host + "]"
	}
	return host
}

// quietLog drops the servers' own complaints (a handshake the gate broke
// off when the call ended): what a test shows is what the gate decided and
// what the fixtures answered.
var quietLog = log.New(io.Discard, "", 0)

// refusingResolver is the throwaway station's resolver: it resolves
// nothing, so that a name the run does not map (one under a wildcard of
// the allowlist, without a fixture) never reaches the real DNS, let alone
// the internet.
type refusingResolver struct{}

func (refusingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, fmt.Errorf("no fixture for %s: pass --fixture %s=FILE (a module test never uses the real DNS)", host, host)
}
