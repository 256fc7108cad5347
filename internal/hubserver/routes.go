package hubserver

import (
	"errors"
	"net/http"
	"strings"

	"github.com/station-dev/station/hub"
)

// routes registers every endpoint of protocol version 1
// (docs/hub-protocol.md has the same list), and /healthz and /readyz.
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	anyone, account := endpoint{}, endpoint{auth: true}
	v := hub.PathPrefix

	s.handle("GET "+v+"/info", anyone, s.info)
	s.handle("GET "+v+"/whoami", account, s.whoami)

	s.handle("POST "+v+"/tokens", account, s.createToken)
	s.handle("GET "+v+"/tokens", account, s.listTokens)
	s.handle("DELETE "+v+"/tokens/{id}", account, s.deleteToken)

	s.handle("POST "+v+"/keys", account, s.addKey)
	s.handle("DELETE "+v+"/keys/{id}", account, s.revokeKey)
	s.handle("GET "+v+"/accounts/{account}/keys", anyone, s.listKeys)

	s.handle("GET "+v+"/modules", anyone, s.search)
	s.handle("POST "+v+"/modules", endpoint{auth: true, body: s.limits.MaxBundleBytes}, s.publish)
	s.handle("GET "+v+"/modules/{owner}/{slug}", anyone, s.module)
	s.handle("GET "+v+"/modules/{owner}/{slug}/versions/{version}", anyone, s.version)
	s.handle("GET "+v+"/modules/{owner}/{slug}/versions/{version}/bundle", anyone, s.bundle)
	s.handle("POST "+v+"/modules/{owner}/{slug}/versions/{version}/yank", account, s.yank)
	s.handle("DELETE "+v+"/modules/{owner}/{slug}/versions/{version}/yank", account, s.unyank)

	s.handle("POST "+v+"/teams", account, s.createTeam)
	s.handle("GET "+v+"/teams", account, s.listTeams)
	s.handle("GET "+v+"/teams/{team}", account, s.team)
	s.handle("POST "+v+"/teams/{team}/invites", account, s.invite)
	s.handle("GET "+v+"/teams/{team}/invites", account, s.listInvites)
	s.handle("DELETE "+v+"/teams/{team}/invites", account, s.revokeInvites)
	s.handle("DELETE "+v+"/teams/{team}/invites/{id}", account, s.revokeInvite)
	s.handle("POST "+v+"/invites/accept", account, s.acceptInvite)
	s.handle("POST "+v+"/teams/{team}/leave", account, s.leave)
	s.handle("PUT "+v+"/teams/{team}/members/{account}", account, s.setRole)
	s.handle("DELETE "+v+"/teams/{team}/members/{account}", account, s.removeMember)
	s.handle("GET "+v+"/teams/{team}/lockfile", account, s.lockfile)
	s.handle("PUT "+v+"/teams/{team}/lockfile", endpoint{auth: true, body: s.limits.MaxLockfileBytes}, s.pushLockfile)

	bounded := func(body int64) endpoint { return endpoint{auth: true, body: body} }
	s.handle("POST "+v+"/reports", bounded(maxReportRequestBytes), s.fileReport)
	s.handle("GET "+v+"/reports", anyone, s.listReports)
	s.handle("GET "+v+"/reports/{id}", anyone, s.report)
	s.handle("POST "+v+"/reports/{id}/comments", bounded(maxNoteRequestBytes), s.comment)
	s.handle("POST "+v+"/reports/{id}/triage", bounded(maxNoteRequestBytes), s.triage)
	s.handle("GET "+v+"/accounts/{account}/credits", anyone, s.credits)
	s.handle("GET "+v+"/credits", anyone, s.hallOfFame)
	s.handle("POST "+v+"/station/releases", account, s.recordRelease)
	s.handle("GET "+v+"/station/releases", anyone, s.listReleases)

	s.handle("POST "+v+"/advisories", bounded(maxAdvisoryRequestBytes), s.publishAdvisory)
	s.handle("GET "+v+"/advisories", anyone, s.listAdvisories)
	s.handle("GET "+v+"/advisories/feed", anyone, s.advisoryFeed)
	s.handle("GET "+v+"/advisories/{id}", anyone, s.advisory)
	s.handle("POST "+v+"/advisories/{id}/withdraw", account, s.withdrawAdvisory)

	s.handle("GET "+v+"/sync", account, s.sync)
	s.handle("GET "+v+"/events", endpoint{auth: true, stream: true}, s.events)

	// Health and readiness, outside the versioned API and its guards: no
	// protocol check, token, rate limit or log line (health.go). /metrics
	// is not here but on the operator's listener (MetricsHandler).
	s.mux.HandleFunc("GET /healthz", routed("/healthz", s.healthz))
	s.mux.HandleFunc("GET /readyz", routed("/readyz", s.readyz))

	s.handle("/", anyone, func(c *call) error {
		return hub.Errorf(hub.CodeNoEndpoint, "no endpoint %s %s (see docs/hub-protocol.md)", c.r.Method, clip(c.r.URL.Path))
	})
}

