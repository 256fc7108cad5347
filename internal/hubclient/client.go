// Package hubclient is the station's client for the hub: every endpoint of
// the protocol in package hub, the verification of downloaded bundles, the
// publisher's signing key, and a relay subscription that reconnects from its
// cursor.
//
// The client is station-level I/O. It does its requests with the
// *http.Client its caller gives it — the station passes its own client from
// internal/stationhttp — and never with a module's transport or
// http.DefaultClient, so no module's policy can govern it (the old system's
// headline failure: a Stripe-only module's allowlist refusing `team sync`).
//
// The client never follows a redirect (a token is only ever sent to the hub
// it was given), refuses plain http except to a loopback address, bounds
// every answer it reads, and never puts the token in an error.
package hubclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/stationhttp"
)

// maxAnswer bounds an answer other than a bundle.
const maxAnswer = 16 << 20

// Options configure a Client.
type Options struct {
	// Token is the account's API token ("" for anonymous reads).
	Token string
	// AllowInsecure allows a plain-http hub that is not on a loopback
	// address. The token then crosses the network in clear text.
	AllowInsecure bool
}

// Client talks to one hub. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	http    *http.Client // redirects refused
	streams *http.Client // the same transport, no overall timeout
	token   string
}

// New returns a client for the hub at baseURL (e.g.
// "https://hub.example.com" or "http://127.0.0.1:7777") that does its
// requests with hc, which must be the station's own client.
func New(baseURL string, hc *http.Client, o Options) (*Client, error) {
	if hc == nil {
		return nil, errors.New("hub client: an *http.Client is required (the station's own, from stationhttp.NewClient)")
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("hub URL %q: want scheme://host[:port][/path]", baseURL)
	}
	// The URL is the hub's identity on a station (its advisories, the
	// origins of what was installed from it, the keys pinned for it): one
	// spelling per hub, the host in lower case and no default port.
	u.Host = strings.ToLower(u.Host)
	if p := u.Port(); u.Scheme == "https" && p == "443" || u.Scheme == "http" && p == "80" {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !o.AllowInsecure && !stationhttp.IsLoopback(u.Hostname()) {
			return nil, fmt.Errorf("hub URL %q: plain http is allowed only to a loopback address; use https", baseURL)
		}
	default:
		return nil, fmt.Errorf("hub URL %q: scheme must be https (or http to a loopback address)", baseURL)
	}
	// Copies of the caller's client: the same transport (connections, TLS
	// settings, proxy), but no redirects, and for streams no overall
	// timeout (a stream is long-lived; an idle watchdog bounds it instead).
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error {
		return errors.New("the hub answered with a redirect; hub clients do not follow redirects")
	}
	s := c
	s.Timeout = 0
	return &Client{base: u, http: &c, streams: &s, token: o.Token}, nil
}

// URL returns the hub's base URL, spelled one way for each hub: the host
// in lower case, no default port, no trailing slash.
func (c *Client) URL() string { return c.base.String() }

// WithToken returns a copy of c that sends token.
func (c *Client) WithToken(token string) *Client {
	cc := *c
	cc.token = token
	return &cc
}

// request builds a request for path (under hub.PathPrefix, its segments
// already escaped with url.PathEscape) with the protocol header and the
// token.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Request, error) {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + hub.PathPrefix + path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("hub request path %q: %w", path, err)
	}
	u.Path = p
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set(hub.HeaderProtocol, strconv.Itoa(hub.ProtocolVersion))
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// do sends a request and decodes a 2xx answer into out (unless out is nil
// or the answer is 204). Any other answer becomes an *hub.Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any, max int64) error {
	req, err := c.request(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach the hub at %s: %w", c.base.Host, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return answerError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	if int64(len(data)) > max {
		return fmt.Errorf("the hub's answer is larger than %d bytes", max)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode the hub's answer: %w", err)
	}
	return nil
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// method and URL the caller already names.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// answerError decodes a hub error document, or describes an answer that is
// not one (a proxy's error page).
func answerError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var er hub.ErrorResponse
	if json.Unmarshal(data, &er) == nil && er.Error != nil && er.Error.Code != 0 {
		if er.Error.RetryAfter == 0 {
			er.Error.RetryAfter, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
		}
		return er.Error
	}
	return fmt.Errorf("the hub answered %s, without a hub error document", resp.Status)
}

