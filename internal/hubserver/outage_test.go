package hubserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/ocitest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// TestOutagesAnswerUnavailableAndRecover: the hub's PostgreSQL goes away
// under load (every connection cut, new ones refused, as in a restart),
// then its registry does. Meanwhile every request is answered 503
// unavailable with a Retry-After — never 500, never a half-made change —
// and /readyz says not ready; when each comes back, the hub serves again
// without a restart and nothing committed before is lost.
func TestOutagesAnswerUnavailableAndRecover(t *testing.T) {
	dsn, reg := pgtest.DSN(t), ocitest.URL(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := startSwitch(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	ru, err := url.Parse(reg)
	if err != nil {
		t.Fatal(err)
	}
	registry := startSwitch(t, ru.Host)
	ru.Host = registry.addr
	st, err := hubserver.OpenPostgres(ctx, throughProxy(dsn, db.addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := hubserver.OpenBlobs(ctx, ru.String())
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.Serve(t, hubserver.Options{Store: st, Blobs: blobs, Limits: hub.Limits{RatePerSecond: 1e6, Burst: 1e6}})
	dave, signer := h.Publisher(t, "dave")
	publish(t, dave, signer, "dave/x", "1.0.0")

	// unavailableWhile checks that while down, every request of a small
	// load is answered 503 unavailable with a Retry-After.
	unavailableWhile := func(what string, requests ...func() answer) {
		t.Helper()
		var wg sync.WaitGroup
		var bad atomic.Value
		for i := range 4 * len(requests) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := requests[i%len(requests)]()
				if a.status != http.StatusServiceUnavailable || a.code() != hub.CodeUnavailable || a.header.Get("Retry-After") == "" {
					bad.Store(a)
				}
			}()
		}
		wg.Wait()
		if a, ok := bad.Load().(answer); ok {
			t.Errorf("with %s down: %d (Retry-After %q) %s, want 503 unavailable with a Retry-After", what, a.status, a.header.Get("Retry-After"), a.body)
		}
		if code, r, _ := readinessNow(t, h); code != http.StatusServiceUnavailable {
			t.Errorf("with %s down /readyz = %d %+v", what, code, r)
		}
	}
	token := tokenOf(t, h, "dave")
	getModule := func() answer { return send(t, h, "GET", "/v1/modules/dave/x", "", nil) }
	whoami := func() answer { return send(t, h, "GET", "/v1/whoami", token, nil) }
	download := func() answer { return send(t, h, "GET", "/v1/modules/dave/x/versions/1.0.0/bundle", "", nil) }

	db.cut()
	unavailableWhile("PostgreSQL", getModule, whoami)
	_, err = dave.Publish(ctx, bundle(t, signer, "dave/x", "1.1.0"))
	wantCode(t, "a publish with PostgreSQL down", err, hub.CodeUnavailable)
	db.restore()
	eventually(t, "the hub to serve again after PostgreSQL came back", func() bool { return getModule().status == http.StatusOK })
	if m, err := dave.Module(ctx, "dave/x"); err != nil || len(m.Versions) != 1 {
		t.Fatalf("after the outage dave/x = %+v, %v; want 1.0.0 alone (the refused publish left nothing)", m, err)
	}
	publish(t, dave, signer, "dave/x", "1.1.0")

	registry.cut()
	unavailableWhile("the registry", download)
	_, err = dave.Publish(ctx, bundle(t, signer, "dave/x", "1.2.0"))
	wantCode(t, "a publish with the registry down", err, hub.CodeUnavailable)
	registry.restore()
	eventually(t, "downloads after the registry came back", func() bool { return download().status == http.StatusOK })
	if m, err := dave.Module(ctx, "dave/x"); err != nil || len(m.Versions) != 2 {
		t.Fatalf("after the registry's outage dave/x = %+v, %v; want 1.0.0 and 1.1.0 (the refused publish left nothing)", m, err)
	}
	publish(t, dave, signer, "dave/x", "1.2.0")
	eventually(t, "/readyz after both came back", func() bool { code, _, _ := readinessNow(t, h); return code == http.StatusOK })
}

// readinessNow asks /readyz past its one-second cache.
func readinessNow(t *testing.T, h *hubtest.Hub) (int, hubserver.Readiness, string) {
	t.Helper()
	time.Sleep(1100 * time.Millisecond)
	return readiness(t, h.URL)
}

func bundle(t *testing.T, s *hubclient.Signer, id, version string) *hub.Bundle {
	t.Helper()
	b, err := hubclient.NewBundle(hubtest.Manifest(id, version), hubtest.Wasm(id+version), s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// throughProxy returns dsn with its host and port replaced by addr's.
func throughProxy(dsn, addr string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Host = addr
			return u.String()
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	return dsn + " host=" + host + " port=" + port // a later keyword wins
}

// aSwitch forwards TCP connections to a target; cut closes every open one
// and refuses new ones (closes them at once) until restore.
type aSwitch struct {
	addr string
	down atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startSwitch(t testing.TB, target string) *aSwitch {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &aSwitch{addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); s.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if s.down.Load() {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			s.mu.Lock()
			s.conns[c], s.conns[u] = true, true
			s.mu.Unlock()
			go func() { copyConn(u, c); u.Close() }()
			go func() { copyConn(c, u); c.Close() }()
		}
	}()
	return s
}

func (s *aSwitch) cut() {
	s.down.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}

func (s *aSwitch) restore() { s.down.Store(false) }

func copyConn(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestPublishBodyBrokenOffIsTheClients: a publish whose body breaks off
// with a network error is the client's bad request, not a backend that
// did not answer (503 would send operators looking at a healthy database).
func TestPublishBodyBrokenOffIsTheClients(t *testing.T) {
	h := hubtest.Start(t)
	_, signer := h.Publisher(t, "dave")
	token := tokenOf(t, h, "dave")
	body, err := json.Marshal(bundle(t, signer, "dave/x", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	broken := io.MultiReader(bytes.NewReader(body[:len(body)/2]), brokenReader{})
	req := httptest.NewRequest("POST", "/v1/modules", broken)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.Server.ServeHTTP(rec, req)
	a := answer{rec.Code, rec.Header(), rec.Body.Bytes()}
	if a.status != http.StatusBadRequest || a.code() != hub.CodeBadRequest {
		t.Errorf("a publish whose body broke off = %d %s, want 400 bad_request", a.status, a.body)
	}
}

type brokenReader struct{}

func (brokenReader) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}
