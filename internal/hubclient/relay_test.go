package hubclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
)

// fakeStream serves /v1/events with the given body per connection attempt
// (then holds the connection open until the client leaves).
func fakeStream(t *testing.T, bodies ...string) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if i < len(bodies) {
			fmt.Fprint(w, bodies[i])
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func event(seq int64, kind string) string {
	return fmt.Sprintf("id: %d\nevent: %s\ndata: {\"seq\":%d,\"kind\":%q}\n\n", seq, kind, seq, kind)
}

// TestSubscribeSurvivesABadStream: a stream that goes silent, or sends an
// event whose id contradicts its data, is dropped and reconnected from the
// last good cursor; no event is handled twice.
func TestSubscribeSurvivesABadStream(t *testing.T) {
	srv, conns := fakeStream(t,
		event(1, "team.created")+": then silence\n\n",
		event(2, "team.lockfile")+"id: 9\ndata: {\"seq\":3,\"kind\":\"team.lockfile\"}\n\n",
		event(2, "team.lockfile")+event(3, "team.lockfile"),
	)
	c, err := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []int64
	var reasons []string
	var cursors []int64
	err = c.Subscribe(ctx, hubclient.SubscribeOptions{
		MinBackoff:   time.Millisecond,
		IdleTimeout:  time.Second, // only the first stream goes silent; a busy machine must not fake silence
		OnConnect:    func(c int64) { cursors = append(cursors, c) },
		OnDisconnect: func(err error) { reasons = append(reasons, err.Error()) },
	}, func(ev hub.Event) error {
		got = append(got, ev.Seq)
		if ev.Seq == 3 {
			cancel()
		}
		return nil
	})
	if err != context.Canceled {
		t.Errorf("Subscribe = %v, want context.Canceled", err)
	}
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("handled %v, want [1 2 3] once each", got)
	}
	if fmt.Sprint(cursors) != "[0 1 2]" || conns.Load() != 3 {
		t.Errorf("connected from cursors %v (%d connections), want [0 1 2]", cursors, conns.Load())
	}
	if len(reasons) != 2 || !strings.Contains(reasons[0], "silent") || !strings.Contains(reasons[1], "does not match its seq") {
		t.Errorf("disconnect reasons = %q", reasons)
	}
}

// TestSubscribeStopsOnPermanentErrors: an answer retrying cannot fix ends
// the subscription with that error.
func TestSubscribeStopsOnPermanentErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":{"code":1100,"name":"unauthenticated","message":"the token is unknown or revoked"}}`)
	}))
	defer srv.Close()
	c, _ := hubclient.New(srv.URL, &http.Client{Transport: &http.Transport{}}, hubclient.Options{})
	err := c.Subscribe(context.Background(), hubclient.SubscribeOptions{MinBackoff: time.Millisecond}, func(hub.Event) error { return nil })
	if hub.CodeOf(err) != hub.CodeUnauthenticated {
		t.Errorf("Subscribe = %v, want unauthenticated", err)
	}
}