// Info returns what the hub speaks and its limits.
func (c *Client) Info(ctx context.Context) (hub.Info, error) {
	var out hub.Info
	err := c.do(ctx, http.MethodGet, "/info", nil, nil, &out, maxAnswer)
	return out, wrap(err, "hub info")
}

// WhoAmI returns the account the token belongs to. `station hub login`
// calls it to check a token before saving it.
func (c *Client) WhoAmI(ctx context.Context) (hub.Account, error) {
	var out hub.Account
	err := c.do(ctx, http.MethodGet, "/whoami", nil, nil, &out, maxAnswer)
	return out, wrap(err, "check hub login")
}

// CreateToken issues another token for the account. The secret in the
// answer is the only copy.
func (c *Client) CreateToken(ctx context.Context, label string) (hub.NewToken, error) {
	var out hub.NewToken
	err := c.do(ctx, http.MethodPost, "/tokens", nil, hub.CreateTokenRequest{Label: label}, &out, maxAnswer)
	return out, wrap(err, "create token")
}

// Tokens lists the account's tokens (never their secrets).
func (c *Client) Tokens(ctx context.Context) ([]hub.Token, error) {
	var out []hub.Token
	err := c.do(ctx, http.MethodGet, "/tokens", nil, nil, &out, maxAnswer)
	return out, wrap(err, "list tokens")
}

// RevokeToken revokes one of the account's tokens.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return wrap(c.do(ctx, http.MethodDelete, "/tokens/"+url.PathEscape(id), nil, nil, nil, 0), "revoke token %s", id)
}

// AddKey registers a publisher key with the account.
func (c *Client) AddKey(ctx context.Context, k hub.PublicKey) (hub.Key, error) {
	var out hub.Key
	err := c.do(ctx, http.MethodPost, "/keys", nil, hub.AddKeyRequest{PublicKey: k.String()}, &out, maxAnswer)
	return out, wrap(err, "register key %s", k.ID)
}

// RevokeKey revokes one of the account's keys: versions signed with it no
// longer verify.
func (c *Client) RevokeKey(ctx context.Context, id hub.KeyID) (hub.Key, error) {
	var out hub.Key
	err := c.do(ctx, http.MethodDelete, "/keys/"+id.String(), nil, nil, &out, maxAnswer)
	return out, wrap(err, "revoke key %s", id)
}

// Keys lists an account's keys, revoked ones included.
func (c *Client) Keys(ctx context.Context, account string) ([]hub.Key, error) {
	var out []hub.Key
	err := c.do(ctx, http.MethodGet, "/accounts/"+url.PathEscape(account)+"/keys", nil, nil, &out, maxAnswer)
	return out, wrap(err, "list keys of %s", account)
}

// SearchOptions narrow a search.
type SearchOptions struct {
	// Query matches module ids and descriptions (all modules when empty).
	Query string
	// Owner restricts the search to one namespace.
	Owner string
	// Offset and Limit page the results (Limit 0: the hub's default).
	Offset, Limit int
}

// Search finds modules.
func (c *Client) Search(ctx context.Context, o SearchOptions) (hub.SearchResponse, error) {
	q := url.Values{}
	if o.Query != "" {
		q.Set("q", o.Query)
	}
	if o.Owner != "" {
		q.Set("owner", o.Owner)
	}
	if o.Offset > 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var out hub.SearchResponse
	err := c.do(ctx, http.MethodGet, "/modules", q, nil, &out, maxAnswer)
	return out, wrap(err, "search modules")
}

// modulePath returns the path of a module id, each part escaped.
func modulePath(id string) (string, error) {
	if msg := hub.CheckModuleID(id); msg != "" {
		return "", hub.Errorf(hub.CodeInvalidName, "module %q: %s", id, msg)
	}
	owner, slug, _ := strings.Cut(id, "/")
	return "/modules/" + url.PathEscape(owner) + "/" + url.PathEscape(slug), nil
}

func versionPath(id, version string) (string, error) {
	p, err := modulePath(id)
	if err != nil {
		return "", err
	}
	if msg := hub.CheckVersion(version); msg != "" {
		return "", hub.Errorf(hub.CodeInvalidName, "version %q %s", version, msg)
	}
	return p + "/versions/" + url.PathEscape(version), nil
}

