// Package hubserver is the hub: the marketplace and Teams relay server that
// stations talk to (`station hub serve`). It speaks the protocol of package
// hub (docs/hub-protocol.md) over net/http, keeps its state behind two
// interfaces — Store (SQLite on one machine) and Blobs (a directory) — and
// relays its event log to connected stations as server-sent events.
//
// What the hub guarantees, each backed by a test that attacks it:
//
//   - only the account "dave" publishes "dave/*", and only bundles whose
//     minisign signature by one of dave's registered keys covers the exact
//     manifest, wasm, id and version; a published version never changes;
//   - a team is read and changed only by its members, changed only by its
//     owners, never left without an owner, and a lockfile push applies only
//     on top of the revision it was based on;
//   - tokens and invite codes are stored only as SHA-256 hashes and never
//     logged; request bodies are bounded per endpoint; requests are rate
//     limited per account (per client address without a valid token);
//   - every refused request changes nothing and gets an error with a
//     numeric code that says why.
package hubserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/manifest"
)

// Defaults for Options.
const (
	DefaultMaxRequestBytes  = 1 << 20
	DefaultMaxWasmBytes     = 32 << 20
	DefaultMaxLockfileBytes = 8 << 20
	DefaultRatePerSecond    = 10
	DefaultBurst            = 100
	DefaultMaxStreams       = 8
	DefaultHeartbeat        = 15 * time.Second
	DefaultTokenRecheck     = 2 * time.Second
	DefaultInviteTTL        = 7 * 24 * time.Hour
	DefaultDrainTimeout     = 10 * time.Second
)

// Options configure a Server. Store and Blobs are required; every other
// zero field takes its default.
type Options struct {
	Store Store
	Blobs Blobs
	// Logger receives one line per request and the hub's own events
	// (default: discard). Secrets never reach it.
	Logger *slog.Logger
	// Limits are the hub's limits; zero fields take the Default* values.
	// MaxBundleBytes defaults to what a MaxWasmBytes module and the largest
	// manifest take in base64, plus 64 KiB.
	Limits hub.Limits
	// Install are the install limits a module is checked against at
	// publish (host.Inspect); zero fields take a station's defaults, so
	// the hub refuses what a station with the default configuration
	// refuses.
	Install host.InstallLimits
	// Heartbeat is the interval of keep-alive comments on event streams.
	Heartbeat time.Duration
	// TokenRecheck is how often the hub checks that the token of each open
	// event stream still exists, and ends the streams of one that does not
	// (a token revoked through this hub ends its streams at once; this
	// bounds the rest: a token deleted by the operator or another hub
	// process).
	TokenRecheck time.Duration
	// InviteTTL is how long an invite code stays valid.
	InviteTTL time.Duration
	// PublicURL is the hub's address as stations reach it
	// ("https://hub.example.com"; what `station hub login --url` is
	// given). Advisories name it and link published reports under it; a
	// hub without one leaves both out of them.
	PublicURL string
	// Now is the clock (default time.Now).
	Now func() time.Time

	// DrainDelay is how long Serve, once its context ends, keeps serving
	// with /readyz answering 503 draining before it tells the event
	// streams to reconnect and closes its listener: long enough for the
	// load balancer in front to see it not ready (a few of its probe
	// intervals) and send new requests elsewhere. Default 0: no load
	// balancer.
	DrainDelay time.Duration
	// DrainTimeout is how long the requests in flight get to finish after
	// that (default DefaultDrainTimeout); those still running then are cut
	// off.
	DrainTimeout time.Duration
	// MetricsListener, when set, is where Serve also serves
	// MetricsHandler — GET /metrics, /healthz and /readyz — until the end
	// of its drain. It is the operator's address (`station hub serve
	// --metrics-addr`), never the public one: /metrics answers 404 there.
	MetricsListener net.Listener
	// NodeStreams bounds the event streams this hub process holds open,
	// over all accounts (Limits.MaxStreams bounds one account's). A stream
	// past it is answered 503 unavailable with a Retry-After, so that the
	// station retries — behind a load balancer, likely on another node —
	// instead of the process running out of descriptors for everyone.
	// Default 0: no bound (`station hub serve` sets DefaultNodeStreams).
	NodeStreams int
}

