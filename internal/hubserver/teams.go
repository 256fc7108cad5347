package hubserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/station-dev/station/hub"
)

func (s *Server) createTeam(c *call) error {
	var req hub.CreateTeamRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if msg := hub.CheckName(req.Name); msg != "" {
		return hub.Errorf(hub.CodeInvalidName, "team name %q %s", clip(req.Name), msg)
	}
	ev, err := s.store.CreateTeam(c.ctx, req.Name, c.account, s.now())
	if errors.Is(err, ErrExists) {
		return hub.Errorf(hub.CodeTeamExists, "a team named %q exists: choose another name", req.Name)
	}
	if err != nil {
		return err
	}
	s.relay.notify()
	s.log.Info("team created", "account", c.account, "team", req.Name, "seq", ev.Seq)
	t, err := s.memberView(c, req.Name)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusCreated, t)
	return nil
}

func (s *Server) listTeams(c *call) error {
	ts, err := s.store.TeamsOf(c.ctx, c.account)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, ts)
	return nil
}

// memberView returns the team as c.account sees it, or team_not_found when
// it is not a member: a non-member learns nothing about a team.
func (s *Server) memberView(c *call, team string) (hub.Team, error) {
	t, err := s.store.Team(c.ctx, team)
	if err != nil {
		return hub.Team{}, mapTeamErr(err, team, c.account)
	}
	for _, m := range t.Members {
		if m.Account == c.account {
			t.Role = m.Role
			return t, nil
		}
	}
	return hub.Team{}, mapTeamErr(ErrNotFound, team, c.account)
}

func (s *Server) team(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	t, err := s.memberView(c, team)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, t)
	return nil
}

func checkRole(role string) error {
	if role != hub.RoleOwner && role != hub.RoleMember {
		return hub.Errorf(hub.CodeBadRequest, "role %q: want %q or %q", clip(role), hub.RoleOwner, hub.RoleMember)
	}
	return nil
}

func (s *Server) invite(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	var req hub.InviteRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if req.Role == "" {
		req.Role = hub.RoleMember
	}
	if err := checkRole(req.Role); err != nil {
		return err
	}
	if req.Account != "" {
		if msg := hub.CheckName(req.Account); msg != "" {
			return hub.Errorf(hub.CodeInvalidName, "account %q %s", clip(req.Account), msg)
		}
		if _, err := s.store.Account(c.ctx, req.Account); errors.Is(err, ErrNotFound) {
			return hub.Errorf(hub.CodeAccountNotFound, "account %q does not exist", req.Account)
		} else if err != nil {
			return err
		}
	}
	code, hash := newSecret(hub.InvitePrefix)
	now := s.now().UTC()
	inv := Invite{Hash: hash, ID: newInviteID(), Team: team, Role: req.Role, Account: req.Account, CreatedBy: c.account, CreatedAt: now, ExpiresAt: now.Add(s.inviteTTL)}
	if err := s.store.AddInvite(c.ctx, inv); err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.log.Info("invite created", "account", c.account, "team", team, "invite", inv.ID, "role", req.Role, "for", req.Account)
	s.reply(c, http.StatusCreated, hub.Invite{ID: inv.ID, Team: team, Code: code, Role: req.Role, Account: req.Account, ExpiresAt: inv.ExpiresAt})
	return nil
}

// newInviteID returns a random invite id: 16 hex digits, unrelated to the
// code.
func newInviteID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func pending(invs []Invite) []hub.PendingInvite {
	out := make([]hub.PendingInvite, 0, len(invs))
	for _, inv := range invs {
		out = append(out, hub.PendingInvite{ID: inv.ID, Team: inv.Team, Role: inv.Role, Account: inv.Account, CreatedBy: inv.CreatedBy, CreatedAt: inv.CreatedAt.UTC(), ExpiresAt: inv.ExpiresAt.UTC()})
	}
	return out
}

// listInvites answers an owner with the team's pending invites (never a
// code: the hub has only their hashes).
func (s *Server) listInvites(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	invs, err := s.store.Invites(c.ctx, team, c.account, s.now())
	if err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.reply(c, http.StatusOK, pending(invs))
	return nil
}

// revokeInvite deletes one pending invite of the team.
func (s *Server) revokeInvite(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	id := c.r.PathValue("id")
	if !hub.ValidInviteID(id) {
		return hub.Errorf(hub.CodeBadRequest, "invite id %q: want the 16 hex digits `station team invites` shows", clip(id))
	}
	invs, err := s.store.RevokeInvites(c.ctx, team, id, c.account, s.now())
	if errors.Is(err, ErrNoInvite) {
		return hub.Errorf(hub.CodeInviteNotFound, "team %q has no pending invite %s: it was used, revoked or has expired (station team invites lists the pending ones)", team, id)
	}
	if err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.log.Info("invite revoked", "account", c.account, "team", team, "invite", id)
	s.reply(c, http.StatusOK, pending(invs)[0])
	return nil
}