// Module returns a module with its versions, highest first.
func (c *Client) Module(ctx context.Context, id string) (hub.Module, error) {
	var out hub.Module
	p, err := modulePath(id)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p, nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "module %s", id)
}

// Version returns one version of a module.
func (c *Client) Version(ctx context.Context, id, version string) (hub.Version, error) {
	var out hub.Version
	p, err := versionPath(id, version)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p, nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "module %s@%s", id, version)
}

// ParseRef splits "owner/slug[@version]".
func ParseRef(ref string) (id, version string, err error) {
	id, version, at := strings.Cut(ref, "@")
	if msg := hub.CheckModuleID(id); msg != "" {
		return "", "", fmt.Errorf("module %q: %s", ref, msg)
	}
	if at {
		if msg := hub.CheckVersion(version); msg != "" {
			return "", "", fmt.Errorf("module %q: version %s", ref, msg)
		}
	}
	return id, version, nil
}

// Resolve returns the version ref names: "owner/slug@version" exactly, or
// "owner/slug" for the module's latest version that is not yanked.
func (c *Client) Resolve(ctx context.Context, ref string) (hub.Version, error) {
	id, version, err := ParseRef(ref)
	if err != nil {
		return hub.Version{}, err
	}
	if version != "" {
		return c.Version(ctx, id, version)
	}
	m, err := c.Module(ctx, id)
	if err != nil {
		return hub.Version{}, err
	}
	for _, v := range m.Versions {
		if v.Version == m.Latest {
			return v, nil
		}
	}
	return hub.Version{}, fmt.Errorf("module %s: every version is yanked; name one explicitly (%s@VERSION)", id, id)
}

// Publish uploads a signed bundle (see NewBundle).
func (c *Client) Publish(ctx context.Context, b *hub.Bundle) (hub.Version, error) {
	var out hub.Version
	err := c.do(ctx, http.MethodPost, "/modules", nil, b, &out, maxAnswer)
	return out, wrap(err, "publish")
}

// Yank marks a version as not to be installed, with a reason. Stations that
// pinned it can still download it.
func (c *Client) Yank(ctx context.Context, id, version, reason string) (hub.Version, error) {
	var out hub.Version
	p, err := versionPath(id, version)
	if err == nil {
		err = c.do(ctx, http.MethodPost, p+"/yank", nil, hub.YankRequest{Reason: reason}, &out, maxAnswer)
	}
	return out, wrap(err, "yank %s@%s", id, version)
}

// Unyank undoes Yank.
func (c *Client) Unyank(ctx context.Context, id, version string) (hub.Version, error) {
	var out hub.Version
	p, err := versionPath(id, version)
	if err == nil {
		err = c.do(ctx, http.MethodDelete, p+"/yank", nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "unyank %s@%s", id, version)
}

// Sync returns the events the account may see after cursor (limit 0: the
// hub's default page). Sync again from the answer's Cursor while More is
// true.
func (c *Client) Sync(ctx context.Context, cursor int64, limit int) (hub.SyncResponse, error) {
	q := url.Values{"cursor": {strconv.FormatInt(cursor, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out hub.SyncResponse
	err := c.do(ctx, http.MethodGet, "/sync", q, nil, &out, maxAnswer)
	return out, wrap(err, "sync from %d", cursor)
}

func teamPath(team string) (string, error) {
	if msg := hub.CheckName(team); msg != "" {
		return "", hub.Errorf(hub.CodeInvalidName, "team %q %s", team, msg)
	}
	return "/teams/" + team, nil
}

// CreateTeam creates a team the account owns.
func (c *Client) CreateTeam(ctx context.Context, name string) (hub.Team, error) {
	var out hub.Team
	err := c.do(ctx, http.MethodPost, "/teams", nil, hub.CreateTeamRequest{Name: name}, &out, maxAnswer)
	return out, wrap(err, "create team %s", name)
}

// Teams lists the teams the account is a member of.
func (c *Client) Teams(ctx context.Context) ([]hub.Team, error) {
	var out []hub.Team
	err := c.do(ctx, http.MethodGet, "/teams", nil, nil, &out, maxAnswer)
	return out, wrap(err, "list teams")
}

// Team returns a team with its members (`station team status`).
func (c *Client) Team(ctx context.Context, name string) (hub.Team, error) {
	var out hub.Team
	p, err := teamPath(name)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p, nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "team %s", name)
}

// Invite creates an invite code for team (owners only). With account set,
// only that account may use it.
func (c *Client) Invite(ctx context.Context, team string, req hub.InviteRequest) (hub.Invite, error) {
	var out hub.Invite
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodPost, p+"/invites", nil, req, &out, maxAnswer)
	}
	return out, wrap(err, "invite to team %s", team)
}

// Invites lists the team's pending invites (owners only): ids, roles,
// creators and expiry, never codes.
func (c *Client) Invites(ctx context.Context, team string) ([]hub.PendingInvite, error) {
	var out []hub.PendingInvite
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p+"/invites", nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "list the invites of team %s", team)
}

