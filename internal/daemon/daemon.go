// Package daemon is `station serve`: a long-running station on localhost
// that keeps modules compiled and warm and answers an HTTP API (docs/api.md,
// docs/openapi.yaml). It is one more caller of the station's single dispatch
// entry point, Station.Run: nothing here decides what a module may do.
//
// Who may drive it: the API listens on a loopback address and every request
// must carry the bearer token the daemon writes, readable only by the
// station's user, to STATION_HOME/daemon.json. Requests whose Host header is
// not the daemon's own loopback address (DNS rebinding) and requests a
// browser marks as coming from a web page (Origin, Sec-Fetch-Site) are
// refused before the token is even looked at. See RATIONALE.md, "Why does
// the daemon check Host and Origin as well as a token?".
//
// Who answers: the one endpoint without a token, GET /v1/identity, returns
// an HMAC of the token over a nonce the client chose. The client (Client)
// asks it on every connection it opens and sends the token on that
// connection only once the answer proves the daemon knows it, so a program
// that took a dead daemon's port never receives the token. See RATIONALE.md,
// "Why does the client make the daemon prove it knows the token before
// sending it?".
package daemon

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/units"
)

// APIVersion is the version of the HTTP API, the path prefix of every
// endpoint (/v1/...).
//
// History:
//   - 1: health, modules, run, audit, reload, workflows; identity (added
//     within v1: a client older than it never asks it, a daemon older than
//     it answers it 401 and a newer client then runs in its own process);
//     ui/signin (added within v1, for station ui: a daemon older than it
//     answers 404, and station ui says to restart it).
const APIVersion = 1

// StateFile is the name, in STATION_HOME, of the file that tells clients
// where the daemon listens and which token it accepts. It is written with
// mode 0600 and removed when the daemon stops.
const StateFile = "daemon.json"

// MCPPath is where the daemon serves MCP's streamable HTTP transport
// (Options.MCP; docs/mcp.md).
const MCPPath = "/mcp"

// MaxRequestBytes bounds a request body.
const MaxRequestBytes = 16 << 20

