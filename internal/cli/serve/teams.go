package serve

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

// teamDecider is the dashboard's ui.Teams: what station team approve and
// station team reject do, on the daemon's station.
type teamDecider struct {
	st  *station.Station
	log *slog.Logger
}

func (d teamDecider) Approve(ctx context.Context, team, module, version string) (string, error) {
	s, err := hubsync.Open(ctx, d.st, d.log)
	if err != nil {
		return "", err
	}
	rep, err := s.ApprovePending(ctx, team, module, version)
	if err != nil {
		return "", err
	}
	for _, r := range rep.Installed {
		if err := d.st.Reload(ctx, r.ID); err != nil {
			d.log.Warn("reload after approval", "module", r.ID, "err", err)
		}
	}
	if team == "" {
		return fmt.Sprintf("approved: %s is upgraded to %s and runs it from the next call", module, version), nil
	}
	return fmt.Sprintf("approved: %s@%s is installed for team %s and runs from the next call", module, version, team), nil
}

func (d teamDecider) Reject(ctx context.Context, team, module, version string) error {
	return hubsync.RejectPending(ctx, d.st, team, module, version)
}
