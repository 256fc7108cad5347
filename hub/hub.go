// Package hub is the wire contract between a station and the hub, the
// marketplace and Teams relay server: the protocol version, the request,
// response and event documents, the numeric error codes, the signed module
// bundle and the team lockfile. The server (internal/hubserver) and the
// station's client (internal/hubclient) both build on it; the protocol is
// specified for every other implementation in docs/hub-protocol.md.
//
// Every endpoint lives under PathPrefix and exchanges JSON. A client sends
// HeaderProtocol with the version it speaks; the hub refuses a version it does
// not speak with CodeProtocolUnsupported and answers every request with the
// version it speaks. Errors are an ErrorResponse whose code is one of the
// Code constants; the table of codes is part of this contract and only grows.
//
// # Version history
//
//   - 1 (2026-11): accounts and tokens, publisher keys (minisign "Ed"),
//     module bundles (publish, versions, yank, search, download), the event
//     log (sync and the server-sent event stream with Last-Event-ID), teams
//     (create, invite, join, leave, roles) and the team lockfile with
//     revisions.
//   - 1, additions (2026-12): invite ids (Invite.ID); listing and revoking
//     pending invites (PendingInvite, CodeInviteNotFound); an invite is
//     usable only while its creator is an owner of the team.
//   - 1, additions (2026-12): security reports (Report, their threads,
//     triage), credits, admins (Account.Admin), station releases, and
//     advisories in the OSV format with their feed and events; codes
//     1600-1609.
//   - 1, additions (2026-12): the hub checks a module at publish as a
//     station checks it at install, and refuses one no station would
//     install with CodeModuleRefused.
package hub

import "time"

// ProtocolVersion is the version of the wire protocol this package
// describes. A new version may add endpoints, fields and error codes; it
// never changes the meaning of an existing one within the same PathPrefix.
const ProtocolVersion = 1

// PathPrefix is the path every version-1 endpoint starts with.
const PathPrefix = "/v1"

// HeaderProtocol carries the protocol version: the one a client speaks on a
// request, the one the hub speaks on every response.
const HeaderProtocol = "Station-Hub-Protocol"

// TokenPrefix starts every API token, so that secret scanners and people can
// tell a hub token at a glance.
const TokenPrefix = "sth_"

// InvitePrefix starts every team invite code.
const InvitePrefix = "sti_"

// Info is the answer to GET /v1/info: what the hub speaks and the limits it
// enforces, so that a client can refuse early what the hub would refuse.
type Info struct {
	// Server names the implementation, e.g. "station-hub".
	Server string `json:"server"`
	// Protocol is the protocol version the hub speaks.
	Protocol int `json:"protocol"`
	// Limits are the hub's limits.
	Limits Limits `json:"limits"`
}

// Limits are the sizes and rates a hub enforces.
type Limits struct {
	// MaxRequestBytes bounds the body of every request except a publish and
	// a lockfile push.
	MaxRequestBytes int64 `json:"max_request_bytes"`
	// MaxBundleBytes bounds the body of a publish (the JSON bundle).
	MaxBundleBytes int64 `json:"max_bundle_bytes"`
	// MaxWasmBytes bounds a module's wasm binary.
	MaxWasmBytes int64 `json:"max_wasm_bytes"`
	// MaxLockfileBytes bounds the body of a lockfile push.
	MaxLockfileBytes int64 `json:"max_lockfile_bytes"`
	// RatePerSecond is the sustained request rate allowed per account (per
	// client address for requests without a valid token).
	RatePerSecond float64 `json:"rate_per_second"`
	// Burst is how many requests may arrive at once before the rate applies.
	Burst int `json:"burst"`
	// MaxStreams bounds the event streams one account may hold open.
	MaxStreams int `json:"max_streams"`
}

// Account is a hub account. Its name is also the namespace it publishes
// into: only the account "dave" publishes "dave/*".
type Account struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// Admin is set on the hub's admins: they read and triage every report,
	// triage the station's own, and record station releases.
	Admin bool `json:"admin,omitempty"`
}