// RevokeInvite revokes one pending invite of team by its id (owners only)
// and returns it; its code no longer works.
func (c *Client) RevokeInvite(ctx context.Context, team, id string) (hub.PendingInvite, error) {
	var out hub.PendingInvite
	p, err := teamPath(team)
	if err == nil && !hub.ValidInviteID(id) {
		if strings.HasPrefix(id, hub.InvitePrefix) || strings.HasPrefix(id, hub.TokenPrefix) {
			// Never repeat a secret pasted into the wrong place.
			return out, fmt.Errorf("revoke an invite of team %s: that is a secret (an invite code or a token), not an invite id; the ids are in `station team invites %s`", team, team)
		}
		err = hub.Errorf(hub.CodeBadRequest, "invite id %q: want the 16 hex digits `station team invites` shows", id)
	}
	if err == nil {
		err = c.do(ctx, http.MethodDelete, p+"/invites/"+id, nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "revoke invite %q of team %s", id, team)
}

// RevokeInvites revokes every pending invite of team (owners only) and
// returns what it revoked.
func (c *Client) RevokeInvites(ctx context.Context, team string) ([]hub.PendingInvite, error) {
	var out []hub.PendingInvite
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodDelete, p+"/invites", nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "revoke the invites of team %s", team)
}

// Join uses an invite code and returns the team joined.
func (c *Client) Join(ctx context.Context, code string) (hub.Team, error) {
	var out hub.Team
	err := c.do(ctx, http.MethodPost, "/invites/accept", nil, hub.AcceptInviteRequest{Code: code}, &out, maxAnswer)
	return out, wrap(err, "join team")
}

// Leave leaves a team.
func (c *Client) Leave(ctx context.Context, team string) error {
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodPost, p+"/leave", nil, nil, nil, 0)
	}
	return wrap(err, "leave team %s", team)
}

// SetRole changes a member's role (owners only).
func (c *Client) SetRole(ctx context.Context, team, account, role string) (hub.Member, error) {
	var out hub.Member
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodPut, p+"/members/"+url.PathEscape(account), nil, hub.SetRoleRequest{Role: role}, &out, maxAnswer)
	}
	return out, wrap(err, "set the role of %s in team %s", account, team)
}

// RemoveMember removes a member (owners only; anyone may remove
// themselves).
func (c *Client) RemoveMember(ctx context.Context, team, account string) error {
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodDelete, p+"/members/"+url.PathEscape(account), nil, nil, nil, 0)
	}
	return wrap(err, "remove %s from team %s", account, team)
}

// Lockfile returns the team's lockfile at its current revision.
func (c *Client) Lockfile(ctx context.Context, team string) (hub.TeamLockfile, error) {
	var out hub.TeamLockfile
	p, err := teamPath(team)
	if err == nil {
		err = c.do(ctx, http.MethodGet, p+"/lockfile", nil, nil, &out, maxAnswer)
	}
	return out, wrap(err, "read the lockfile of team %s", team)
}

// PushLockfile stores l as the revision after base (owners only). If the
// team has moved past base, the error's code is hub.CodeRevisionConflict and
// its Revision the team's current revision: pull, merge, push again.
func (c *Client) PushLockfile(ctx context.Context, team string, base int64, l hub.Lockfile) (hub.TeamLockfile, error) {
	var out hub.TeamLockfile
	p, err := teamPath(team)
	if err == nil {
		err = l.Validate()
	}
	if err == nil {
		err = c.do(ctx, http.MethodPut, p+"/lockfile", nil, hub.PushLockfileRequest{BaseRevision: base, Lockfile: l}, &out, maxAnswer)
	}
	return out, wrap(err, "push the lockfile of team %s on revision %d", team, base)
}

// wrap names the operation that failed.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