func (s *Server) info(c *call) error {
	s.reply(c, http.StatusOK, hub.Info{Server: "station-hub", Protocol: hub.ProtocolVersion, Limits: s.limits})
	return nil
}

// Path parameters are validated before they reach the store, with the
// grammar of the names they stand for.

func (c *call) name(param string) (string, error) {
	v := c.r.PathValue(param)
	if msg := hub.CheckName(v); msg != "" {
		return "", hub.Errorf(hub.CodeInvalidName, "%s %q %s", param, clip(v), msg)
	}
	return v, nil
}

func (c *call) moduleID() (string, error) {
	id := c.r.PathValue("owner") + "/" + c.r.PathValue("slug")
	if msg := hub.CheckModuleID(id); msg != "" {
		return "", hub.Errorf(hub.CodeInvalidName, "module %q: %s", clip(id), msg)
	}
	return id, nil
}

func (c *call) moduleVersion() (id, version string, err error) {
	if id, err = c.moduleID(); err != nil {
		return "", "", err
	}
	version = c.r.PathValue("version")
	if msg := hub.CheckVersion(version); msg != "" {
		return "", "", hub.Errorf(hub.CodeInvalidName, "version %q %s", clip(version), msg)
	}
	return id, version, nil
}

// checkText validates free text a person will read (a yank reason, which
// the advisory feed carries to every station).
func checkText(field, s string, max int) error {
	if len(s) > max {
		return hub.Errorf(hub.CodeBadRequest, "%s is longer than %d bytes", field, max)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unsafeRune(r) || invisibleRune(r) }) {
		return hub.Errorf(hub.CodeBadRequest, "%s contains a control or invisible formatting character", field)
	}
	return nil
}

// mapTeamErr turns a Store error about a team into its wire error.
func mapTeamErr(err error, team, account string) error {
	var ce *ConflictError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return hub.Errorf(hub.CodeTeamNotFound, "team %q does not exist or you are not a member", team)
	case errors.Is(err, ErrNotOwner):
		return hub.Errorf(hub.CodeNotTeamOwner, "only an owner of team %q may do this", team)
	case errors.Is(err, ErrNoMember):
		return hub.Errorf(hub.CodeMemberNotFound, "%q is not a member of team %q", account, team)
	case errors.Is(err, ErrLastOwner):
		return hub.Errorf(hub.CodeLastOwner, "%q is the last owner of team %q: make another member an owner first", account, team)
	case errors.Is(err, ErrAlreadyMember):
		return hub.Errorf(hub.CodeAlreadyMember, "%q is already a member of team %q", account, team)
	case errors.Is(err, ErrInviteInvalid):
		return hub.Errorf(hub.CodeInviteInvalid, "the invite code is unknown, used, revoked, expired or for another account, or the owner who made it is no longer one: ask a team owner for a new one")
	case errors.As(err, &ce):
		e := hub.Errorf(hub.CodeRevisionConflict, "team %q is at lockfile revision %d, not %d: pull the lockfile, merge your change and push again", team, ce.Current, ce.Base)
		e.Revision = ce.Current
		return e
	}
	return err
}