// Token describes an API token. The secret itself is shown once, in
// NewToken, and stored by the hub only as a hash.
type Token struct {
	// ID names the token for listing and revoking; it is not secret.
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateTokenRequest is the body of POST /v1/tokens.
type CreateTokenRequest struct {
	// Label says what the token is for ("laptop", "ci").
	Label string `json:"label"`
}

// NewToken is the answer to POST /v1/tokens: the only time the secret is
// sent.
type NewToken struct {
	Token
	// Secret is the bearer token, starting with TokenPrefix.
	Secret string `json:"secret"`
}

// Key is a publisher's signing key registered to an account.
type Key struct {
	// ID is the minisign key id, 16 upper-case hex digits as minisign shows
	// it.
	ID string `json:"id"`
	// Account is the account the key is registered to.
	Account string `json:"account"`
	// PublicKey is the minisign public key: the base64 line of a
	// minisign.pub file.
	PublicKey string    `json:"public_key"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is set once the key is revoked. Versions signed with a
	// revoked key no longer verify.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// AddKeyRequest is the body of POST /v1/keys.
type AddKeyRequest struct {
	// PublicKey is a minisign public key: the whole minisign.pub file or its
	// base64 line.
	PublicKey string `json:"public_key"`
}

// Module is a module on the hub with its versions, newest first.
type Module struct {
	// ID is "owner/slug".
	ID          string `json:"id"`
	Owner       string `json:"owner"`
	Description string `json:"description"`
	// Latest is the highest version (semantic version order) that is not
	// yanked; empty when every version is yanked.
	Latest    string    `json:"latest"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Versions are the module's versions, highest first. Search results
	// leave them out.
	Versions []Version `json:"versions,omitempty"`
}

// Version is one published version of a module. Everything but the yank
// state is immutable.
type Version struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	// ManifestDigest and WasmDigest are "sha256:" and the hex SHA-256 of
	// module.yaml and of the wasm binary.
	ManifestDigest string `json:"manifest_digest"`
	WasmDigest     string `json:"wasm_digest"`
	WasmSize       int64  `json:"wasm_size"`
	// KeyID is the id of the key that signed the bundle.
	KeyID       string    `json:"key_id"`
	PublishedAt time.Time `json:"published_at"`
	Yanked      bool      `json:"yanked"`
	YankReason  string    `json:"yank_reason,omitempty"`
}

// SearchResponse is the answer to GET /v1/modules.
type SearchResponse struct {
	Modules []Module `json:"modules"`
	// Next is the offset of the next page; 0 when this is the last page.
	Next int `json:"next,omitempty"`
}

// YankRequest is the body of POST .../versions/{version}/yank.
type YankRequest struct {
	// Reason tells stations why the version should not be installed.
	Reason string `json:"reason"`
}

// Team is a team as one of its members sees it.
type Team struct {
	Name string `json:"name"`
	// Role is the caller's role in the team.
	Role string `json:"role"`
	// Revision is the lockfile's revision (0 before the first push).
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	// Members are the team's members; the team list leaves them out.
	Members []Member `json:"members,omitempty"`
}

// Team roles. An owner invites, changes roles, removes members and pushes
// the lockfile; a member reads the team and its lockfile.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
)

// Member is one member of a team.
type Member struct {
	Account  string    `json:"account"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joined_at"`
}

// CreateTeamRequest is the body of POST /v1/teams.
type CreateTeamRequest struct {
	Name string `json:"name"`
}

// InviteRequest is the body of POST /v1/teams/{team}/invites.
type InviteRequest struct {
	// Account, if set, is the only account that may accept the invite.
	Account string `json:"account,omitempty"`
	// Role is the role the invitee joins with (default RoleMember).
	Role string `json:"role,omitempty"`
}

