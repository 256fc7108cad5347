package hubsync

import (
	"context"

	"github.com/station-dev/station/hub"
)

// SyncTeams applies the current lockfile of team, or of every team the
// account belongs to when team is "", after recording the memberships the
// hub lists (RefreshTeams). It returns one report per team synced, and
// none (with no error) when the account belongs to no team; a team the
// account is not in is a *NotMemberError. It stops at the first team whose
// sync fails.
func (s *Session) SyncTeams(ctx context.Context, team string, approve Approver) ([]*Report, error) {
	teams, err := s.RefreshTeams(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range teams {
		if team == "" || t.Name == team {
			names = append(names, t.Name)
		}
	}
	if team != "" && len(names) == 0 {
		return nil, &NotMemberError{Team: team, Account: true}
	}
	var reps []*Report
	for _, n := range names {
		rep, err := s.Sync(ctx, n, approve)
		if err != nil {
			return reps, err
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// Identity is who the station is on its hub.
type Identity struct {
	Hub     string `json:"hub"`
	Account string `json:"account"`
}

// WhoAmI asks the hub which account the saved token belongs to.
func (s *Session) WhoAmI(ctx context.Context) (Identity, error) {
	a, err := s.Client.WhoAmI(ctx)
	if err != nil {
		return Identity{}, err
	}
	return Identity{Hub: s.Login.URL, Account: a.Name}, nil
}

// InviteError is an error of the hub about a team's invites, with the team
// asked about (so that what to do next can name it).
type InviteError struct {
	Team string
	Err  error
}

func (e *InviteError) Error() string { return e.Err.Error() }
func (e *InviteError) Unwrap() error { return e.Err }

func inviteErr(team string, err error) error {
	if err == nil {
		return nil
	}
	return &InviteError{Team: team, Err: err}
}

// Invite makes a one-time invite code for team (owners only).
func (s *Session) Invite(ctx context.Context, team string, req hub.InviteRequest) (hub.Invite, error) {
	inv, err := s.Client.Invite(ctx, team, req)
	return inv, inviteErr(team, err)
}

// Invites lists team's pending invites (owners only); never their codes.
func (s *Session) Invites(ctx context.Context, team string) ([]hub.PendingInvite, error) {
	invs, err := s.Client.Invites(ctx, team)
	return invs, inviteErr(team, err)
}

// RevokeInvite revokes the pending invite id of team.
func (s *Session) RevokeInvite(ctx context.Context, team, id string) (hub.PendingInvite, error) {
	inv, err := s.Client.RevokeInvite(ctx, team, id)
	return inv, inviteErr(team, err)
}

// RevokeInvites revokes every pending invite of team and returns them.
func (s *Session) RevokeInvites(ctx context.Context, team string) ([]hub.PendingInvite, error) {
	invs, err := s.Client.RevokeInvites(ctx, team)
	return invs, inviteErr(team, err)
}