// What DefaultNodeStreams leaves of the descriptor limit for everything but
// streams, and the least it returns.
const (
	nodeReserve    = 1024
	minNodeStreams = 64
)

// Server is a hub. It is an http.Handler; Serve runs it on a listener with
// timeouts and a graceful shutdown.
type Server struct {
	store     Store
	blobs     Blobs
	log       *slog.Logger
	limits    hub.Limits
	install   host.InstallLimits
	heartbeat time.Duration
	recheck   time.Duration
	inviteTTL time.Duration
	publicURL string // without a trailing slash; "" when not known
	now       func() time.Time

	drainDelay   time.Duration
	drainTimeout time.Duration
	metricsLn    net.Listener
	nodeStreams  int // Options.NodeStreams

	mux     *http.ServeMux
	opsMux  http.Handler
	limiter *limiter
	relay   *relay
	metrics *metrics
	ready   readiness

	// draining is set when a drain begins (/readyz answers 503 draining);
	// reconnect is closed when the event streams are to be told to
	// reconnect, which each does and then ends.
	draining      atomic.Bool
	reconnect     chan struct{}
	reconnectOnce sync.Once

	// stop ends event streams (Close, and the start of a shutdown: an open
	// stream never ends by itself).
	stop      context.Context
	stopAll   context.CancelFunc
	relayDone chan struct{}
	checkDone chan struct{}
	watchDone chan struct{}

	streamsMu sync.Mutex
	streams   map[string]int       // open event streams per account
	live      map[*stream]struct{} // every open event stream
	// detached counts the streams that took their connection from net/http
	// and outlive their handler (events): Shutdown does not wait for them,
	// Close and the drain do (waitDetached). detachedIdle is closed when
	// the count falls to 0.
	detached     int
	detachedIdle chan struct{}
}