// Invite is a created invite. Code is secret: whoever holds it (and is
// Account, if that is set) may join, while the owner who made it is still
// an owner of the team.
type Invite struct {
	// ID names the invite for listing and revoking (PendingInvite); it is
	// not secret and says nothing of the code.
	ID        string    `json:"id"`
	Team      string    `json:"team"`
	Code      string    `json:"code"`
	Role      string    `json:"role"`
	Account   string    `json:"account,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PendingInvite is an invite that is neither used nor expired, as GET and
// DELETE /v1/teams/{team}/invites show it to an owner: never its code,
// which the hub does not keep.
type PendingInvite struct {
	ID   string `json:"id"`
	Team string `json:"team"`
	Role string `json:"role"`
	// Account, if set, is the only account that may accept the invite.
	Account string `json:"account,omitempty"`
	// CreatedBy is the owner who made it; the invite lasts only while they
	// are an owner of the team.
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ValidInviteID reports whether id has the form of an invite id: 16
// lower-case hex digits.
func ValidInviteID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !(id[i] >= '0' && id[i] <= '9' || id[i] >= 'a' && id[i] <= 'f') {
			return false
		}
	}
	return true
}

// AcceptInviteRequest is the body of POST /v1/invites/accept.
type AcceptInviteRequest struct {
	Code string `json:"code"`
}

// SetRoleRequest is the body of PUT /v1/teams/{team}/members/{account}.
type SetRoleRequest struct {
	Role string `json:"role"`
}

// TeamLockfile is a team's shared state at one revision.
type TeamLockfile struct {
	Team     string   `json:"team"`
	Revision int64    `json:"revision"`
	Lockfile Lockfile `json:"lockfile"`
	// UpdatedAt and UpdatedBy say when and by whom the revision was pushed
	// (zero and empty at revision 0).
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// PushLockfileRequest is the body of PUT /v1/teams/{team}/lockfile. The push
// succeeds only if BaseRevision is the team's current revision; the new
// revision is BaseRevision+1.
type PushLockfileRequest struct {
	BaseRevision int64    `json:"base_revision"`
	Lockfile     Lockfile `json:"lockfile"`
}

// SyncResponse is the answer to GET /v1/sync: the events the caller may see
// after the cursor it sent.
type SyncResponse struct {
	Events []Event `json:"events"`
	// Cursor is where the next sync starts: the sequence number of the last
	// event examined (which may be past the last event returned, when
	// events the caller may not see were skipped).
	Cursor int64 `json:"cursor"`
	// More is true when the page was full: sync again from Cursor.
	More bool `json:"more"`
}

// Event kinds. Module and key events are public; team events are seen by
// the team's members and by the account a membership event is about.
const (
	EventModulePublished = "module.published"
	EventModuleYanked    = "module.yanked"
	EventModuleUnyanked  = "module.unyanked"
	EventKeyRevoked      = "key.revoked"
	EventTeamCreated     = "team.created"
	EventMemberJoined    = "team.member.joined"
	EventMemberLeft      = "team.member.left"
	EventMemberRemoved   = "team.member.removed"
	EventMemberRole      = "team.member.role"
	EventLockfilePushed  = "team.lockfile"
	// Advisory events are public: an advisory was published, changed (a
	// fix recorded, a report made public) or withdrawn. Advisory names it;
	// GET /v1/advisories/{id} has it as it is now.
	EventAdvisoryPublished = "advisory.published"
	EventAdvisoryUpdated   = "advisory.updated"
	EventAdvisoryWithdrawn = "advisory.withdrawn"
)

// Event is one entry of the hub's event log. Seq orders the log and is the
// cursor a station syncs and reconnects from. Fields that do not apply to a
// kind are empty.
type Event struct {
	Seq  int64     `json:"seq"`
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Actor is the account that caused the event.
	Actor string `json:"actor,omitempty"`
	// Module, Version and the digests are set on module events.
	Module         string `json:"module,omitempty"`
	Version        string `json:"version,omitempty"`
	ManifestDigest string `json:"manifest_digest,omitempty"`
	WasmDigest     string `json:"wasm_digest,omitempty"`
	// Team is set on team events.
	Team string `json:"team,omitempty"`
	// Account is the account a membership event is about, or the owner of a
	// revoked key.
	Account string `json:"account,omitempty"`
	Role    string `json:"role,omitempty"`
	// Revision is the new lockfile revision on team.lockfile.
	Revision int64  `json:"revision,omitempty"`
	KeyID    string `json:"key_id,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Advisory is the advisory id of an advisory event (Module is its
	// target: a module id or Product).
	Advisory string `json:"advisory,omitempty"`
}
