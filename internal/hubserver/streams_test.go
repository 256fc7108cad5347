package hubserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// TestRevokedTokenEndsItsStream is issue 13's second attack: a stolen
// token keeps receiving a team's private events after its owner revoked
// it. A stream is only as good as its token: revoking the token through
// the hub ends the stream at once; deleting it behind the hub's back (the
// operator, another hub process) ends it within the re-check interval.
// Either way no event committed after the revocation reaches it, and the
// client, reconnecting, is refused.
func TestRevokedTokenEndsItsStream(t *testing.T) {
	for _, tt := range []struct {
		name   string
		revoke func(t *testing.T, h *hubtest.Hub, erin *hubclient.Client, stolen hub.NewToken)
	}{
		{"revoked through the hub", func(t *testing.T, h *hubtest.Hub, erin *hubclient.Client, stolen hub.NewToken) {
			if err := erin.RevokeToken(ctx, stolen.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted in the store", func(t *testing.T, h *hubtest.Hub, erin *hubclient.Client, stolen hub.NewToken) {
			if err := h.Store.DeleteToken(ctx, "erin", stolen.ID); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.StartWith(t, func(o *hubserver.Options) { o.TokenRecheck = 200 * time.Millisecond })
			dave, erin, _ := team(t, h)
			stolen, err := erin.CreateToken(ctx, "laptop")
			if err != nil {
				t.Fatal(err)
			}
			thief := subscribe(t, h.Client(t, stolen.Secret), lastSeq(t, h))
			within(t, thief.connected, "connection")
			// Erin's other token keeps its stream.
			own := subscribe(t, erin, lastSeq(t, h))
			within(t, own.connected, "connection")
			if _, err := dave.PushLockfile(ctx, "acme", 0, hub.Lockfile{}); err != nil {
				t.Fatal(err)
			}
			thief.next(t, hub.EventLockfilePushed)
			own.next(t, hub.EventLockfilePushed)

			revoked := time.Now()
			tt.revoke(t, h, erin, stolen)
			err = within(t, doneErr(thief), "the thief's stream to end")
			took := time.Since(revoked)
			wantCode(t, "the thief's subscription", err, hub.CodeUnauthenticated)
			if took > 5*time.Second {
				t.Errorf("the stream ended %s after the revocation, want within seconds", took)
			}
			t.Logf("stream ended %s after the revocation", took)
			if _, err := dave.PushLockfile(ctx, "acme", 1, hub.Lockfile{}); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-thief.events:
				t.Errorf("the revoked token's stream received %+v", ev)
			default:
			}
			if ev := own.next(t, hub.EventLockfilePushed); ev.Revision != 2 {
				t.Errorf("erin's own stream got %+v", ev)
			}
		})
	}
}

// doneErr delivers the subscription's error once Subscribe returned.
func doneErr(s *subscription) <-chan error {
	ch := make(chan error, 1)
	go func() {
		<-s.done
		ch <- s.err
	}()
	return ch
}

// TestRemovedMemberStreamNarrows: a member removed from a team keeps its
// stream (public events still reach it) but gets none of the team's events
// from the moment the removal is committed.
func TestRemovedMemberStreamNarrows(t *testing.T) {
	h := hubtest.Start(t)
	dave, erin, _ := team(t, h)
	s := subscribe(t, erin, lastSeq(t, h))
	within(t, s.connected, "connection")
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := dave.RemoveMember(sctx, "acme", "erin"); err != nil {
		t.Fatal(err)
	}
	// No wait: the push is committed after the removal, so the relay sees
	// the new membership when it fans the push out.
	if _, err := dave.PushLockfile(sctx, "acme", 0, hub.Lockfile{}); err != nil {
		t.Fatal(err)
	}
	pub, key := h.Publisher(t, "stripe")
	publish(t, pub, key, "stripe/invoicing", "1.0.0")
	s.next(t, hub.EventMemberRemoved)
	s.next(t, hub.EventModulePublished)
}
