package hubserver_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// openEvents opens a raw event stream on c and returns the response once
// the hub said it is connected.
func openEvents(t *testing.T, c *http.Client, url, token string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET /v1/events = %s %s", resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before it said it was connected: %v", err)
		}
		if strings.HasPrefix(line, ": connected") {
			return resp, br
		}
	}
}

// readUntil reads br until a line equal to want, failing after 10 s.
func readUntil(t *testing.T, br *bufio.Reader, want string) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				got <- err
				return
			}
			if strings.TrimSuffix(line, "\n") == want {
				got <- nil
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the stream ended before %q: %v", want, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q within 10 s", want)
	}
}

// TestStreamTakesItsConnection: over HTTP/1.1 a stream answers on a
// connection of its own (close-delimited, no chunking, the hub's headers
// kept); a client that closes it frees its slot at once — not at the next
// heartbeat, an hour away here — and Close ends the streams still open.
func TestStreamTakesItsConnection(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Limits.MaxStreams = 1
		o.Heartbeat = time.Hour
	})
	tok := h.Account(t, "dave")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	resp, br := openEvents(t, hc, h.URL, tok)
	if len(resp.TransferEncoding) != 0 || !resp.Close {
		t.Errorf("stream: Transfer-Encoding %v, Close %v; want a close-delimited body", resp.TransferEncoding, resp.Close)
	}
	for _, k := range []string{"Station-Hub-Request", hub.HeaderProtocol} {
		if resp.Header.Get(k) == "" {
			t.Errorf("the stream's answer has no %s header", k)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	// Live events arrive on it.
	if _, err := h.Client(t, tok).CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	readUntil(t, br, "event: "+hub.EventTeamCreated)
	resp.Body.Close()

	deadline := time.Now().Add(2 * time.Second)
	for {
		a := send(t, h, "GET", "/v1/events?cursor=999999", tok, nil)
		if a.code() == hub.CodeCursorAhead { // the slot was free: the stream got as far as its cursor
			break
		}
		if a.code() != hub.CodeTooManyStreams || time.Now().After(deadline) {
			t.Fatalf("a stream after the first closed = %d %s; want the slot freed within 2 s", a.status, a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	resp, br = openEvents(t, hc, h.URL, tok)
	defer resp.Body.Close()
	closed := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, br); closed <- err }()
	h.Server.Close()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a stream open")
	}
}

// TestStreamOverHTTP2: a connection net/http will not hand over (HTTP/2)
// streams through the ResponseWriter: replay, live events, and the end of
// the stream when the client goes.
func TestStreamOverHTTP2(t *testing.T) {
	h := hubtest.Start(t)
	tok := h.Account(t, "dave")
	if _, err := h.Client(t, tok).CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h.Server)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	tr.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()

	resp, br := openEvents(t, hc, srv.URL, tok)
	if resp.ProtoMajor != 2 {
		t.Fatalf("the stream is %s, want HTTP/2", resp.Proto)
	}
	readUntil(t, br, "event: "+hub.EventTeamCreated) // the replay
	if _, err := h.Client(t, tok).CreateTeam(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	readUntil(t, br, "event: "+hub.EventTeamCreated) // live
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for n := h.Server.OpenStreams(); n != 0; n = h.Server.OpenStreams() {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still open 2 s after the HTTP/2 client left", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNodeStreams: past Options.NodeStreams a node refuses a stream 503
// unavailable with a Retry-After (so the station retries, likely on another
// node) and counts it; a stream that closes makes room again. Every other
// request is served as before.
func TestNodeStreams(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.NodeStreams = 2 })
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	var open []*http.Response
	for _, name := range []string{"dave", "erin"} {
		resp, _ := openEvents(t, hc, h.URL, h.Account(t, name))
		open = append(open, resp)
	}
	frank := h.Account(t, "frank")
	a := send(t, h, "GET", "/v1/events", frank, nil)
	if a.status != http.StatusServiceUnavailable || a.code() != hub.CodeUnavailable || a.header.Get("Retry-After") != "2" {
		t.Fatalf("a third stream on a node of 2 = %d (Retry-After %q) %s", a.status, a.header.Get("Retry-After"), a.body)
	}
	if a := send(t, h, "GET", "/v1/whoami", frank, nil); a.status != http.StatusOK {
		t.Errorf("whoami beside the full node = %d %s", a.status, a.body)
	}
	e, _ := scrape(t, h.Server)
	if v := e.value(t, "station_hub_event_streams_refused_total", nil); v != 1 {
		t.Errorf("streams refused = %v, want 1", v)
	}
	open[0].Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		a := send(t, h, "GET", "/v1/events?cursor=999999", frank, nil)
		if a.code() == hub.CodeCursorAhead {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 s after a stream closed, a new one = %d %s", a.status, a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	open[1].Body.Close()
}