// State is the content of StateFile.
type State struct {
	Addr    string    `json:"addr"` // host:port, loopback
	Token   string    `json:"token"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
	// Instance is a random id of the daemon process that /v1/health
	// echoes: a client that finds another program on Addr (the daemon died
	// without removing this file) refuses it.
	Instance string `json:"instance"`
}

// Options configure a Server.
type Options struct {
	// Station is the open station the daemon serves. The caller closes it
	// after Serve returns.
	Station *station.Station
	// Logger receives request failures and lifecycle lines.
	Logger *slog.Logger
	// Version is reported by /v1/health.
	Version string
	// Workflows, if set, serves the /v1/workflows endpoints.
	Workflows WorkflowService
	// Background are tasks that run while the daemon serves (the hub relay
	// runner): each starts once the API listens and gets a context that
	// ends when the daemon stops, and Serve waits for them to return.
	Background []func(ctx context.Context)
	// Ready, if set, is called once the API answers and the state file is
	// written: clients started after it find the daemon.
	Ready func()
	// MCP, if set, is served at /mcp (every method): the MCP server's
	// streamable HTTP transport (internal/mcpserver), behind the same
	// checks of Host, Origin and token as the API. If it has a
	// CloseSessions method, Serve calls it when it stops, before it waits
	// for the requests in flight.
	MCP http.Handler
	// UI, if set, is the dashboard (internal/ui), served at UIPrefix with
	// its own sign-in (a session cookie, not the token): the daemon checks
	// only the Host header of its requests before handing them over, and
	// POST /v1/ui/signin (behind the token) makes its one-time codes.
	UI UI
}

// UI is the dashboard as the daemon serves it.
type UI interface {
	http.Handler
	// NewSignInCode makes a one-time code for the link SignInPath?code=.
	NewSignInCode() (code string, expires time.Time)
}

// UIPrefix is where the dashboard is served.
const UIPrefix = "/ui/"

// Server is the daemon's HTTP API over one station.
type Server struct {
	st      *station.Station
	log     *slog.Logger
	version string
	wf      WorkflowService
	bg      []func(context.Context)
	ready   func()
	mcp     http.Handler
	ui      UI
	mcpStop context.Context // ended when Serve begins to stop: ends MCP requests and the dashboard's event streams
	stopMCP context.CancelFunc
	token   string
	inst    string // State.Instance
	addr    string // the listener's address, for the Host check
	started time.Time
	mux     *http.ServeMux

	inflight sync.WaitGroup
}

// New builds a server with a fresh random token.
func New(o Options) (*Server, error) {
	if o.Station == nil {
		return nil, errors.New("daemon: a station is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var b [48]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("daemon: token: %w", err)
	}
	s := &Server{st: o.Station, log: o.Logger, version: o.Version, wf: o.Workflows, bg: o.Background, ready: o.Ready, mcp: o.MCP, ui: o.UI,
		token: base64.RawURLEncoding.EncodeToString(b[:32]), inst: base64.RawURLEncoding.EncodeToString(b[32:]), started: time.Now().UTC()}
	s.mcpStop, s.stopMCP = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

// Token returns the bearer token the server accepts.
func (s *Server) Token() string { return s.token }

// Listen opens a loopback listener on addr ("127.0.0.1:7420"; port 0 picks
// one). Addresses that are not loopback are refused: the API is for the
// station's own user on this machine.
func Listen(addr string) (net.Listener, error) {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w (want host:port, e.g. 127.0.0.1:7420)", addr, err)
	}
	ip := net.ParseIP(h)
	if h == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
		addr = net.JoinHostPort(ip.String(), addr[strings.LastIndexByte(addr, ':')+1:])
	}
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen %s: the daemon listens only on a loopback address (127.0.0.1 or ::1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w (is another daemon running? pick another port with --addr)", addr, err)
	}
	return ln, nil
}

// Serve answers requests on ln until ctx ends, then stops accepting, waits
// for requests in flight (at most grace) and returns. While it serves, the
// state file in the station home names its address and token.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	s.addr = ln.Addr().String()
	statePath := filepath.Join(s.st.Home, StateFile)
	if err := writeState(statePath, State{Addr: s.addr, Token: s.token, PID: os.Getpid(), Started: s.started, Version: s.version, Instance: s.inst}); err != nil {
		ln.Close()
		return err
	}
	defer removeState(statePath, s.token)
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:       connContext,
	}
	// A connection accepted but still without a request (StateNew) holds
	// Shutdown for five seconds, the net/http rule, however short the
	// grace: a client that reconnects as the daemon stops (an MCP client's
	// event stream does) would make every stop take that long, or fail.
	// Such connections are closed when the stop begins; they carry nothing.
	var fresh connSet
	srv.ConnState = fresh.track
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("daemon listening", "addr", s.addr, "state", statePath)
	if s.ready != nil {
		s.ready()
	}
	bgctx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	for _, f := range s.bg {
		bg.Go(func() { f(bgctx) })
	}
	defer func() { stopBackground(); bg.Wait() }()
	select {
	case err := <-errc:
		return fmt.Errorf("daemon: %w", err)
	case <-ctx.Done():
	}
	s.stopMCP() // MCP requests in flight, event streams above all, end now
	if c, ok := s.mcp.(interface{ CloseSessions() }); ok {
		c.CloseSessions() // their event streams would hold Shutdown for the whole grace
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	fresh.closeAll() // from now on, also each new one as it comes
	err := <-shut
	s.inflight.Wait()
	if err != nil {
		return fmt.Errorf("daemon: shutdown: %w", err)
	}
	return nil
}

// writeState writes the state file atomically with mode 0600.
func writeState(path string, st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".daemon-*.json")
	if err != nil {
		return fmt.Errorf("daemon: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("daemon: write %s: %w", path, err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("daemon: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("daemon: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("daemon: write %s: %w", path, err)
	}
	return nil
}

// removeState removes the state file if it is still this daemon's.
func removeState(path, token string) {
	if st, err := readState(path); err == nil && st.Token == token {
		os.Remove(path)
	}
}

func readState(path string) (State, error) {
	var st State
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// endpoint is one route of the API.
type endpoint struct {
	pattern string // net/http pattern: "METHOD /path"
	handler http.HandlerFunc
}

// endpoints lists the API; docs/openapi.yaml describes exactly these
// (TestOpenAPIListsEveryRoute).
func (s *Server) endpoints() []endpoint {
	return []endpoint{
		{"GET /v1/identity", s.identity},
		{"GET /v1/health", s.health},
		{"GET /v1/modules", s.modules},
		{"GET /v1/modules/{owner}/{slug}", s.module},
		{"POST /v1/modules/{owner}/{slug}/reload", s.reload},
		{"POST /v1/run", s.run},
		{"GET /v1/audit", s.audit},
		{"POST /v1/workflows/check", s.workflowCheck},
		{"POST /v1/workflows/runs", s.workflowStart},
		{"GET /v1/workflows/runs", s.workflowRuns},
		{"GET /v1/workflows/runs/{id}", s.workflowRun},
		{"POST /v1/ui/signin", s.uiSignIn},
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	for _, e := range s.endpoints() {
		m.HandleFunc(e.pattern, e.handler)
	}
	if s.mcp != nil {
		// An MCP request (its event stream above all) ends when the
		// daemon begins to stop, not when the client lets go.
		m.HandleFunc(MCPPath, func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.mcpStop, cancel)()
			s.mcp.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, &APIError{Code: CodeNotFound, Message: fmt.Sprintf("no endpoint %s %s (see docs/api.md)", r.Method, r.URL.Path)})
	})
	s.mux = m
}

// ServeHTTP checks who is asking, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if why := checkPeer(r.Context(), os.Getuid()); why != "" {
		s.log.Warn("daemon: request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "why", why)
		writeError(w, http.StatusForbidden, &APIError{Code: CodeForbidden, Message: why})
		return
	}
	if s.ui != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, UIPrefix)) {
		s.serveUI(w, r)
		return
	}
	if e := s.admit(r); e != nil {
		s.log.Warn("daemon: request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "why", e.Message)
		status := http.StatusForbidden
		if e.Code == CodeUnauthorized {
			status = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Bearer realm="station"`)
		}
		writeError(w, status, e)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
	s.mux.ServeHTTP(w, r)
}

