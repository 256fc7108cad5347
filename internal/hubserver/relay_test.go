package hubserver_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// subscription follows the hub's stream in the background and delivers
// events and connections on channels.
type subscription struct {
	events    chan hub.Event
	connected chan int64
	done      chan struct{} // closed when Subscribe returned, with err set
	err       error
	cancel    context.CancelFunc
}

// stop ends the subscription and returns Subscribe's error.
func (s *subscription) stop() error {
	s.cancel()
	<-s.done
	return s.err
}

func subscribe(t *testing.T, c *hubclient.Client, cursor int64) *subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscription{events: make(chan hub.Event, 100), connected: make(chan int64, 10), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		s.err = c.Subscribe(ctx, hubclient.SubscribeOptions{
			Cursor:     cursor,
			OnConnect:  func(c int64) { s.connected <- c },
			MinBackoff: 1, // reconnect at once: the test breaks connections on purpose
		}, func(ev hub.Event) error {
			s.events <- ev
			return nil
		})
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// next returns the next event of kind, failing on any other kind first.
func (s *subscription) next(t *testing.T, kind string) hub.Event {
	t.Helper()
	ev := within(t, s.events, kind)
	if ev.Kind != kind {
		t.Fatalf("got event %d %s (%+v), want %s", ev.Seq, ev.Kind, ev, kind)
	}
	return ev
}

// TestRelayReachesEveryMember: with two stations of a team connected, a
// push by one reaches the other (and the pusher) through the stream, while
// a station of another team gets nothing of it.
func TestRelayReachesEveryMember(t *testing.T) {
	h := hubtest.Start(t)
	dave, erin, mallory := team(t, h)
	start := lastSeq(t, h)
	daveSub, erinSub, mallorySub := subscribe(t, dave, start), subscribe(t, erin, start), subscribe(t, mallory, start)
	for _, s := range []*subscription{daveSub, erinSub, mallorySub} {
		within(t, s.connected, "connection")
	}

	if _, err := dave.PushLockfile(ctx, "acme", 0, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*subscription{"dave": daveSub, "erin": erinSub} {
		ev := s.next(t, hub.EventLockfilePushed)
		if ev.Team != "acme" || ev.Revision != 1 || ev.Actor != "dave" {
			t.Errorf("%s got %+v", name, ev)
		}
	}
	// Events arrive in order, so mallory's next event being the public
	// publish proves she was not sent acme's push before it.
	pub, key := h.Publisher(t, "stripe")
	publish(t, pub, key, "stripe/invoicing", "1.0.0")
	mallorySub.next(t, hub.EventModulePublished)
	daveSub.next(t, hub.EventModulePublished)
}

// TestRelayCatchesUpFromCursor: a station that was away receives, on
// reconnecting with its cursor, exactly what it missed, in order.
func TestRelayCatchesUpFromCursor(t *testing.T) {
	h := hubtest.Start(t)
	dave, erin, _ := team(t, h)
	first := subscribe(t, erin, 0)
	within(t, first.connected, "connection")
	// The replay: everything erin may see so far.
	first.next(t, hub.EventTeamCreated)
	joined := first.next(t, hub.EventMemberJoined)
	first.stop()

	for base := int64(0); base < 3; base++ {
		if _, err := dave.PushLockfile(ctx, "acme", base, hub.Lockfile{}); err != nil {
			t.Fatal(err)
		}
	}
	again := subscribe(t, erin, joined.Seq)
	if got := within(t, again.connected, "reconnection"); got != joined.Seq {
		t.Errorf("reconnected from %d, want %d", got, joined.Seq)
	}
	for rev := int64(1); rev <= 3; rev++ {
		if ev := again.next(t, hub.EventLockfilePushed); ev.Revision != rev {
			t.Errorf("caught-up event has revision %d, want %d", ev.Revision, rev)
		}
	}
	// And live from there.
	if _, err := dave.PushLockfile(ctx, "acme", 3, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	if ev := again.next(t, hub.EventLockfilePushed); ev.Revision != 4 {
		t.Errorf("live event has revision %d, want 4", ev.Revision)
	}
}

// TestRelayReconnectsAfterABrokenConnection: when the connection breaks,
// the client reconnects by itself with Last-Event-ID and gets what was
// pushed in between, once.
func TestRelayReconnectsAfterABrokenConnection(t *testing.T) {
	h := hubtest.Start(t)
	tok := h.Account(t, "dave")
	var mu sync.Mutex
	var conns []net.Conn
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}}
	c, err := hubclient.New(h.URL, &http.Client{Transport: tr}, hubclient.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, c, 0)
	within(t, s.connected, "connection")
	created := s.next(t, hub.EventTeamCreated)

	mu.Lock()
	for _, c := range conns {
		c.Close() // the network drops the stream (and any idle connection)
	}
	mu.Unlock()
	if _, err := c.PushLockfile(ctx, "acme", 0, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	if got := within(t, s.connected, "reconnection"); got != created.Seq {
		t.Errorf("reconnected from cursor %d, want %d", got, created.Seq)
	}
	if ev := s.next(t, hub.EventLockfilePushed); ev.Revision != 1 {
		t.Errorf("event after reconnect = %+v", ev)
	}
	select {
	case ev := <-s.events:
		t.Errorf("unexpected event %+v (a duplicate?)", ev)
	default:
	}
}

// TestStreamLimits: an account holds at most MaxStreams streams; a cursor
// past the log is refused; the handler's error stops the subscription.
func TestStreamLimits(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.MaxStreams = 1 })
	tok := h.Account(t, "dave")
	c := h.Client(t, tok)
	s := subscribe(t, c, 0)
	within(t, s.connected, "connection")
	if a := send(t, h, "GET", "/v1/events", tok, nil); a.status != 429 || a.code() != hub.CodeTooManyStreams {
		t.Errorf("second stream = %d %s", a.status, a.body)
	}
	s.stop()

	err := c.Subscribe(ctx, hubclient.SubscribeOptions{Cursor: 1000}, func(hub.Event) error { return nil })
	wantCode(t, "subscribe past the log", err, hub.CodeCursorAhead)

	if _, err := c.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = c.Subscribe(ctx, hubclient.SubscribeOptions{}, func(hub.Event) error { return boom })
	var he *hubclient.HandlerError
	if !errors.As(err, &he) || !errors.Is(err, boom) || he.Event.Kind != hub.EventTeamCreated {
		t.Errorf("Subscribe with a failing handler = %v", err)
	}
	err = h.Client(t, "").Subscribe(ctx, hubclient.SubscribeOptions{}, func(hub.Event) error { return nil })
	wantCode(t, "anonymous subscribe", err, hub.CodeUnauthenticated)
}