// New returns a hub serving o.Store and o.Blobs. It starts the relay's
// fan-out; Close stops it.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Blobs == nil {
		return nil, errors.New("hub server: a Store and a Blobs are required")
	}
	s := &Server{store: o.Store, blobs: o.Blobs, log: o.Logger, limits: o.Limits, install: o.Install, heartbeat: o.Heartbeat, recheck: o.TokenRecheck, inviteTTL: o.InviteTTL, now: o.Now,
		drainDelay: o.DrainDelay, drainTimeout: o.DrainTimeout, metricsLn: o.MetricsListener, nodeStreams: o.NodeStreams,
		metrics: newMetrics(), reconnect: make(chan struct{}), ready: readiness{failed: map[string]string{}},
		streams: map[string]int{}, live: map[*stream]struct{}{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.PublicURL != "" {
		u, err := CheckPublicURL(o.PublicURL)
		if err != nil {
			return nil, fmt.Errorf("hub server: %w", err)
		}
		s.publicURL = u
	}
	if s.now == nil {
		s.now = time.Now
	}
	l := &s.limits
	setDefault(&l.MaxRequestBytes, DefaultMaxRequestBytes)
	setDefault(&l.MaxWasmBytes, DefaultMaxWasmBytes)
	setDefault(&l.MaxBundleBytes, (l.MaxWasmBytes+manifest.MaxFileSize+2)/3*4+64<<10)
	setDefault(&l.MaxLockfileBytes, DefaultMaxLockfileBytes)
	setDefault(&l.RatePerSecond, DefaultRatePerSecond)
	setDefault(&l.Burst, DefaultBurst)
	setDefault(&l.MaxStreams, DefaultMaxStreams)
	setDefault(&s.heartbeat, DefaultHeartbeat)
	setDefault(&s.recheck, DefaultTokenRecheck)
	setDefault(&s.inviteTTL, DefaultInviteTTL)
	setDefault(&s.drainTimeout, DefaultDrainTimeout)
	s.limiter = newLimiter(l.RatePerSecond, l.Burst, s.now)
	s.limiter.log = s.log
	s.limiter.fellBack = func() { s.metrics.rateFallbacks.inc(labels{}) }
	if sh, ok := s.store.(SharedLimits); ok {
		s.limiter.shared = sh
	}

	s.stop, s.stopAll = context.WithCancel(context.Background())
	last, err := s.store.LastSeq(s.stop)
	if err != nil {
		return nil, fmt.Errorf("hub server: %w", err)
	}
	s.relay = newRelay(s.store, s.log, s.metrics, last)
	s.relayDone = make(chan struct{})
	go func() {
		defer close(s.relayDone)
		s.relay.run(s.stop)
	}()
	s.checkDone = make(chan struct{})
	go func() {
		defer close(s.checkDone)
		s.recheckTokens(s.stop)
	}()
	s.watchDone = make(chan struct{})
	go func() {
		defer close(s.watchDone)
		if w, ok := s.store.(EventWatcher); ok {
			w.WatchEvents(s.stop, s.relay.notify, s.log)
		}
	}()
	s.routes()
	s.opsRoutes()
	return s, nil
}

// CheckPublicURL checks a hub's public URL (Options.PublicURL) and returns
// it without a trailing slash.
func CheckPublicURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("public URL %q: want an absolute http or https URL without credentials, query or fragment (https://hub.example.com)", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func setDefault[T int | int64 | float64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Limits returns the limits the server enforces.
func (s *Server) Limits() hub.Limits { return s.limits }

// Close ends every event stream and stops the relay. It does not close the
// Store or the Blobs, which the caller opened.
func (s *Server) Close() error {
	s.stopAll()
	s.cutStreams()
	s.waitDetached(context.Background())
	<-s.relayDone
	<-s.checkDone
	<-s.watchDone
	return nil
}

// Serve serves the hub on ln (and MetricsHandler on Options.MetricsListener)
// until ctx ends, then drains:
//
//  1. /readyz answers 503 draining, while everything else is served as
//     before for DrainDelay, so that a load balancer stops sending
//     requests here;
//  2. every event stream is told to reconnect — to the same URL, which the
//     load balancer now routes to another hub process — and ends;
//  3. the listener closes, and the requests in flight get DrainTimeout to
//     finish; the ones still running then are cut off;
//  4. the metrics listener closes.
//
// It closes the server (Close) before it returns. A drain returns nil,
// also when it cut requests off (the log says how many).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.httpServer(s)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var ops *http.Server
	opsErr := make(chan error, 1)
	if s.metricsLn != nil {
		ops = s.httpServer(s.opsMux)
		go func() { opsErr <- ops.Serve(s.metricsLn) }()
	}
	var err error
	select {
	case err = <-errc:
		s.draining.Store(true)
	case <-ctx.Done():
		err = s.drain(srv, errc)
	}
	if ops != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if ops.Shutdown(sctx) != nil {
			ops.Close()
		}
		cancel()
		<-opsErr
	}
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// drain runs steps 1 to 3 of Serve's drain on srv, whose Serve returns on
// errc, and returns that Serve's error or the drain's.
func (s *Server) drain(srv *http.Server, errc <-chan error) error {
	s.draining.Store(true)
	s.log.Info("hub draining: /readyz answers 503", "delay", s.drainDelay)
	if s.drainDelay > 0 {
		t := time.NewTimer(s.drainDelay)
		select {
		case <-t.C:
		case err := <-errc: // the listener failed: nothing left to wait for
			t.Stop()
			s.endStreamsForDrain()
			return err
		}
	}
	n := s.endStreamsForDrain()
	s.log.Info("hub shutting down: event streams told to reconnect, requests in flight finishing", "streams", n, "timeout", s.drainTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.drainTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err == nil && !s.waitDetached(sctx) {
		err = sctx.Err()
	}
	if err != nil {
		// The drain is bounded: what still runs is cut off, logged, and
		// no failure of Serve's.
		s.log.Warn("hub shutdown: requests still running after the drain timeout are cut off", "in_flight", s.metrics.inFlight.Load(), "timeout", s.drainTimeout)
		srv.Close()
		s.cutStreams()
	}
	return <-errc
}

// endStreamsForDrain tells every open event stream, and every one opened
// from now on, to reconnect, and returns how many were open.
func (s *Server) endStreamsForDrain() int {
	s.reconnectOnce.Do(func() { close(s.reconnect) })
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	return len(s.live)
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.observe(s.mux, w, r)
}

// endpoint says how a route is guarded.
type endpoint struct {
	// auth: the route needs an account.
	auth bool
	// body bounds the request body (0: the default MaxRequestBytes).
	body int64
	// stream: a long-lived response, without the per-request deadlines.
	stream bool
}

// call is one request in flight.
type call struct {
	w       *statusWriter
	r       *http.Request
	ctx     context.Context
	id      string // request id, for correlating a reply with the log
	client  string // rate-limit key of the client address
	account string // "" without a valid token
	token   Token  // the valid token (ID and Hash), when account is set
	body    int64
}

// handle registers pattern with the guards of e.
func (s *Server) handle(pattern string, e endpoint, h func(*call) error) {
	route := pattern[strings.IndexByte(pattern, ' ')+1:] // the path of "METHOD /path"
	if route == "/" {
		route = routeUnmatched // the catch-all: no endpoint
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
		}
		sw.route, sw.stream = route, e.stream
		c := &call{w: sw, r: r, ctx: r.Context(), id: requestID(), client: clientKey(r.RemoteAddr), body: e.body}
		if c.body == 0 {
			c.body = s.limits.MaxRequestBytes
		}
		c.w.Header().Set("Station-Hub-Request", c.id)
		c.w.Header().Set(hub.HeaderProtocol, strconv.Itoa(hub.ProtocolVersion))
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			if err := s.guard(c, e); err != nil {
				return err
			}
			return h(c)
		}()
		if err != nil {
			s.writeError(c, err)
		}
		s.logRequest(c, start, err)
	})
}