// serveUI hands a dashboard request over once its Host header names this
// daemon (DNS rebinding): the dashboard checks its session, its CSRF token
// and where a browser says the request comes from itself. Its requests end
// when the daemon stops, as MCP's do (an event stream would hold the stop).
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	if !s.ownHost(r.Host) {
		s.log.Warn("daemon: dashboard request refused", "path", r.URL.Path, "host", r.Host, "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "Host %q is not this daemon's address (DNS rebinding?): open the dashboard with station ui\n", r.Host)
		return
	}
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, UIPrefix, http.StatusMovedPermanently)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.mcpStop, cancel)()
	s.ui.ServeHTTP(w, r.WithContext(ctx))
}

// UISignIn is the answer of POST /v1/ui/signin: a one-time sign-in link to
// the dashboard.
type UISignIn struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

func (s *Server) uiSignIn(w http.ResponseWriter, r *http.Request) {
	if s.ui == nil {
		writeError(w, http.StatusNotFound, &APIError{Code: CodeNotFound, Message: "this daemon serves no dashboard"})
		return
	}
	code, exp := s.ui.NewSignInCode()
	writeJSON(w, http.StatusOK, UISignIn{URL: "http://" + s.addr + UIPrefix + "signin?code=" + code, Expires: exp.UTC()})
}

// admit refuses requests from web pages and other hosts' names, then
// requests without the token — except GET /v1/identity, which is how a
// client learns whether to send it.
func (s *Server) admit(r *http.Request) *APIError {
	if r.Header.Get("Origin") != "" {
		return &APIError{Code: CodeForbidden, Message: "requests from web pages are refused (Origin header present)"}
	}
	if v := r.Header.Get("Sec-Fetch-Site"); v != "" && v != "none" {
		return &APIError{Code: CodeForbidden, Message: "requests from web pages are refused (Sec-Fetch-Site: " + v + ")"}
	}
	if !s.ownHost(r.Host) {
		return &APIError{Code: CodeForbidden, Message: fmt.Sprintf("Host %q is not this daemon's address (DNS rebinding?)", r.Host)}
	}
	if _, pattern := s.mux.Handler(r); pattern == identityPattern {
		return nil
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
		return &APIError{Code: CodeUnauthorized, Message: "missing or wrong token (the CLI reads it from STATION_HOME/" + StateFile + ")"}
	}
	return nil
}