// TestSyncPages: sync returns what the account may see, page by page,
// with a cursor that moves past events it may not see.
func TestSyncPages(t *testing.T) {
	h := hubtest.Start(t)
	dave, _, mallory := team(t, h)
	for base := int64(0); base < 3; base++ {
		dave.PushLockfile(ctx, "acme", base, hub.Lockfile{})
	}
	var seen []string
	cursor := int64(0)
	for {
		res, err := dave.Sync(ctx, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Events {
			seen = append(seen, e.Kind)
		}
		cursor = res.Cursor
		if !res.More {
			break
		}
	}
	if want := "team.created team.member.joined team.lockfile team.lockfile team.lockfile"; strings.Join(seen, " ") != want {
		t.Errorf("dave synced %v, want %s", seen, want)
	}
	res, err := mallory.Sync(ctx, 0, 0)
	if err != nil || len(res.Events) != 1 || res.Cursor != lastSeq(t, h) {
		t.Errorf("mallory's sync = %+v, %v; want her team.created and the cursor at the end of the log", res, err)
	}
}

// TestShutdownEndsStreams: a graceful shutdown ends open streams at once
// instead of waiting for them.
func TestShutdownEndsStreams(t *testing.T) {
	dir := t.TempDir()
	st, blobs, err := hubserver.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tok, _ := hubserver.CreateAccount(ctx, st, "dave", "t", nowUTC())
	srv, err := hubserver.New(hubserver.Options{Store: st, Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()

	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Secret)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream starts %q", line)
	}
	stop()
	if err := within(t, served, "Serve to return"); err != nil {
		t.Errorf("Serve = %v", err)
	}
}

// TestExMemberSeesNothingOfTheTeam: a member removed from a team sees, on
// sync and on the stream, nothing of the team but its own removal — not
// its joining, not the roles it had, not the pushes it made — and gets
// none of the team's events after it.
func TestExMemberSeesNothingOfTheTeam(t *testing.T) {
	h := hubtest.Start(t)
	dave, erin, _ := team(t, h)
	live := subscribe(t, erin, lastSeq(t, h))
	within(t, live.connected, "connection")
	// (Each event is awaited before the next change: the relay decides who
	// sees an event by the membership when it fans the event out.)
	if _, err := dave.SetRole(ctx, "acme", "erin", hub.RoleOwner); err != nil {
		t.Fatal(err)
	}
	live.next(t, hub.EventMemberRole)
	if _, err := erin.PushLockfile(ctx, "acme", 0, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	live.next(t, hub.EventLockfilePushed)
	if _, err := dave.SetRole(ctx, "acme", "erin", hub.RoleMember); err != nil {
		t.Fatal(err)
	}
	live.next(t, hub.EventMemberRole)
	if err := dave.RemoveMember(ctx, "acme", "erin"); err != nil {
		t.Fatal(err)
	}
	live.next(t, hub.EventMemberRemoved)
	if _, err := dave.PushLockfile(ctx, "acme", 1, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	pub, key := h.Publisher(t, "stripe")
	publish(t, pub, key, "stripe/invoicing", "1.0.0")
	// In order: the public publish being next proves dave's push was not sent.
	live.next(t, hub.EventModulePublished)

	want := "team.member.removed:acme module.published:"
	res, err := erin.Sync(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Events {
		got = append(got, e.Kind+":"+e.Team)
	}
	if strings.Join(got, " ") != want {
		t.Errorf("erin's sync after her removal = %v, want %s", got, want)
	}
	replay := subscribe(t, erin, 0)
	within(t, replay.connected, "connection")
	replay.next(t, hub.EventMemberRemoved)
	replay.next(t, hub.EventModulePublished)
}
