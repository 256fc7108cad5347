// Package ui is the station's dashboard: server-rendered pages at /ui/ on
// the daemon's loopback address (docs/ui.md). It shows what the CLI shows —
// installed modules and what each may do, the decision log, workflow runs,
// LLM spending, teams, advisories — from the same services the CLI calls,
// and it approves or rejects pending team changes through them too: nothing
// here decides what a module may do.
//
// Who may use it: a browser signs in with a one-time code that only the
// station's user can make (station ui asks the daemon for one with the
// daemon's token) and gets an HttpOnly, SameSite=Strict session cookie.
// Every state-changing request needs that session and its CSRF token and is
// refused when a browser says it comes from another origin; every page
// forbids framing. The daemon checks the Host header (DNS rebinding) before
// a request reaches this package. See RATIONALE.md, "Why does the dashboard
// sign in with a one-time code?".
//
// Pages are html/template (every module-controlled string is escaped) and
// work without JavaScript; htmx, pinned from the npm registry and embedded
// (static/vendor/PINNED), and ui.js add the live audit tail and in-place
// updates.
package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
)

// Prefix is where the dashboard is served.
const Prefix = "/ui/"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/ui.css static/ui.js static/vendor/*.js
var staticFS embed.FS

// Options configure a Server.
type Options struct {
	// Station is the daemon's open station.
	Station *station.Station
	// Workflows serves the Runs pages (and resumes runs); nil shows none.
	Workflows *workflow.Service
	// Teams decides pending team changes (hubsync through a hub session);
	// nil shows them but cannot decide.
	Teams Teams
	// Version is the station's version, for the footer and the advisory
	// check of the station itself.
	Version string
	Logger  *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Poll is how often the live audit tail looks for new decisions; 0 is
	// 250ms.
	Poll time.Duration
}

// Server is the dashboard's HTTP handler. Its sessions live in memory: a
// daemon restart signs every browser out (station ui signs in again).
type Server struct {
	st      *station.Station
	wf      *workflow.Service
	teams   Teams
	version string
	log     *slog.Logger
	now     func() time.Time
	poll    time.Duration
	mux     *http.ServeMux
	pages   map[string]*template.Template
	static  http.Handler
	cop     *http.CrossOriginProtection

	auth auth

	// bg is the context of work a request starts and the dashboard
	// carries on after it (a resumed run); Close ends it.
	bg     context.Context
	stopBg context.CancelFunc
	jobs   sync.WaitGroup
}

// New builds the dashboard.
func New(o Options) (*Server, error) {
	if o.Station == nil {
		return nil, errors.New("ui: a station is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s := &Server{st: o.Station, wf: o.Workflows, teams: o.Teams, version: o.Version, log: o.Logger, now: o.Now, poll: o.Poll,
		pages: pages, static: http.StripPrefix(Prefix+"static/", http.FileServerFS(sub)), cop: http.NewCrossOriginProtection()}
	s.auth.now = o.Now
	s.bg, s.stopBg = context.WithCancel(context.Background())
	s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Warn("ui: cross-origin request refused", "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"), "sec-fetch-site", r.Header.Get("Sec-Fetch-Site"))
		s.fail(w, r, http.StatusForbidden, "This request came from another site, and the dashboard only takes changes from its own pages.")
	}))
	s.routes()
	return s, nil
}

// Close ends the work the dashboard carries on after a request (a resumed
// run is interrupted, as at any daemon stop) and waits for it.
func (s *Server) Close() {
	s.stopBg()
	s.jobs.Wait()
}

// route is one page or action of the dashboard.
type route struct {
	pattern string
	handler http.HandlerFunc
	// open routes need no session: sign-in, the static files.
	open bool
}

func (s *Server) routeList() []route {
	return []route{
		{pattern: "GET /ui/signin", handler: s.signIn, open: true},
		{pattern: "GET /ui/static/", handler: s.staticFile, open: true},
		{pattern: "POST /ui/signout", handler: s.signOut},
		{pattern: "GET /ui/{$}", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, Prefix+"modules", http.StatusSeeOther)
		}},
		{pattern: "GET /ui/modules", handler: s.modulesPage},
		{pattern: "GET /ui/modules/{owner}/{slug}", handler: s.modulePage},
		{pattern: "GET /ui/audit", handler: s.auditPage},
		{pattern: "GET /ui/audit/stream", handler: s.auditStream},
		{pattern: "GET /ui/runs", handler: s.runsPage},
		{pattern: "GET /ui/runs/{id}", handler: s.runPage},
		{pattern: "POST /ui/runs/{id}/resume", handler: s.resumeRun},
		{pattern: "GET /ui/llm", handler: s.llmPage},
		{pattern: "GET /ui/approvals", handler: s.approvalsPage},
		{pattern: "POST /ui/approvals/decide", handler: s.decide},
		{pattern: "GET /ui/teams", handler: s.teamsPage},
		{pattern: "GET /ui/advisories", handler: s.advisoriesPage},
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	for _, rt := range s.routeList() {
		h := rt.handler
		if !rt.open {
			h = s.requireSession(h)
		}
		m.Handle(rt.pattern, h)
	}
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		// Not the path itself: no address may put words on a page.
		s.fail(w, r, http.StatusNotFound, "There is no such page on the dashboard.")
	})
	s.mux = m
}

// ServeHTTP sets the headers every answer carries, refuses cross-origin
// changes, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No page may be framed (clickjacking), load anything from elsewhere
	// or run inline script; nothing is cached or leaks in a Referer.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, Prefix+"static/") {
		h.Set("Cache-Control", "no-store")
	}
	s.cop.Handler(s.mux).ServeHTTP(w, r)
}

func (s *Server) staticFile(w http.ResponseWriter, r *http.Request) {
	// The files are part of the binary: a browser may keep them for a day
	// (their names change with their content only for the vendored ones).
	w.Header().Set("Cache-Control", "private, max-age=86400")
	s.static.ServeHTTP(w, r)
}

// page is what every page template gets.
type page struct {
	Title   string
	Nav     string // the menu entry that is current
	CSRF    string
	Version string
	Flash   string
	Data    any
}

// render writes page name with data, or a failure page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	t, ok := s.pages[name]
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, "The page "+name+" is missing from this build.")
		return
	}
	p := page{Title: title, Nav: name, Version: s.version, Data: data}
	if ses := sessionFrom(r.Context()); ses != nil {
		p.CSRF, p.Flash = ses.csrf, ses.takeFlash()
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("ui: render", "page", name, "err", err)
		s.fail(w, r, http.StatusInternalServerError, "The page could not be drawn: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail writes a page that says what went wrong and what to do, in plain
// text inside the layout.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var buf bytes.Buffer
	p := page{Title: http.StatusText(status), Nav: "error", Version: s.version, Data: msg}
	if ses := sessionFrom(r.Context()); ses != nil {
		p.CSRF = ses.csrf // signed in: the menu and sign-out stay
	}
	if err := s.pages["error"].ExecuteTemplate(&buf, "layout", p); err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// failErr writes a failure page for err: not found is 404, anything else
// 500 with the error's text (the station's own errors say what to do).
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, err.Error())
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	s.log.Error("ui: request failed", "path", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, err.Error())
}

// redirectFlash answers a form post with a redirect to to (post,
// redirect, get); the next page the session draws says msg once. The
// message is kept in the session, not in the address: no link can make a
// page say something.
func redirectFlash(w http.ResponseWriter, r *http.Request, to, msg string) {
	if ses := sessionFrom(r.Context()); ses != nil && msg != "" {
		ses.setFlash(msg)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// parsePages parses each page template with the layout and the partials.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("ui: templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(templateFS, n); err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", n, err)
		}
		out[name] = t
	}
	return out, nil
}