// guard checks the protocol version, authenticates, rate limits and sets
// the request's deadlines.
func (s *Server) guard(c *call, e endpoint) error {
	if v := c.r.Header.Get(hub.HeaderProtocol); v != "" && v != strconv.Itoa(hub.ProtocolVersion) {
		return hub.Errorf(hub.CodeProtocolUnsupported, "this hub speaks protocol %d, the client speaks %q: use a station and a hub that share a protocol version", hub.ProtocolVersion, clip(v))
	}
	if err := s.authenticate(c); err != nil {
		return err
	}
	key := c.client
	if c.account != "" {
		key = "account:" + c.account
	}
	if ok, wait := s.limiter.allow(c.ctx, key); !ok {
		what := "address"
		if c.account != "" {
			what = "account"
		}
		s.metrics.rateLimited.inc(labels{what})
		return rateLimited(wait)
	}
	if e.auth && c.account == "" {
		return hub.Errorf(hub.CodeUnauthenticated, "%s %s needs a token: log in with `station hub login`", c.r.Method, c.r.URL.Path)
	}
	if !e.stream {
		rc := http.NewResponseController(c.w)
		deadline := time.Now().Add(2 * time.Minute)
		_ = rc.SetReadDeadline(deadline) // not every ResponseWriter supports deadlines
		_ = rc.SetWriteDeadline(deadline)
	}
	return nil
}

func rateLimited(wait time.Duration) error {
	secs := int(wait.Seconds() + 0.999)
	if secs < 1 {
		secs = 1
	}
	e := hub.Errorf(hub.CodeRateLimited, "too many requests: retry in %d s", secs)
	e.RetryAfter = secs
	return e
}

func requestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status for the request log and the metrics,
// with the route and whether it is a stream (set by the route's handler).
// Unwrap lets http.ResponseController reach the connection (Flush,
// deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
	route  string
	stream bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeError answers with err's wire error. It is the one place errors
