package hubserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// readiness is GET /readyz's answer. It fails the test with Errorf, so
// that goroutines may call it.
func readiness(t testing.TB, url string) (int, hubserver.Readiness, string) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Error(err)
		return 0, hubserver.Readiness{}, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r hubserver.Readiness
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Errorf("GET /readyz: %d %q: %v", resp.StatusCode, body, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET /readyz: Content-Type %q", ct)
	}
	return resp.StatusCode, r, string(body)
}

// TestHealthz: liveness is served to anyone, without the API's guards — no
// token, no protocol check, no rate limit — in a tiny fixed body, and stays
// "ok" when the database is gone (it says the process serves, nothing
// more).
func TestHealthz(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.Burst, o.Limits.RatePerSecond = 1, 0.001 })
	send(t, h, "GET", "/v1/info", "", nil) // the one request the address may make
	if a := send(t, h, "GET", "/v1/info", "", nil); a.status != http.StatusTooManyRequests {
		t.Fatalf("a second /v1/info: %d, want 429 (the test's premise)", a.status)
	}
	for range 50 {
		for _, p := range []string{"/healthz", "/readyz"} {
			req, _ := http.NewRequest("GET", h.URL+p, nil)
			req.Header.Set(hub.HeaderProtocol, "999")
			req.Header.Set("Authorization", "Bearer stn_not-a-token")
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(body) > 256 {
				t.Fatalf("GET %s: %d %q", p, resp.StatusCode, body)
			}
		}
	}
	if a := send(t, h, "GET", "/healthz", "", nil); string(a.body) != `{"status":"ok"}`+"\n" || a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("GET /healthz: %q %v", a.body, a.header)
	}
	// Another method is the API's catch-all, with its guards.
	if a := send(t, h, "POST", "/healthz", "", nil); a.code() != hub.CodeRateLimited {
		t.Errorf("POST /healthz: %d %s, want the API's rate_limited", a.status, a.body)
	}
	h.Store.Close()
	if a := send(t, h, "GET", "/healthz", "", nil); a.status != http.StatusOK {
		t.Errorf("GET /healthz with the database closed: %d, want 200", a.status)
	}
}

// TestReadyz: a working hub is ready, with each check's latency; the
// checks run on the public listener and on the metrics one alike.
func TestReadyz(t *testing.T) {
	h := hubtest.Start(t)
	status, r, body := readiness(t, h.URL)
	if status != http.StatusOK || r.Status != "ready" || len(r.Checks) != 2 {
		t.Fatalf("GET /readyz: %d %s", status, body)
	}
	for _, name := range []string{"database", "blobs"} {
		c := r.Checks[name]
		if c.Status != "ok" || c.Error != "" || c.LatencyMS < 0 || c.LatencyMS > 2000 {
			t.Errorf("check %s: %+v", name, c)
		}
	}
	if !strings.Contains(body, `"latency_ms":`) {
		t.Errorf("GET /readyz: %s has no latency_ms", body)
	}
	ops := opsURL(t, h.Server)
	if status, r, body := readiness(t, ops); status != http.StatusOK || r.Status != "ready" {
		t.Errorf("GET /readyz on the metrics listener: %d %s", status, body)
	}
}