// ownHost reports whether the Host header names the daemon's own loopback
// address: 127.0.0.1:PORT, [::1]:PORT or localhost:PORT.
func (s *Server) ownHost(h string) bool {
	_, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return false
	}
	hh, hp, err := net.SplitHostPort(h)
	if err != nil || hp != port {
		return false
	}
	if hh == "localhost" {
		return true
	}
	ip := net.ParseIP(hh)
	return ip != nil && ip.IsLoopback()
}

// identityPattern is the route that needs no token.
const identityPattern = "GET " + IdentityPath

// IdentityPath is the endpoint where a daemon proves it knows its token:
// GET IdentityPath?nonce=N answers Identity with Proof = IdentityProof(token, N).
const IdentityPath = "/v1/identity"

// Nonce bounds: the nonce is 22 to 128 characters of the base64url alphabet
// (the client sends 32 random bytes, 43 characters).
const (
	minNonce = 22
	maxNonce = 128
)

// identityLabel separates the proof from any other use of the token.
const identityLabel = "station-daemon-identity/v1\n"

// Identity is the answer of GET /v1/identity. It holds nothing a caller
// without the token could use: not the instance id, the pid or the home.
type Identity struct {
	APIVersion int `json:"api_version"`
	// Proof is IdentityProof(token, nonce), lowercase hex.
	Proof string `json:"proof"`
}

