package hubserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// sharedDatabase returns a function that opens the store hubtest.EnvDB
// selects — every call a new handle on the same database, as each hub
// process has its own — and a blob directory they share.
func sharedDatabase(t testing.TB) func() (hubserver.Store, hubserver.Blobs) {
	t.Helper()
	dir := t.TempDir()
	var dsn string
	if os.Getenv(hubtest.EnvDB) == "postgres" {
		dsn = pgtest.DSN(t)
	}
	return func() (hubserver.Store, hubserver.Blobs) {
		t.Helper()
		var st hubserver.Store
		var err error
		if dsn != "" {
			st, err = hubserver.OpenPostgres(ctx, dsn)
		} else {
			st, err = hubserver.OpenSQLite(filepath.Join(dir, "hub.db"))
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		blobs, err := hubserver.OpenBlobDir(filepath.Join(dir, "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		return st, blobs
	}
}

// serveProcess runs a hub on what open opens, for the test to drain
// (Stop) when it likes.
func serveProcess(t testing.TB, open func() (hubserver.Store, hubserver.Blobs), configure func(*hubserver.Options)) *hubtest.Hub {
	t.Helper()
	st, blobs := open()
	o := hubserver.Options{Store: st, Blobs: blobs}
	if configure != nil {
		configure(&o)
	}
	return hubtest.Serve(t, o)
}

// balancer is an HTTP load balancer as operators run one: it probes each
// backend's /readyz every 20 ms and sends each request to the first that
// was ready, streams included. It records the event stream requests.
type balancer struct {
	url      string
	backends []string

	mu      sync.Mutex
	ready   map[string]bool
	streams []streamRequest
}

type streamRequest struct {
	backend, lastEventID string
	at                   time.Time
}

func startBalancer(t testing.TB, backends ...string) *balancer {
	t.Helper()
	b := &balancer{backends: backends, ready: map[string]bool{}}
	probes := &http.Client{Timeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	var probing sync.WaitGroup
	probing.Go(func() {
		for ctx.Err() == nil {
			for _, be := range backends {
				resp, err := probes.Get(be + "/readyz")
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					resp.Body.Close()
				}
				b.mu.Lock()
				b.ready[be] = ok
				b.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			u, _ := url.Parse(r.In.Header.Get("X-Test-Backend"))
			r.SetURL(u)
			r.Out.Header.Del("X-Test-Backend")
		},
		FlushInterval: -1,
		Transport:     &http.Transport{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		var to string
		for _, be := range b.backends {
			if b.ready[be] {
				to = be
				break
			}
		}
		if to != "" && r.URL.Path == hub.PathPrefix+"/events" {
			b.streams = append(b.streams, streamRequest{to, r.Header.Get("Last-Event-ID"), time.Now()})
		}
		b.mu.Unlock()
		if to == "" {
			http.Error(w, "no backend is ready", http.StatusBadGateway)
			return
		}
		r.Header.Set("X-Test-Backend", to)
		proxy.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() {
		cancel()
		probing.Wait()
		hs.Close()
	})
	b.url = "http://" + ln.Addr().String()
	return b
}

func (b *balancer) isReady(backend string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready[backend]
}

func (b *balancer) streamRequests() []streamRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.streams)
}

// TestDrainMovesStreamsToAnotherHub is the rolling restart: two hub
// processes on one database behind a load balancer that probes /readyz;
// one drains while a station follows its stream and changes keep coming.
// The draining hub reports not ready at once and goes on serving through
// its drain delay, until the balancer has moved new requests away; then it
// tells the stream to reconnect. The station reconnects to the same URL
// within a second — not after its backoff, which the test makes a minute —
// from its cursor, lands on the other hub, and gets every event of the log
// exactly once, in order.
func TestDrainMovesStreamsToAnotherHub(t *testing.T) {
	open := sharedDatabase(t)
	// The publisher below runs flat out; the rate limit (shared by the
	// hubs on PostgreSQL) is not what this test is about.
	unlimited := func(o *hubserver.Options) { o.Limits.RatePerSecond, o.Limits.Burst = 1e9, 1e9 }
	a := serveProcess(t, open, func(o *hubserver.Options) { unlimited(o); o.DrainDelay = 300 * time.Millisecond })
	b := serveProcess(t, open, unlimited)
	lb := startBalancer(t, a.URL, b.URL)
	eventually(t, "both hubs ready", func() bool { return lb.isReady(a.URL) && lb.isReady(b.URL) })

	front := &hubtest.Hub{URL: lb.url, Store: a.Store}
	dave, key := front.Publisher(t, "dave")
	version := 0
	next := func() error {
		version++
		bundle, err := hubclient.NewBundle(hubtest.Manifest("dave/tool", "1.0."+strconv.Itoa(version)), hubtest.Wasm("v"+strconv.Itoa(version)), key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dave.Publish(ctx, bundle)
		return err
	}
	for range 3 {
		if err := next(); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var got []int64
	received := make(chan struct{}, 1000)
	connected := make(chan int64, 10)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	subscribed := make(chan error, 1)
	go func() {
		subscribed <- front.Client(t, front.Account(t, "erin")).Subscribe(sctx, hubclient.SubscribeOptions{
			MinBackoff: time.Minute, MaxBackoff: time.Minute, // a reconnect with backoff would time the test out
			OnConnect: func(c int64) { connected <- c },
		}, func(ev hub.Event) error {
			mu.Lock()
			got = append(got, ev.Seq)
			mu.Unlock()
			received <- struct{}{}
			return nil
		})
	}()
	within(t, connected, "the stream")
	for range 3 {
		within(t, received, "the first events")
	}

	// Changes keep coming through the balancer, to whichever hub it
	// picks; one the switch breaks off may or may not have been
	// committed: the log says.
	publishing := make(chan struct{})
	published := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-publishing:
				published <- n
				return
			default:
			}
			if next() == nil {
				n++
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)

	drained := time.Now()
	aStopped := a.Stop()
	// Draining, the hub is not ready but still serves. The process takes
	// its signal in its own time (under -race, on a loaded machine, after
	// the first look): look again until it says so, within its drain delay.
	for {
		status, r, body := readiness(t, a.URL)
		if status == http.StatusServiceUnavailable && r.Status == "draining" && len(r.Checks) == 0 {
			break
		}
		if time.Since(drained) > 250*time.Millisecond {
			t.Errorf("GET /readyz of the draining hub: %d %s", status, body)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ans := send(t, &hubtest.Hub{URL: a.URL}, "GET", "/v1/info", "", nil); ans.status != http.StatusOK {
		t.Errorf("GET /v1/info of the hub in its drain delay: %d", ans.status)
	}
	cursor := within(t, connected, "the reconnect")
	took := time.Since(drained)
	if took > 300*time.Millisecond+2*time.Second {
		t.Errorf("the station reconnected %s after the drain began, want within its delay and a second", took)
	}
	if err := within(t, aStopped, "the drained hub's Serve to return"); err != nil {
		t.Errorf("Serve of the drained hub: %v", err)
	}
	close(publishing)
	if n := within(t, published, "the publisher"); n == 0 {
		t.Error("no publish went through during the drain")
	}
	// One more, surely on the other hub: it wakes its relay, which then
	// reads everything committed (a SQLite hub learns of the other's
	// commits only so).
	if err := next(); err != nil {
		t.Fatal(err)
	}

	reqs := lb.streamRequests()
	if len(reqs) != 2 || reqs[0].backend != a.URL || reqs[1].backend != b.URL {
		t.Fatalf("stream requests %+v, want one to each hub, the first hub's first", reqs)
	}
	mu.Lock()
	before := int64(0)
	for _, seq := range got {
		if seq <= cursor {
			before = seq
		}
	}
	mu.Unlock()
	if reqs[1].lastEventID != strconv.FormatInt(cursor, 10) || cursor != before {
		t.Errorf("the station reconnected with Last-Event-ID %q (cursor %d), want the last event it had, %d", reqs[1].lastEventID, cursor, before)
	}

	var want []int64
	evs, err := b.Store.EventsAfter(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		want = append(want, ev.Seq)
	}
	eventually(t, "every event at the station", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want)
	})
	stop()
	if err := <-subscribed; !errors.Is(err, context.Canceled) {
		t.Errorf("Subscribe = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("the station got events %v, want the log's %v, each once", got, want)
	}
	e, _ := scrape(t, a.Server)
	if v := e.value(t, "station_hub_event_streams_reconnected_total", nil); v != 1 {
		t.Errorf("streams told to reconnect = %v, want 1", v)
	}
}

// TestDrainReconnectEvent: what a draining hub sends on a stream, byte for
// byte — a comment, then a reconnect event without data (an older station
// reads it as a comment, and reconnects when the stream ends) whose retry
// is under a second — and that the stream then ends.
func TestDrainReconnectEvent(t *testing.T) {
	open := sharedDatabase(t)
	p := serveProcess(t, open, nil)
	tok, err := hubserver.CreateAccount(ctx, p.Store, "dave", "t", nowUTC())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", p.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Secret)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "retry: 2000\n" {
		t.Fatalf("the stream starts %q", line)
	}
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, ": connected") {
		t.Fatalf("then %q", line)
	}
	pStopped := p.Stop()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("the stream broke instead of ending: %v (%q)", err, rest)
	}
	m := regexp.MustCompile(`^\n: this hub is shutting down; reconnect\nevent: reconnect\nretry: ([0-9]+)\n\n$`).FindSubmatch(rest)
	if m == nil {
		t.Fatalf("the draining hub sent %q", rest)
	}
	if n, _ := strconv.Atoi(string(m[1])); n >= 1000 {
		t.Errorf("retry %d ms, want under a second", n)
	}
	if err := within(t, pStopped, "Serve to return"); err != nil {
		t.Errorf("Serve = %v", err)
	}
}

// TestDrainLetsRequestsFinish: a request in flight when the drain begins
// (a publish whose body is still arriving) is answered; one that does not
// finish within DrainTimeout is cut off, and Serve returns then.
func TestDrainLetsRequestsFinish(t *testing.T) {
	open := sharedDatabase(t)
	p := serveProcess(t, open, func(o *hubserver.Options) { o.DrainTimeout = time.Second })
	front := &hubtest.Hub{URL: p.URL, Store: p.Store}
	daveToken := front.Account(t, "dave")
	key, err := hubclient.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := front.Client(t, daveToken).AddKey(ctx, key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	bundle, err := hubclient.NewBundle(hubtest.Manifest("dave/tool", "1.0.0"), hubtest.Wasm("x"), key)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(bundle)
	if err != nil {
		t.Fatal(err)
	}
	// slow sends half of body, then waits for more before the rest.
	slow := func(token string, more <-chan struct{}) <-chan int {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", p.URL+"/v1/modules", pr)
		req.ContentLength = int64(len(body))
		req.Header.Set("Authorization", "Bearer "+token)
		status := make(chan int, 1)
		go func() {
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				status <- 0
				return
			}
			resp.Body.Close()
			status <- resp.StatusCode
		}()
		pw.Write(body[:len(body)/2])
		go func() {
			<-more
			pw.Write(body[len(body)/2:])
			pw.Close()
		}()
		return status
	}
	finish := make(chan struct{})
	finishing := slow(daveToken, finish)
	// The stuck one is sent by hand: a client's transport may wait for
	// the body it is sending before it sees the connection closed.
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/modules HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", daveToken, len(body), body[:len(body)/2])
	stuck := make(chan string, 1)
	go func() {
		answer, _ := io.ReadAll(conn) // until the hub closes the connection
		stuck <- string(answer)
	}()
	time.Sleep(100 * time.Millisecond) // both are in flight
	start := time.Now()
	pStopped := p.Stop()
	time.Sleep(200 * time.Millisecond)
	close(finish)
	if status := within(t, finishing, "the finishing publish"); status != http.StatusCreated {
		t.Errorf("the publish in flight got %d, want 201", status)
	}
	if answer := within(t, stuck, "the stuck request to be cut off"); answer != "" {
		t.Errorf("the request that never finished got %q, want it cut off", answer)
	}
	if err := within(t, pStopped, "Serve to return"); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if took := time.Since(start); took < time.Second || took > 5*time.Second {
		t.Errorf("Serve returned %s after the drain began, want about the drain timeout (1s)", took)
	}
}