// opsURL serves the hub's MetricsHandler for the rest of the test.
func opsURL(t testing.TB, srv *hubserver.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.MetricsHandler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

// TestReadyzDeadSQLite: with its database closed the hub is not ready, and
// the answer says which check failed without the error itself (it may
// name paths; the log has it).
func TestReadyzDeadSQLite(t *testing.T) {
	dir := t.TempDir()
	st, blobs, err := hubserver.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := hubserver.New(hubserver.Options{Store: st, Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	url := opsURL(t, srv)
	if status, _, body := readiness(t, url); status != http.StatusOK {
		t.Fatalf("GET /readyz: %d %s", status, body)
	}
	st.Close()
	if err := os.RemoveAll(dir + "/blobs"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the cached result
	status, r, body := readiness(t, url)
	if status != http.StatusServiceUnavailable || r.Status != "not_ready" {
		t.Fatalf("GET /readyz with the database closed: %d %s", status, body)
	}
	for _, name := range []string{"database", "blobs"} {
		if c := r.Checks[name]; c.Status != "error" || c.Error == "" {
			t.Errorf("check %s: %+v, want an error", name, c)
		}
	}
	if strings.Contains(body, dir) || strings.Contains(body, "sql") || strings.Contains(body, "closed") {
		t.Errorf("GET /readyz tells the error itself: %s", body)
	}
	e, _ := scrape(t, srv)
	for _, name := range []string{"database", "blobs"} {
		if v := e.value(t, "station_hub_readiness_check_failures_total", map[string]string{"check": name}); v != 1 {
			t.Errorf("check failures of %s = %v, want 1", name, v)
		}
	}
}

// TestReadyzDeadPostgres: a hub whose PostgreSQL connection is cut (a
// proxy between them stops) is not ready, and the answer names neither the
// DSN's password nor its user, database, host or port — the errors pgx
// returns name most of them.
func TestReadyzDeadPostgres(t *testing.T) {
	cfg, err := pgx.ParseConfig(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	proxy := startSwitch(t, target)
	const password = "hunter2-do-not-tell"
	// The test server trusts local users: the password is sent to no one,
	// but it is in the DSN the hub holds.
	dsn := "postgres://" + cfg.User + ":" + password + "@" + proxy.addr + "/" + cfg.Database + "?sslmode=disable&connect_timeout=1"
	st, err := hubserver.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := hubserver.OpenBlobDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := hubserver.New(hubserver.Options{Store: st, Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	url := opsURL(t, srv)
	if status, _, body := readiness(t, url); status != http.StatusOK {
		t.Fatalf("GET /readyz: %d %s", status, body)
	}
	proxy.cut()
	time.Sleep(1100 * time.Millisecond)
	status, r, body := readiness(t, url)
	if status != http.StatusServiceUnavailable || r.Checks["database"].Status != "error" || r.Checks["blobs"].Status != "ok" {
		t.Fatalf("GET /readyz with the database cut off: %d %s", status, body)
	}
	_, port, _ := net.SplitHostPort(proxy.addr)
	for _, secret := range []string{password, "hunter2", cfg.User, cfg.Database, port, "127.0.0.1", "postgres"} {
		if strings.Contains(body, secret) {
			t.Errorf("GET /readyz names %q: %s", secret, body)
		}
	}
}

// pingStore counts (and can hold up) the readiness pings of a Store.
type pingStore struct {
	hubserver.Store
	pings atomic.Int64
	hold  chan struct{} // when set, a ping waits for it (or its deadline)
}

func (p *pingStore) Ping(ctx context.Context) error {
	p.pings.Add(1)
	if p.hold != nil {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestReadyzCannotHammerTheDatabase is the probe's attack: a flood of
// /readyz costs the database one ping a second, however many probes come
// at once.
func TestReadyzCannotHammerTheDatabase(t *testing.T) {
	var st *pingStore
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		st = &pingStore{Store: o.Store}
		o.Store = st
	})
	var wg sync.WaitGroup
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for range 25 {
				if status, _, body := readiness(t, h.URL); status != http.StatusOK {
					t.Errorf("GET /readyz: %d %s", status, body)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if n, most := st.pings.Load(), int64(took/time.Second)+1; n < 1 || n > most {
		t.Errorf("400 probes in %s pinged the database %d times, want 1 to %d", took, n, most)
	}
	before := st.pings.Load()
	time.Sleep(1100 * time.Millisecond)
	readiness(t, h.URL)
	if st.pings.Load() != before+1 {
		t.Errorf("a probe after a second did not ping again")
	}
}

// TestReadyzSlowDatabase: a database that does not answer makes the hub
// not ready within the check's bound (2 s), and the probes that came
// meanwhile waited on that one check.
func TestReadyzSlowDatabase(t *testing.T) {
	st := &pingStore{hold: make(chan struct{})}
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		st.Store = o.Store
		o.Store = st
	})
	defer close(st.hold)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			status, r, body := readiness(t, h.URL)
			if status != http.StatusServiceUnavailable || r.Checks["database"].Error != "no answer within 2s" || r.Checks["blobs"].Status != "ok" {
				t.Errorf("GET /readyz with a database that does not answer: %d %s", status, body)
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took < 2*time.Second || took > 5*time.Second {
		t.Errorf("the probes took %s, want about 2s", took)
	}
	if n := st.pings.Load(); n != 1 {
		t.Errorf("8 probes at once pinged %d times, want 1", n)
	}
}
