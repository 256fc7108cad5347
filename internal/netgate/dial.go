package netgate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/station-dev/station/internal/sandbox"
)

// dialNameKey carries the "host:port" being dialed to the Control hook, so
// its decision can name it.
type dialNameKey struct{}

// bind ties a dial to the call that started it. The transport runs dials on
// a context detached from the request's cancellation (so another request
// could use the connection); bind cancels the dial when the call's context
// ends, so nothing done for the module outlives the call's deadline.
func bind(ctx context.Context) (context.Context, context.CancelFunc) {
	call, ok := ctx.Value(callKey{}).(context.Context)
	if !ok {
		return context.WithCancel(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(call, cancel)
	return ctx, func() { stop(); cancel() }
}

// dialTLS is the transport's DialTLSContext: connect as dial does, then
// complete the TLS handshake with ServerName set to the checked host, all
// within the call's deadline.
func (g *Gate) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, done := bind(ctx)
	defer done()
	conn, err := g.connect(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr) // connect has checked addr
	cfg := g.tls.Clone()
	cfg.ServerName = host
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// dial is the transport's DialContext, used for plain http.
func (g *Gate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, done := bind(ctx)
	defer done()
	return g.connect(ctx, network, addr)
}

// connect opens a TCP connection to addr, "host:port" from the checked URL.
// It resolves the name itself (operator override first, then the resolver),
// refuses the connection if any address is in a refused class, and dials the
// checked addresses, never the name. The dialer's Control hook checks the
// address of every socket again just before it connects.
func (g *Gate) connect(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	port, ok := parsePort(portText)
	if err != nil || !ok {
		return nil, g.deny(ctx, addr, "is not a host and port the gate dials")
	}
	if !g.allow.allowsHostPort(host, port) {
		return nil, g.deny(ctx, addr, g.allow.denialReason())
	}
	addrs, err := g.lookup(ctx, addr, host, port)
	if err != nil {
		return nil, err
	}
	for _, ap := range addrs {
		if class, _, ok := g.admit(ap.Addr()); !ok {
			return nil, g.deny(ctx, connTarget(addr, ap.Addr()), refusal("resolves to", class))
		}
	}
	ctx = context.WithValue(ctx, dialNameKey{}, addr)
	var first error
	for _, ap := range addrs {
		conn, err := g.dialer.DialContext(ctx, network, ap.String())
		if err == nil {
			return conn, nil
		}
		var v *sandbox.Violation
		if errors.As(err, &v) {
			return nil, v // refused by control, already recorded
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// lookup returns the addresses to dial for host:port: the operator's
// override, the literal address, or the resolver's answer.
func (g *Gate) lookup(ctx context.Context, addr, host string, port int) ([]netip.AddrPort, error) {
	if ap, ok := g.resolve[addr]; ok {
		if ap.Port() == 0 {
			ap = netip.AddrPortFrom(ap.Addr(), uint16(port))
		}
		return []netip.AddrPort{ap}, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip, uint16(port))}, nil
	}
	ips, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	addrs := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		addrs[i] = netip.AddrPortFrom(ip, uint16(port))
	}
	return addrs, nil
}

// control is the dialer's Control hook: the last check, on the address the
// socket is about to connect to. It records the connect decision.
func (g *Gate) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	name, _ := ctx.Value(dialNameKey{}).(string)
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return g.deny(ctx, name+" ("+address+")", "is not an address the gate connects to")
	}
	target := connTarget(name, ap.Addr())
	class, grant, ok := g.admit(ap.Addr())
	if !ok {
		return g.deny(ctx, target, refusal("connects to", class))
	}
	reason := "connect"
	if class != "" {
		reason = "connect to a " + class + " address granted by the operator (" + grant.String() + ")"
	}
	g.allowed(ctx, target, reason)
	return nil
}

// admit decides whether the gate may connect to ip: a public address always,
// an address in a special class only inside an operator grant.
func (g *Gate) admit(ip netip.Addr) (class string, grant netip.Prefix, ok bool) {
	class = Classify(ip)
	if class == "" {
		return "", netip.Prefix{}, true
	}
	u := ip.Unmap().WithZone("")
	for _, p := range g.grants {
		if p.Contains(u) {
			return class, p, true
		}
	}
	return class, netip.Prefix{}, false
}

func refusal(verb, class string) string {
	return verb + " a " + class + " address, which the operator has not granted"
}

// connTarget names a connection in decisions: "host:port (ip)".
func connTarget(name string, ip netip.Addr) string {
	return name + " (" + ip.String() + ")"
}
