package netgate

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// Errors a request can fail with besides a *sandbox.Violation. Test with
// errors.Is.
var (
	// ErrInvalid marks a malformed request: a URL the gate will not read, a
	// header the guest may not set, a method that is not a token.
	ErrInvalid = errors.New("invalid request")
	// ErrTooLarge marks a request or response beyond its size limit.
	ErrTooLarge = errors.New("size limit exceeded")
)

// Limits.
const (
	// DefaultMaxResponseBytes is the response body limit when
	// Options.MaxResponseBytes is zero.
	DefaultMaxResponseBytes = 16 << 20
	// MaxRequestBytes bounds a request body.
	MaxRequestBytes = 16 << 20
	// MaxRedirects is the most redirects a gate follows for one request,
	// and the default.
	MaxRedirects = 10
	// maxHeaderBytes bounds the request header names and values together.
	maxHeaderBytes = 64 << 10
	// handshakeTimeout bounds a TLS handshake (within the call's deadline).
	handshakeTimeout = 10 * time.Second
)

// Operator holds the operator's network settings from the station config.
// It governs module egress only; the station's own clients never see it.
type Operator struct {
	// Resolve maps "host:port" (lower case, canonical; IPv6 in brackets) to
	// the address to dial instead of resolving the name. A zero port in the
	// value keeps the request's port. An override does not grant its
	// address: a loopback or private target still needs AllowPrivate.
	Resolve map[string]netip.AddrPort
	// RootCAs verifies servers; nil means the system roots. The station
	// passes the system roots plus the operator's extra CA.
	RootCAs *x509.CertPool
	// AllowPrivate grants ranges Classify would otherwise refuse (for
	// example 127.0.0.0/8 for fixtures, or a company network). An address
	// is compared in its unmapped form, so 127.0.0.0/8 also covers
	// ::ffff:127.0.0.1.
	AllowPrivate []netip.Prefix
	// Resolver resolves names that Resolve does not cover; nil means a
	// fresh &net.Resolver{} for each gate. net.DefaultResolver is never
	// used or changed.
	Resolver Resolver
}

// Resolver resolves a host name to addresses. *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configures a gate. Everything in it is bound when New returns and
// stays fixed for the gate's life.
type Options struct {
	// Module is the id of the module the gate serves; every decision and
	// violation names it.
	Module string
	// Allow is the module's compiled allowlist; nil allows nothing.
	Allow *Allowlist
	// Operator holds the operator's settings; nil means none (system roots,
	// no overrides, no grants).
	Operator *Operator
	// Recorder receives every decision, allowed and denied; nil discards
	// them. The command name of a decision comes from
	// sandbox.CommandFrom(ctx).
	Recorder sandbox.Recorder
	// MaxResponseBytes bounds a response body; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxRedirects is how many redirects to follow, at most MaxRedirects;
	// 0 means MaxRedirects and a negative value returns every redirect to
	// the guest unfollowed.
	MaxRedirects int
	// Secrets are the module's secrets (secret.go) and SecretSource gives
	// their values; a gate with secrets needs a source.
	Secrets      []Secret
	SecretSource SecretSource
}

// Gate performs HTTP requests for one module. It owns its transport (its own
// connection pool, TLS session cache and dialer, no proxy, no cookie jar),
// so nothing is shared with another module or with the station's clients. A
// Gate is safe for concurrent use.
type Gate struct {
	module       string
	allow        *Allowlist
	resolve      map[string]netip.AddrPort
	grants       []netip.Prefix
	resolver     Resolver
	rec          sandbox.Recorder
	maxBody      int64
	maxRedirects int
	secrets      *secrets
	dialer       net.Dialer
	tls          *tls.Config // per gate: its own session cache
	transport    *http.Transport
}

