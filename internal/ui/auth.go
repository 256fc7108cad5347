package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Sign-in and sessions.
const (
	// CodeTTL is how long a sign-in code may wait to be used; it works
	// once.
	CodeTTL = 2 * time.Minute
	// SessionIdle signs a browser out after this long without a request;
	// SessionMax after this long in any case.
	SessionIdle = 12 * time.Hour
	SessionMax  = 7 * 24 * time.Hour
	// CookieName is the session cookie. (A __Host- name needs Secure, which
	// a browser refuses to set over the daemon's plain-HTTP loopback.)
	CookieName = "station_session"
	// maxCodes and maxSessions bound what a caller with the daemon token
	// can make the daemon hold; the oldest goes first.
	maxCodes    = 32
	maxSessions = 64
)

// auth holds the outstanding sign-in codes and the sessions, by the
// SHA-256 of their secret: a memory dump or a log line of the map shows no
// usable secret.
type auth struct {
	now      func() time.Time
	mu       sync.Mutex
	codes    map[[32]byte]time.Time // expiry
	sessions map[[32]byte]*session
}

// session is one signed-in browser.
type session struct {
	csrf     string
	created  time.Time
	lastSeen time.Time // under auth.mu

	mu    sync.Mutex
	flash string // what the next page says once (redirectFlash)
}

func (s *session) setFlash(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash = msg
}

func (s *session) takeFlash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.flash
	s.flash = ""
	return m
}

func random() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func key(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// NewSignInCode makes a one-time sign-in code, valid for CodeTTL: the
// daemon's POST /v1/ui/signin (behind its token) returns it in the link
// SignInPath + "?code=" + code.
func (s *Server) NewSignInCode() (code string, expires time.Time) {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.codes == nil {
		a.codes = map[[32]byte]time.Time{}
	}
	for k, exp := range a.codes {
		if !now.Before(exp) {
			delete(a.codes, k)
		}
	}
	if len(a.codes) >= maxCodes {
		var oldest [32]byte
		first := true
		for k, exp := range a.codes {
			if first || exp.Before(a.codes[oldest]) {
				oldest, first = k, false
			}
		}
		delete(a.codes, oldest)
	}
	code = random()
	expires = now.Add(CodeTTL)
	a.codes[key(code)] = expires
	return code, expires
}

// SignInPath is the dashboard's sign-in link, without the code.
const SignInPath = Prefix + "signin"

// redeem uses up code and, if it was valid, opens a session and returns
// its id.
func (a *auth) redeem(code string) (id string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := key(code)
	exp, found := a.codes[k]
	delete(a.codes, k) // once, even when late
	now := a.now()
	if !found || !now.Before(exp) {
		return "", false
	}
	if a.sessions == nil {
		a.sessions = map[[32]byte]*session{}
	}
	a.expireLocked(now)
	if len(a.sessions) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, s := range a.sessions {
			if at.IsZero() || s.lastSeen.Before(at) {
				oldest, at = k, s.lastSeen
			}
		}
		delete(a.sessions, oldest)
	}
	id = random()
	a.sessions[key(id)] = &session{csrf: random(), created: now, lastSeen: now}
	return id, true
}

func (a *auth) expireLocked(now time.Time) {
	for k, s := range a.sessions {
		if now.Sub(s.lastSeen) >= SessionIdle || now.Sub(s.created) >= SessionMax {
			delete(a.sessions, k)
		}
	}
}

// lookup returns the session of id, touching it, or nil.
func (a *auth) lookup(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	ses := a.sessions[key(id)]
	if ses == nil {
		return nil
	}
	now := a.now()
	if now.Sub(ses.lastSeen) >= SessionIdle || now.Sub(ses.created) >= SessionMax {
		delete(a.sessions, key(id))
		return nil
	}
	ses.lastSeen = now
	return ses
}

func (a *auth) end(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, key(id))
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// safeMethod reports whether m only reads.
func safeMethod(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// requireSession admits requests with a live session cookie; a change
// (any method but GET and HEAD) also needs the session's CSRF token, in
// the form field "csrf" or the X-CSRF-Token header. (Cross-origin changes
// were refused before: ServeHTTP.)
func (s *Server) requireSession(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var ses *session
		if c, err := r.Cookie(CookieName); err == nil {
			ses = s.auth.lookup(c.Value)
		}
		if ses == nil {
			s.signInNeeded(w, r)
			return
		}
		if !safeMethod(r.Method) {
			tok := r.Header.Get("X-CSRF-Token")
			if tok == "" {
				r.Body = http.MaxBytesReader(w, r.Body, maxForm)
				tok = r.PostFormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(tok), []byte(ses.csrf)) != 1 {
				s.log.Warn("ui: change without its CSRF token refused", "method", r.Method, "path", r.URL.Path)
				s.fail(w, r, http.StatusForbidden, "This change did not carry the page's CSRF token: reload the page and try again.")
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, ses)))
	}
}

// maxForm bounds a form body.
const maxForm = 64 << 10

func (s *Server) signInNeeded(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusUnauthorized, "signin", "Sign in", nil)
}

// signIn exchanges a one-time code for a session cookie and sends the
// browser on to the dashboard: the code in the address bar's history is
// used up.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	id, ok := s.auth.redeem(r.URL.Query().Get("code"))
	if !ok {
		s.log.Warn("ui: sign-in with an unknown, used or expired code refused", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "signin", "Sign in", "This sign-in link was already used or has expired.")
		return
	}
	// A new sign-in ends the session this browser had: one cookie, one
	// session, never one chosen before the sign-in.
	if c, err := r.Cookie(CookieName); err == nil {
		s.auth.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int(SessionMax / time.Second)})
	http.Redirect(w, r, Prefix+"modules", http.StatusSeeOther)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		s.auth.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	s.render(w, r, http.StatusOK, "signin", "Signed out", "You are signed out. station ui signs you in again.")
}