// become wire codes: an *hub.Error is sent as is; anything else is an
// internal failure whose detail goes to the log, not to the client.
func (s *Server) writeError(c *call, err error) {
	var he *hub.Error
	if !errors.As(err, &he) {
		if isUnavailable(err) && c.ctx.Err() == nil {
			he = hub.Errorf(hub.CodeUnavailable, "the hub's database or blob storage did not answer (request %s): retry in %d s; a change is applied whole or not at all", c.id, retryUnavailable)
			he.RetryAfter = retryUnavailable
		} else {
			he = hub.Errorf(hub.CodeInternal, "the hub failed (request %s); nothing was changed", c.id)
		}
	}
	if he.Name == "" {
		he.Name = he.Code.String()
	}
	if he.Code == hub.CodeInternal || he.Code == hub.CodeUnavailable {
		s.metrics.internal.inc(labels{c.w.route})
	}
	if he.RetryAfter > 0 {
		c.w.Header().Set("Retry-After", strconv.Itoa(he.RetryAfter))
	}
	if c.w.status != 0 {
		return // a stream already answered; the error is only logged
	}
	s.reply(c, he.Code.HTTPStatus(), hub.ErrorResponse{Error: he})
}

// reply writes v as the JSON body of the answer.
func (s *Server) reply(c *call, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encode reply", "request", c.id, "err", err)
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":1500,"name":"internal","message":"the hub failed to encode its answer"}}`)
	}
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	c.w.WriteHeader(status)
	c.w.Write(append(body, '\n'))
}

func (s *Server) logRequest(c *call, start time.Time, err error) {
	status := c.w.status
	attrs := []slog.Attr{
		slog.String("request", c.id),
		slog.String("method", c.r.Method),
		slog.String("path", c.r.URL.Path), // never the query or a header: no secret travels there, and none is logged
		slog.Int("status", status),
		slog.Duration("duration", s.now().Sub(start)),
		slog.String("client", c.client),
	}
	if c.account != "" {
		attrs = append(attrs, slog.String("account", c.account))
	}
	level := slog.LevelInfo
	var he *hub.Error
	switch {
	case errors.As(err, &he):
		attrs = append(attrs, slog.Int("code", int(he.Code)))
		if he.Code == hub.CodeInternal {
			level = slog.LevelError
		}
	case err != nil:
		code := hub.CodeInternal
		if status == http.StatusServiceUnavailable {
			code = hub.CodeUnavailable // writeError found a backend that did not answer
		}
		attrs = append(attrs, slog.Int("code", int(code)), slog.String("err", err.Error()))
		level = slog.LevelError
	}
	s.log.LogAttrs(c.ctx, level, "request", attrs...)
}

// decode reads the request body as JSON into v: at most c.body bytes, no
// unknown fields, nothing after the document.
func (c *call) decode(v any) error {
	if c.r.ContentLength > c.body {
		return hub.Errorf(hub.CodeTooLarge, "the request body is %d bytes; %s %s accepts at most %d", c.r.ContentLength, c.r.Method, c.r.URL.Path, c.body)
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.w, c.r.Body, c.body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr == nil {
			err = errors.New("data after the JSON document")
		} else if !errors.Is(terr, io.EOF) {
			err = terr
		}
	}
	if err == nil {
		return nil
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return hub.Errorf(hub.CodeTooLarge, "the request body is larger than %d bytes, the most %s %s accepts", c.body, c.r.Method, c.r.URL.Path)
	}
	if errors.Is(err, io.EOF) {
		return hub.Errorf(hub.CodeBadRequest, "the request body is empty; want a JSON document")
	}
	return hub.Errorf(hub.CodeBadRequest, "request body: %s", clip(err.Error()))
}

// clip bounds what an error message repeats of client input, and redacts
// anything shaped like a token or invite code (a secret pasted into the
// wrong field must not come back in an error a client may log).
func clip(s string) string {
	s = secretShape.ReplaceAllStringFunc(s, func(m string) string { return m[:len(hub.TokenPrefix)] + "[redacted]" })
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

var secretShape = regexp.MustCompile(regexp.QuoteMeta(hub.TokenPrefix) + `[A-Za-z0-9_-]+|` + regexp.QuoteMeta(hub.InvitePrefix) + `[A-Za-z0-9_-]+`)