// New binds opts into a gate. It validates the operator's settings and
// copies them, so later changes to opts or *opts.Operator have no effect
// (except on the contents of RootCAs, which is shared).
func New(opts Options) (*Gate, error) {
	if opts.Module == "" {
		return nil, errors.New("netgate: a module id is required")
	}
	if opts.MaxRedirects > MaxRedirects {
		return nil, fmt.Errorf("netgate: module %s: MaxRedirects %d exceeds %d", opts.Module, opts.MaxRedirects, MaxRedirects)
	}
	g := &Gate{
		module:       opts.Module,
		allow:        opts.Allow,
		rec:          opts.Recorder,
		maxBody:      opts.MaxResponseBytes,
		maxRedirects: opts.MaxRedirects,
	}
	if g.rec == nil {
		g.rec = sandbox.Discard
	}
	var err error
	if g.secrets, err = compileSecrets(opts.Module, opts.Secrets, opts.SecretSource); err != nil {
		return nil, err
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxResponseBytes
	}
	if g.maxRedirects == 0 {
		g.maxRedirects = MaxRedirects
	}
	op := opts.Operator
	if op == nil {
		op = &Operator{}
	}
	g.resolver = op.Resolver
	if g.resolver == nil {
		g.resolver = &net.Resolver{}
	}
	g.resolve = make(map[string]netip.AddrPort, len(op.Resolve))
	for k, v := range op.Resolve {
		host, port, err := net.SplitHostPort(k)
		p, ok := parsePort(port)
		if err != nil || !ok || host == "" {
			return nil, fmt.Errorf("netgate: resolve override %q: want \"host:port\"", k)
		}
		if !v.Addr().IsValid() {
			return nil, fmt.Errorf("netgate: resolve override %q: no address", k)
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		if ip, err := netip.ParseAddr(host); err == nil {
			host = ip.String()
		}
		key := net.JoinHostPort(host, strconv.Itoa(p))
		if prev, dup := g.resolve[key]; dup && prev != v {
			return nil, fmt.Errorf("netgate: resolve overrides for %s disagree (%v, %v)", key, prev, v)
		}
		g.resolve[key] = v
	}
	for _, p := range op.AllowPrivate {
		if !p.IsValid() {
			return nil, fmt.Errorf("netgate: allow-private prefix %v is not valid", p)
		}
		g.grants = append(g.grants, p.Masked())
	}

	g.dialer = net.Dialer{
		Timeout:        30 * time.Second,
		KeepAlive:      30 * time.Second,
		ControlContext: g.control,
	}
	g.tls = &tls.Config{
		RootCAs:            op.RootCAs,
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{"h2", "http/1.1"},
		ClientSessionCache: tls.NewLRUClientSessionCache(64),
	}
	g.transport = &http.Transport{
		Proxy:          nil, // never from the environment
		DialContext:    g.dial,
		DialTLSContext: g.dialTLS,
		// dialTLS makes every TLS connection with g.tls; the transport
		// reads this copy only to set up HTTP/2.
		TLSClientConfig:        g.tls.Clone(),
		ForceAttemptHTTP2:      true,
		DisableCompression:     true, // the guest's Accept-Encoding goes out as written
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	return g, nil
}

// Close closes the gate's idle connections. The gate stays usable.
func (g *Gate) Close() { g.transport.CloseIdleConnections() }

// outgoing is a request that passed the shape checks, as it goes out on the
// current hop.
type outgoing struct {
	method string
	target target
	header http.Header
	body   []byte
}

// callKey carries the call's context to the dialer, which the transport runs
// on a context detached from the request's cancellation.
type callKey struct{}

// Do performs one request under the gate. ctx carries the call's deadline,
// which bounds the whole request: resolution, connection, redirects and the
// response body.
//
// A request the allowlist or the address checks refuse returns a
// *sandbox.Violation (capability sandbox.Network). A malformed request wraps
// ErrInvalid; this includes a URL the gate will not read (userinfo,
// backslashes, non-canonical numeric hosts, ...), a header the guest may not
// set (Host, hop-by-hop, proxy and framing headers), an invalid header name
// or value and a CONNECT or TRACE method. A request or response over its
// limit is a *sandbox.LimitError (naming the module, the target and the
// limit) that wraps ErrTooLarge, a passed deadline wraps context.DeadlineExceeded,
// and any other failure is a plain error. Every decision, including the
// refusal of a malformed request, is recorded.
func (g *Gate) Do(ctx context.Context, req *abi.HTTPRequest) (*abi.HTTPResponse, error) {
	out, err := g.prepare(req)
	if err != nil {
		what := "(no request)"
		if req != nil {
			what = redactRaw(req.URL)
		}
		var se *sizeError
		if errors.As(err, &se) {
			// A limit, not a denial: recorded and returned naming the
			// module, the target and the limit.
			return nil, g.exceed(ctx, what, se.what, se.limit)
		}
		v := sandbox.Deny(g.module, sandbox.Network, what, err.Error())
		g.rec.Record(v.Decision(sandbox.CallFrom(ctx)))
		return nil, err
	}
	ctx = context.WithValue(ctx, callKey{}, ctx)
	var from *target
	var vals *secretValues // the module's secret values, read once per request
	var red *redactor      // the same, to take out of what comes back
	if len(g.secrets.list) > 0 {
		vals = g.values(ctx)
		// Every value, not only those this request carries: a server may
		// echo one it stored earlier.
		red = newRedactor(vals.vals)
	}
	for hops := 0; ; hops++ {
		if err := g.decide(ctx, &out.target, from); err != nil {
			return nil, err
		}
		hop := out
		if vals != nil {
			// After the allowlist decision, on every hop: a redirect is a
			// new destination for whatever placeholders still travel.
			uses := out.uses()
			if reason := g.checkSecrets(uses, &out.target); reason != "" {
				return nil, g.deny(ctx, out.target.name, reason)
			}
			if len(uses) > 0 {
				if err := vals.need(g.module, uses); err != nil {
					return nil, err
				}
				hop = out.substituted(vals.vals)
			}
		}
		resp, err := g.transport.RoundTrip(hop.request(ctx))
		if err != nil {
			return nil, red.err(g.failed(ctx, out, "", err))
		}
		loc := location(resp)
		if loc == "" || g.maxRedirects < 0 {
			return g.response(ctx, out, resp, red)
		}
		drain(resp.Body)
		if hops >= g.maxRedirects {
			// A limit, recorded like the others (and like them naming the
			// module, the target and the limit).
			e := sandbox.Exceed(g.module, sandbox.Network, Redact(&out.target.url), fmt.Sprintf("stopped after %d redirects, the limit of one request", g.maxRedirects), int64(g.maxRedirects), nil)
			g.rec.Record(e.Decision(sandbox.CallFrom(ctx)))
			return nil, e
		}
		next, err := out.target.resolve(loc)
		if err != nil {
			return nil, g.deny(ctx, redactRaw(loc), "is a redirect the gate will not follow: "+err.Error()+" (redirect from "+out.target.name+")")
		}
		if out.target.scheme == "https" && next.scheme == "http" {
			return nil, g.deny(ctx, next.name, "is a redirect from https to http (redirect from "+out.target.name+"); downgrades are refused")
		}
		prev := out.target
		from = &prev
		out.follow(next, resp.StatusCode)
	}
}

// decide consults the allowlist for t and records the decision. from is the
// previous hop for a redirect, nil for the guest's own request.
func (g *Gate) decide(ctx context.Context, t *target, from *target) error {
	i := g.allow.match(t.scheme, t.host, t.port)
	if i < 0 {
		reason := g.allow.denialReason()
		if from != nil {
			reason += " (redirect from " + from.name + ")"
		}
		return g.deny(ctx, t.name, reason)
	}
	reason := g.allow.reasons[i]
	if from != nil {
		reason += " (redirect from " + from.name + ")"
	}
	g.allowed(ctx, t.name, reason)
	return nil
}

// allowed records an allowed decision. target must already be safe to print.
func (g *Gate) allowed(ctx context.Context, target, reason string) {
	g.rec.Record(sandbox.Decision{
		Time:       time.Now(),
		Module:     g.module,
		Command:    sandbox.CommandFrom(ctx),
		Trace:      sandbox.CallFrom(ctx).TraceName(),
		Capability: sandbox.Network,
		Target:     target,
		Allowed:    true,
		Reason:     reason,
	})
}

// deny records a denial and returns it as a violation.
func (g *Gate) deny(ctx context.Context, target, reason string) *sandbox.Violation {
	v := sandbox.Deny(g.module, sandbox.Network, target, reason)
	g.rec.Record(v.Decision(sandbox.CallFrom(ctx)))
	return v
}

// exceed records a refusal over a limit of limit bytes and returns it as a
// *sandbox.LimitError that wraps ErrTooLarge. target must be redacted. The
// gate's size limits are the station's own: no key raises them.
func (g *Gate) exceed(ctx context.Context, target, reason string, limit int64) *sandbox.LimitError {
	e := sandbox.Exceed(g.module, sandbox.Network, target, reason, limit, ErrTooLarge)
	e.Bytes = true
	g.rec.Record(e.Decision(sandbox.CallFrom(ctx)))
	return e
}

// sizeError is a request over a size limit (its body, headers or URL),
// found before the gate knows the call; Do turns it into a recorded
// *sandbox.LimitError. Every ErrTooLarge of prepare is one.
type sizeError struct {
	what  string // "request body of 17 bytes exceeds the limit of 16 bytes"
	limit int64
}

func (e *sizeError) Error() string        { return ErrTooLarge.Error() + ": " + e.what }
func (e *sizeError) Is(target error) bool { return target == ErrTooLarge }

// failed turns a transport or body error into the error Do returns.
func (g *Gate) failed(ctx context.Context, out *outgoing, step string, err error) error {
	var v *sandbox.Violation
	if errors.As(err, &v) {
		return v // already recorded where it was decided
	}
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		err = cerr
	}
	return fmt.Errorf("%s %s: %s%w", out.method, Redact(&out.target.url), step, err)
}

// prepare checks the shape of req and builds the first hop from it.
func (g *Gate) prepare(req *abi.HTTPRequest) (*outgoing, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: no request", ErrInvalid)
	}
	out := &outgoing{method: req.Method, body: req.Body}
	if out.method == "" {
		out.method = http.MethodGet
	}
	if len(out.method) > 32 || !validToken(out.method) {
		return nil, fmt.Errorf("%w: method %q is not a valid HTTP method", ErrInvalid, out.method)
	}
	if strings.EqualFold(out.method, "CONNECT") || strings.EqualFold(out.method, "TRACE") || strings.EqualFold(out.method, "TRACK") {
		return nil, fmt.Errorf("%w: method %s is not allowed", ErrInvalid, strings.ToUpper(out.method))
	}
	if len(req.Body) > MaxRequestBytes {
		return nil, &sizeError{fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", len(req.Body), MaxRequestBytes), MaxRequestBytes}
	}
	t, err := checkURL(req.URL)
	if err != nil {
		return nil, err
	}
	out.target = t
	out.header, err = checkHeader(req.Headers)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkHeader validates the guest's headers and returns them in canonical
// form.
func checkHeader(in map[string][]string) (http.Header, error) {
	h := make(http.Header, len(in))
	size := 0
	for name, values := range in {
		if !validToken(name) {
			return nil, fmt.Errorf("%w: header name %q is not a valid token", ErrInvalid, name)
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if reserved(key) {
			return nil, fmt.Errorf("%w: header %q is set by the station; a module cannot set it", ErrInvalid, key)
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("%w: header %q has a value with CR, LF, NUL or another control character", ErrInvalid, key)
			}
			size += len(key) + len(v) + 4
		}
		if size > maxHeaderBytes {
			return nil, &sizeError{fmt.Sprintf("request headers exceed the limit of %d bytes", maxHeaderBytes), maxHeaderBytes}
		}
		h[key] = append(h[key], values...)
	}
	return h, nil
}

// reserved reports whether a request header (canonical name) is one the
// guest may not set: the station derives it from the checked URL or the
// body, or it is hop-by-hop, proxy or framing information.
func reserved(key string) bool {
	switch key {
	case "Host", "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding",
		"Upgrade", "Content-Length", "Expect", "Http2-Settings":
		return true
	}
	return strings.HasPrefix(key, "Proxy-")
}

// request builds the *http.Request for the current hop from the checked
// target: its URL, and Host taken from that URL.
func (o *outgoing) request(ctx context.Context) *http.Request {
	u := o.target.url
	r := &http.Request{
		Method:     o.method,
		URL:        &u,
		Host:       u.Host,
		Header:     o.header,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
	}
	if len(o.body) > 0 {
		body := o.body
		r.ContentLength = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return r.WithContext(ctx)
}

// follow moves o to the redirect target next. As in net/http's client, 301,
// 302 and 303 drop the body and turn any method but GET and HEAD into GET;
// 307 and 308 repeat the request as it was. Credentials are dropped when the
// origin changes and stay dropped.
func (o *outgoing) follow(next target, status int) {
	header := o.header.Clone()
	if status != http.StatusTemporaryRedirect && status != http.StatusPermanentRedirect {
		if o.method != http.MethodGet && o.method != http.MethodHead {
			o.method = http.MethodGet
		}
		o.body = nil
		header.Del("Content-Type")
		header.Del("Content-Encoding")
	}
	if !o.target.sameOrigin(&next) {
		for k := range header {
			if !crossOriginSafe[k] {
				delete(header, k)
			}
		}
	}
	o.header = header
	o.target = next
}

// crossOriginSafe are the only guest headers kept when a redirect changes the
// origin. Everything else — Authorization, Cookie, and any custom header such
// as X-Api-Key that may carry a credential — is dropped and stays dropped:
// the gate cannot know which of a module's headers are secrets, so it keeps
// only those that cannot be.
var crossOriginSafe = map[string]bool{
	"Accept": true, "Accept-Language": true, "Content-Language": true,
	"Content-Type": true, "User-Agent": true, "Cache-Control": true,
}

// location returns the Location of a redirect the gate follows, or "".
func location(resp *http.Response) string {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location")
	}
	return ""
}

// drain reads a little of a body we do not need so its connection can be
// reused, then closes it.
func drain(body io.ReadCloser) {
	io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

// response reads the final response within the body limit.
func (g *Gate) response(ctx context.Context, out *outgoing, resp *http.Response, red *redactor) (*abi.HTTPResponse, error) {
	defer resp.Body.Close()
	tooLarge := func() error {
		return g.exceed(ctx, Redact(&out.target.url), fmt.Sprintf("%s response body is larger than the limit of %d bytes", out.method, g.maxBody), g.maxBody)
	}
	var body []byte
	var err error
	switch n := resp.ContentLength; {
	case n > g.maxBody:
		return nil, tooLarge()
	case n == 0 || out.method == http.MethodHead:
		// no body
	case n > 0:
		body = make([]byte, n)
		_, err = io.ReadFull(resp.Body, body)
	case n < 0:
		body, err = io.ReadAll(io.LimitReader(resp.Body, g.maxBody+1))
		if int64(len(body)) > g.maxBody {
			return nil, tooLarge()
		}
	}
	if err != nil {
		return nil, red.err(g.failed(ctx, out, "read response body: ", err))
	}
	if red != nil {
		// What the server echoes of a secret goes back as its placeholder.
		body = red.bytes(body)
		red.header(resp.Header)
	}
	return &abi.HTTPResponse{
		Status:  resp.StatusCode,
		Headers: resp.Header,
		Body:    body,
		URL:     red.string(out.target.url.String()),
	}, nil
}

// validToken reports whether s is an RFC 9110 token (a method or a header
// name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validHeaderValue reports whether v is a header value without CR, LF, NUL
// or any other control character except tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