// revokeInvites deletes every pending invite of the team.
func (s *Server) revokeInvites(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	invs, err := s.store.RevokeInvites(c.ctx, team, "", c.account, s.now())
	if err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.log.Info("invites revoked", "account", c.account, "team", team, "count", len(invs))
	s.reply(c, http.StatusOK, pending(invs))
	return nil
}

func (s *Server) acceptInvite(c *call) error {
	var req hub.AcceptInviteRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if !wellFormed(req.Code, hub.InvitePrefix) {
		return hub.Errorf(hub.CodeInviteInvalid, "the invite code is malformed: invite codes start with %s", hub.InvitePrefix)
	}
	t, ev, err := s.store.AcceptInvite(c.ctx, sha256.Sum256([]byte(req.Code)), c.account, s.now())
	if errors.Is(err, ErrAlreadyMember) {
		return hub.Errorf(hub.CodeAlreadyMember, "you are already a member of the team this invite is for; the invite was not used")
	}
	if err != nil {
		return mapTeamErr(err, "", c.account)
	}
	s.relay.notify()
	s.log.Info("team joined", "account", c.account, "team", ev.Team, "role", ev.Role, "seq", ev.Seq)
	s.reply(c, http.StatusOK, t)
	return nil
}

func (s *Server) leave(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	ev, err := s.store.RemoveMember(c.ctx, team, c.account, c.account, s.now())
	if err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.relay.notify()
	s.log.Info("team left", "account", c.account, "team", team, "seq", ev.Seq)
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) setRole(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	account, err := c.name("account")
	if err != nil {
		return err
	}
	var req hub.SetRoleRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkRole(req.Role); err != nil {
		return err
	}
	m, ev, err := s.store.SetRole(c.ctx, team, account, req.Role, c.account, s.now())
	if err != nil {
		return mapTeamErr(err, team, account)
	}
	if ev.Seq != 0 {
		s.relay.notify()
		s.log.Info("team role changed", "account", c.account, "team", team, "member", account, "role", req.Role, "seq", ev.Seq)
	}
	s.reply(c, http.StatusOK, m)
	return nil
}

func (s *Server) removeMember(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	account, err := c.name("account")
	if err != nil {
		return err
	}
	ev, err := s.store.RemoveMember(c.ctx, team, account, c.account, s.now())
	if err != nil {
		return mapTeamErr(err, team, account)
	}
	s.relay.notify()
	s.log.Info("team member removed", "account", c.account, "team", team, "member", account, "seq", ev.Seq)
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) lockfile(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	if _, err := s.memberView(c, team); err != nil {
		return err
	}
	l, err := s.store.Lockfile(c.ctx, team)
	if err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.reply(c, http.StatusOK, l)
	return nil
}

// pushLockfile stores a new revision. Beyond its shape, every pinned module
// version must exist on this hub with exactly the pinned digests: a team
// cannot pin bytes the hub would not serve.
func (s *Server) pushLockfile(c *call) error {
	team, err := c.name("team")
	if err != nil {
		return err
	}
	var req hub.PushLockfileRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if req.BaseRevision < 0 {
		return hub.Errorf(hub.CodeBadRequest, "base_revision must not be negative")
	}
	if err := req.Lockfile.Validate(); err != nil {
		return err
	}
	if _, err := s.memberView(c, team); err != nil {
		return err
	}
	for i, m := range req.Lockfile.Modules {
		v, err := s.store.Version(c.ctx, m.ID, m.Version)
		if errors.Is(err, ErrNotFound) {
			return hub.Errorf(hub.CodeLockfileInvalid, "lockfile: modules[%d]: %s@%s is not on this hub", i, m.ID, m.Version)
		}
		if err != nil {
			return err
		}
		if v.ManifestDigest != m.ManifestDigest || v.WasmDigest != m.WasmDigest {
			return hub.Errorf(hub.CodeLockfileInvalid, "lockfile: modules[%d]: the digests of %s@%s are manifest %s, wasm %s, not the pinned ones", i, m.ID, m.Version, v.ManifestDigest, v.WasmDigest)
		}
	}
	tl, ev, err := s.store.PushLockfile(c.ctx, team, req.BaseRevision, req.Lockfile, c.account, s.now())
	if err != nil {
		return mapTeamErr(err, team, c.account)
	}
	s.relay.notify()
	s.log.Info("lockfile pushed", "account", c.account, "team", team, "revision", tl.Revision, "seq", ev.Seq)
	s.reply(c, http.StatusOK, tl)
	return nil
}