// IdentityProof is what a daemon holding token answers for nonce:
// hex(HMAC-SHA256(key = token, "station-daemon-identity/v1\n" + nonce)).
func IdentityProof(token, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(identityLabel))
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// validNonce reports whether n is a nonce the daemon answers for.
func validNonce(n string) bool {
	if len(n) < minNonce || len(n) > maxNonce {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (s *Server) identity(w http.ResponseWriter, r *http.Request) {
	n := r.URL.Query().Get("nonce")
	if !validNonce(n) {
		writeError(w, http.StatusBadRequest, &APIError{Code: CodeBadRequest, Message: fmt.Sprintf("nonce: want %d to %d characters of base64url (A-Z a-z 0-9 - _), e.g. 32 random bytes", minNonce, maxNonce)})
		return
	}
	writeJSON(w, http.StatusOK, Identity{APIVersion: APIVersion, Proof: IdentityProof(s.token, n)})
}

// Health is the answer of GET /v1/health.
type Health struct {
	APIVersion int       `json:"api_version"`
	Version    string    `json:"version"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Home       string    `json:"home"`
	Loaded     []string  `json:"loaded"`   // modules warm in this daemon
	Instance   string    `json:"instance"` // State.Instance
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{APIVersion: APIVersion, Version: s.version, PID: os.Getpid(), Started: s.started, Home: s.st.Home, Loaded: s.st.Host.Modules(), Instance: s.inst})
}

// Module is one installed module as the API shows it.
type Module struct {
	ID          string              `json:"id"`
	Version     string              `json:"version"`
	Digest      string              `json:"digest"`
	InstalledAt time.Time           `json:"installed_at"`
	Loaded      bool                `json:"loaded"`
	Permissions station.Permissions `json:"permissions"`
	Commands    []string            `json:"commands,omitempty"`
}

func (s *Server) moduleInfo(m store.Module) Module {
	out := Module{ID: m.ID, Version: m.Version, Digest: m.Digest, InstalledAt: m.InstalledAt, Loaded: s.st.Host.Module(m.ID) != nil}
	json.Unmarshal(m.Approved, &out.Permissions)
	if man, err := s.st.ParseManifest(m.ID+"/module.yaml", m.Manifest); err == nil {
		for _, c := range man.Commands {
			out.Commands = append(out.Commands, c.Name)
		}
	}
	return out
}

func (s *Server) modules(w http.ResponseWriter, r *http.Request) {
	ms, err := s.st.Store.Modules(r.Context())
	if err != nil {
		writeFailure(w, s.log, err)
		return
	}
	out := make([]Module, 0, len(ms))
	for _, m := range ms {
		out = append(out, s.moduleInfo(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) module(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("owner") + "/" + r.PathValue("slug")
	m, err := s.st.Store.Module(r.Context(), id)
	if err != nil {
		writeFailure(w, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, s.moduleInfo(m))
}

// reload drops the warm copy of a module, so that the next call loads it
// from the store again — what the CLI asks after it installed, upgraded or
// removed the module in its own process.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("owner") + "/" + r.PathValue("slug")
	if err := s.st.Reload(r.Context(), id); err != nil {
		writeFailure(w, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"reloaded": id})
}

// RunRequest is the body of POST /v1/run.
type RunRequest struct {
	Module  string          `json:"module"`
	Command string          `json:"command"`
	Input   json.RawMessage `json:"input,omitempty"` // any JSON value; absent means {}
	// Trace, if set, is attached to every audit decision of the call.
	Trace string `json:"trace,omitempty"`
}

// RunResponse is the answer of a successful POST /v1/run.
type RunResponse struct {
	Output json.RawMessage `json:"output"`
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	var req RunRequest
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e.status(), e)
		return
	}
	if req.Module == "" || req.Command == "" {
		writeError(w, http.StatusBadRequest, &APIError{Code: CodeBadRequest, Message: `"module" and "command" are required`})
		return
	}
	in := []byte(req.Input)
	if len(in) == 0 {
		in = []byte("{}")
	}
	ctx := r.Context()
	if req.Trace != "" {
		ctx = sandbox.WithTrace(ctx, req.Trace)
	}
	out, err := s.st.Run(ctx, req.Module, req.Command, in)
	if err != nil {
		writeFailure(w, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, RunResponse{Output: out})
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.AuditFilter{Module: q.Get("module"), Trace: q.Get("trace"), DeniedOnly: q.Get("denied") == "true"}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, http.StatusBadRequest, &APIError{Code: CodeBadRequest, Message: "since: want an RFC 3339 time, e.g. 2026-11-29T10:00:00Z"})
			return
		}
		f.Since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			writeError(w, http.StatusBadRequest, &APIError{Code: CodeBadRequest, Message: "limit: want a number from 1 to 100000"})
			return
		}
		f.Limit = n
	}
	if err := s.st.Audit.Flush(r.Context()); err != nil {
		s.log.Warn("daemon: audit flush", "err", err)
	}
	recs, err := s.st.Store.Audit(r.Context(), f)
	if err != nil {
		writeFailure(w, s.log, err)
		return
	}
	if recs == nil {
		recs = []store.AuditRecord{}
	}
	writeJSON(w, http.StatusOK, recs)
}

// tooLarge is the message of a request body over limit bytes: the limit for
// people and in bytes, and that no setting raises it — a larger input runs
// only in the caller's own process, where the module's limits.max_input
// alone bounds it.
func tooLarge(limit int64) string {
	return fmt.Sprintf("request body over the daemon's limit of %s (%d bytes), which no setting raises; run the command with --no-daemon to pass a larger input (up to the module's limits.max_input)",
		units.Bytes(limit), limit)
}

// decodeBody decodes a JSON request body strictly.
func decodeBody(r *http.Request, v any) *APIError {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &APIError{Code: CodeTooLarge, Message: tooLarge(mbe.Limit)}
		}
		return &APIError{Code: CodeBadRequest, Message: "request body: " + err.Error()}
	}
	if dec.More() {
		return &APIError{Code: CodeBadRequest, Message: "request body: more than one JSON value"}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

// connSet tracks the daemon's connections that have not begun a request
// (http.StateNew), so that a stop can close them.
type connSet struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closing bool
}

// track is the server's ConnState hook.
func (s *connSet) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case state == http.StateNew && s.closing:
		c.Close()
	case state == http.StateNew:
		if s.conns == nil {
			s.conns = map[net.Conn]struct{}{}
		}
		s.conns[c] = struct{}{}
	default:
		delete(s.conns, c)
	}
}

// closeAll closes the connections without a request, and each one that
// comes after.
func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
}
