package hubsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/store"
)

// applyPushed applies on this station the revision it just pushed, as a
// sync without an approver does: the pusher's own entries are already
// installed here, what the lockfile held from other pushes is installed
// within this station's approval or recorded as pending, the team's
// workflows are written, and the revision is recorded — so that `station
// team status` of the pusher shows the revision it pushed, and its own
// daemon does not apply it a second time when the hub relays it.
func (s *Session) applyPushed(ctx context.Context, team string, tl hub.TeamLockfile) (*Report, error) {
	if tl.Team != team {
		return nil, fmt.Errorf("push team %s: the hub answered with the lockfile of team %q; nothing was applied on this station", team, clip(tl.Team))
	}
	st := s.Station.Store
	if _, err := st.HubTeam(ctx, team); errors.Is(err, store.ErrNotFound) {
		// The hub took the push, so the account owns the team; this
		// station had not recorded it yet (it was created elsewhere).
		if err := st.PutHubTeam(ctx, store.HubTeam{Name: team, HubURL: s.Login.URL, Role: hub.RoleOwner, Revision: -1}); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	rep, err := s.Apply(ctx, tl, nil)
	if err != nil {
		return rep, fmt.Errorf("team %s: revision %d is pushed, but applying it on this station failed (station team sync %s retries): %w", team, tl.Revision, team, err)
	}
	return rep, nil
}
