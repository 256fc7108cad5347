package hubserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/station-dev/station/hub"
)

// Store is where the hub keeps everything but blobs: accounts, token
// hashes, keys, modules and versions, teams with their members, invites and
// lockfiles, and the event log. OpenSQLite returns the one-machine
// implementation; a PostgreSQL one can take its place without a change to
// the handlers.
//
// The contract every implementation keeps (storeContract in the tests checks
// it, and runs against every implementation):
//
//   - Every method that changes state and returns a hub.Event appends that
//     event to the log in the same transaction as the change: no change
//     without its event, no event without its change.
//   - Events are appended in commit order: once an event with sequence
//     number N is visible to a reader, so is every event below N. (SQLite
//     gets this from its single writer; a PostgreSQL store must serialize
//     appends, e.g. by locking a counter row, not use a bare sequence.)
//   - The rules that must hold at commit are checked inside the transaction,
//     not by the caller: a version is never published twice (nor two with
//     equal semver precedence), a lockfile push applies only on top of its
//     base revision, a team always keeps an owner, only an owner changes a
//     team, an invite is used once and only while its creator is an owner
//     (losing the role deletes its invites); a private report is read,
//     commented and triaged only by its reporter, the target's owner and
//     the hub's admins (for anyone else it does not exist), triaged only by
//     the target's owner or an admin (for the station: an admin), along
//     hub.ReportTransitions only, and everything one triage asks for
//     applies together or not at all; a report's thread and an advisory
//     change only with the thread event and hub event that record it.
//   - Errors are, or wrap, the sentinel errors below (or *ConflictError,
//     or a *RuleError that wraps one and says why); the server maps them
//     to wire codes.
type Store interface {
	// CreateAccount creates an account. ErrExists if the name is taken.
	CreateAccount(ctx context.Context, name string, at time.Time) (hub.Account, error)
	// Account returns an account, with whether it is an admin.
	// ErrNotFound if there is none.
	Account(ctx context.Context, name string) (hub.Account, error)
	// SetAdmin makes an account one of the hub's admins (admin true) or
	// not, for the operator. ErrNotFound if there is no such account.
	SetAdmin(ctx context.Context, name string, admin bool) error

	// AddToken records a token (its hash only). ErrNotFound if the account
	// does not exist.
	AddToken(ctx context.Context, t Token) error
	// TokenByHash returns the token whose secret hashes to hash.
	// ErrNotFound if there is none.
	TokenByHash(ctx context.Context, hash [32]byte) (Token, error)
	// Tokens lists an account's tokens, oldest first.
	Tokens(ctx context.Context, account string) ([]Token, error)
	// DeleteToken revokes one of account's tokens. ErrNotFound if account
	// has no token with that id.
	DeleteToken(ctx context.Context, account, id string) error

	// AddKey registers a publisher key. ErrExists if the account has a key
	// with that id.
	AddKey(ctx context.Context, k hub.Key) error
	// Keys lists an account's keys, revoked ones included, oldest first.
	Keys(ctx context.Context, account string) ([]hub.Key, error)
	// RevokeKey revokes one of account's keys and appends key.revoked.
	// ErrNotFound if there is no such active key.
	RevokeKey(ctx context.Context, account, id string, at time.Time) (hub.Key, hub.Event, error)

	// Publish records a new version (its blobs are already stored), creates
	// the module on its first version, and appends module.published.
	// ErrExists if the version, or one of equal precedence, exists.
	Publish(ctx context.Context, v Version) (hub.Event, error)
	// Module returns a module with all its versions, highest first.
	// ErrNotFound if there is none.
	Module(ctx context.Context, id string) (hub.Module, error)
	// Version returns one version. ErrNotFound if there is none.
	Version(ctx context.Context, module, version string) (Version, error)
	// SetYanked yanks (yanked true, with a reason) or unyanks a version and
	// appends module.yanked or module.unyanked. When the version is already
	// in that state nothing changes and the event is nil. ErrNotFound if
	// there is no such version.
	SetYanked(ctx context.Context, module, version string, yanked bool, reason, actor string, at time.Time) (hub.Version, *hub.Event, error)
	// Search returns modules whose id or description contains query (all
	// when empty), of owner when set, ordered by id, without versions.
	Search(ctx context.Context, query, owner string, offset, limit int) ([]hub.Module, error)

	// CreateTeam creates a team owned by owner and appends team.created.
	// ErrExists if the name is taken.
	CreateTeam(ctx context.Context, name, owner string, at time.Time) (hub.Event, error)
	// Team returns a team with its members (Role is left empty).
	// ErrNotFound if there is none.
	Team(ctx context.Context, name string) (hub.Team, error)
	// TeamsOf lists the teams account is a member of, with its role in each.
	TeamsOf(ctx context.Context, account string) ([]hub.Team, error)
	// Members returns the names of a team's members.
	Members(ctx context.Context, team string) ([]string, error)
	// AddInvite records an invite (its code's hash only); inv.CreatedBy must
	// be an owner of inv.Team (ErrNotOwner, or ErrNotFound when not a
	// member).
	AddInvite(ctx context.Context, inv Invite) error
	// Invites lists the invites of team that are neither used nor expired
	// at at, oldest first. actor must be an owner (ErrNotOwner; ErrNotFound
	// when not a member).
	Invites(ctx context.Context, team, actor string, at time.Time) ([]Invite, error)
	// RevokeInvites deletes the invite of team with this id, or every
	// invite of team when id is "", and returns what it deleted (only
	// invites not expired at at). actor must be an owner (ErrNotOwner;
	// ErrNotFound when not a member); ErrNoInvite if id names no such
	// invite of team.
	RevokeInvites(ctx context.Context, team, id, actor string, at time.Time) ([]Invite, error)
	// AcceptInvite makes account a member with the invite's role, uses up
	// the invite and appends team.member.joined. ErrInviteInvalid if the
	// code is unknown, used, revoked, expired or for another account, or
	// if its creator is no longer an owner of the team (an invite is only
	// as good as its creator's role now); ErrAlreadyMember (the invite is
	// kept) if account is a member.
	AcceptInvite(ctx context.Context, hash [32]byte, account string, at time.Time) (hub.Team, hub.Event, error)
	// SetRole changes a member's role and appends team.member.role. actor
	// must be an owner (ErrNotOwner); ErrLastOwner if it would leave the
	// team without an owner; ErrNotFound if actor is not a member;
	// ErrNoMember if account is not. Demoting an owner deletes the invites
	// it made for the team.
	SetRole(ctx context.Context, team, account, role, actor string, at time.Time) (hub.Member, hub.Event, error)
	// RemoveMember removes account from team and appends team.member.left
	// (actor == account) or team.member.removed. Anyone may leave; only an
	// owner removes another (ErrNotOwner). ErrLastOwner if the team would be
	// left without an owner. The invites account made for the team are
	// deleted.
	RemoveMember(ctx context.Context, team, account, actor string, at time.Time) (hub.Event, error)
	// Lockfile returns the team's lockfile at its current revision.
	// ErrNotFound if there is no such team.
	Lockfile(ctx context.Context, team string) (hub.TeamLockfile, error)
	// PushLockfile stores l as revision base+1 and appends team.lockfile.
	// actor must be an owner (ErrNotOwner; ErrNotFound when not a member);
	// *ConflictError if the team's revision is not base.
	PushLockfile(ctx context.Context, team string, base int64, l hub.Lockfile, actor string, at time.Time) (hub.TeamLockfile, hub.Event, error)

	// FileReport stores a new report (r's ID, target, fields, reporter
	// and CreatedAt; its state is new) with its filed thread event.
	// ErrNoTarget unless r.Target is hub.Product or a module on the hub;
	// ErrExists if the id is taken.
	FileReport(ctx context.Context, r hub.Report) (hub.Report, error)
	// Report returns a report with its thread, as viewer ("" for no
	// account) sees it: without the reproduction unless viewer is the
	// reporter, the target's owner or an admin. ErrNotFound if there is
	// none or viewer may not read it: the same error. The report it
	// duplicates (DuplicateOf, in the report and its thread) is named only
	// to a viewer who may read that one.
	Report(ctx context.Context, id, viewer string) (hub.Report, error)
	// Reports lists the reports f.Viewer may read that match f, newest
	// first, without their body, reproduction and thread (and DuplicateOf
	// as Report).
	Reports(ctx context.Context, f ReportFilter) ([]hub.Report, error)
	// CommentReport appends ev (a comment: Comment and VerifiedIn) to the
	// thread of report id as actor, and returns the report as actor sees
	// it. ErrNotFound as Report; ErrNotMaintainer if actor may read the
	// report but is neither its reporter, the target's owner nor an
	// admin; ErrNoVersion if ev.VerifiedIn is not a version of the
	// module (or a recorded station release); ErrReportInvalid if the
	// thread is full.
	CommentReport(ctx context.Context, id, actor string, ev hub.ReportEvent) (hub.Report, error)
	// TriageReport applies req to report id as actor — the state change
	// with what goes with it, the severity, the award, the advisory and
	// the publication, together or not at all — appends one thread event
	// for each part, and returns the report and the hub events appended
	// (advisory.published or advisory.updated). A report with an
	// advisory that is not withdrawn gets it updated with the change
	// (the fixed version, the severity, the report made public).
	// ErrNotFound as Report; ErrNotMaintainer unless actor is the
	// target's owner or an admin (for hub.Product: an admin);
	// ErrStateChange for a state change that is not in
	// hub.ReportTransitions, and for an advisory on a report that is not
	// confirmed or fixed; ErrFixedVersion if req.FixedIn is not a
	// published, not yanked version of the module (or a recorded station
	// release); ErrReportInvalid if it is not above the report's
	// introduced version, if req.DuplicateOf is not another report of
	// the same target, or for a comment or an award when the thread is
	// full; ErrAwardRefused for an award on a report that is not (or does
	// not become) confirmed or fixed, or by its reporter.
	TriageReport(ctx context.Context, id, actor string, req hub.TriageRequest, at time.Time) (hub.Report, []hub.Event, error)
	// Credits returns an account's credit balance and its awards, newest
	// first. Until its report is published, an award shows only its
	// amount and time: its report, target, reason and awarder are left
	// out. ErrNotFound if there is no such account.
	Credits(ctx context.Context, account string) (hub.Credits, error)
	// HallOfFame returns up to limit reporters by credits, highest first,
	// ties by name.
	HallOfFame(ctx context.Context, limit int) ([]hub.Reporter, error)

	// RecordRelease records a release of the station. ErrNotAdmin unless
	// actor is an admin; ErrExists if it, or a version of equal
	// precedence, is recorded.
	RecordRelease(ctx context.Context, version, actor string, at time.Time) (hub.Release, error)
	// Releases lists the recorded station releases, highest first.
	Releases(ctx context.Context) ([]hub.Release, error)

	// PublishAdvisory stores an advisory the target's maintainer wrote
	// directly (no report), gives it the next id of at's year and
	// appends advisory.published. ErrNoTarget, ErrNotMaintainer and
	// ErrFixedVersion as TriageReport; ErrNoAccount if a credited account
	// does not exist.
	PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest, actor string, at time.Time) (hub.OSV, hub.Event, error)
	// Advisory returns an advisory as stored (without the hub's URL).
	// ErrNotFound if there is none.
	Advisory(ctx context.Context, id string) (hub.OSV, error)
	// Advisories lists every advisory of target, withdrawn ones included,
	// oldest first.
	Advisories(ctx context.Context, target string) ([]hub.OSV, error)
	// WithdrawAdvisory withdraws an advisory and appends
	// advisory.withdrawn (and, for an advisory of a report, an advisory
	// event to its thread). When it is withdrawn already nothing changes
	// and the event is nil. ErrNotFound if there is no such advisory;
	// ErrNotMaintainer as TriageReport.
	WithdrawAdvisory(ctx context.Context, id, actor, reason string, at time.Time) (hub.OSV, *hub.Event, error)
	// AdvisoryEvents returns up to limit events after seq after and at
	// most upTo, in order, of the kinds the advisory feed reads: the
	// advisory events, module.yanked and module.unyanked.
	AdvisoryEvents(ctx context.Context, after, upTo int64, limit int) ([]hub.Event, error)

	// EventsFor returns up to limit events after seq after and at most
	// upTo, in order, that viewer may see: public events, events of the
	// teams viewer is a member of now, and the events of viewer leaving or
	// being removed from a team. An ex-member sees nothing else
	// of a team, not even the events about itself.
	EventsFor(ctx context.Context, viewer string, after, upTo int64, limit int) ([]hub.Event, error)
	// EventsAfter returns up to limit events after seq after, in order,
	// whoever may see them (for the relay's fan-out).
	EventsAfter(ctx context.Context, after int64, limit int) ([]hub.Event, error)
	// LastSeq returns the sequence number of the last event (0 when the log
	// is empty).
	LastSeq(ctx context.Context) (int64, error)

	// Close releases the store.
	Close() error
}

// EventWatcher is a Store that several hub processes share (PostgreSQL).
// The relay of each process reads the log from the Store, so it only needs
// to be woken when another process commits: WatchEvents calls wake after
// every commit that appended to the log (its own included) and each time
// its watch starts or restarts (what was committed while it was not
// watching is read then), until ctx ends. It logs to log why a watch
// broke off.
type EventWatcher interface {
	WatchEvents(ctx context.Context, wake func(), log *slog.Logger)
}

// Token is a stored API token: never the secret, only its SHA-256.
type Token struct {
	ID        string
	Account   string
	Hash      [32]byte
	Label     string
	CreatedAt time.Time
}

// Version is a stored module version: the public record and the signature
// stations verify.
type Version struct {
	hub.Version
	// Signature is the bundle's minisign signature.
	Signature string
	// Description is the manifest's description, which becomes the module's
	// when this is its newest publish.
	Description string
}

// Invite is a stored team invite: never the code, only its SHA-256.
type Invite struct {
	Hash [32]byte
	// ID names the invite for listing and revoking (16 hex digits, random;
	// unique within its team). It is not secret and says nothing of the
	// code.
	ID        string
	Team      string
	Role      string
	Account   string // "" means any account holding the code
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// ReportFilter selects the reports Store.Reports lists.
type ReportFilter struct {
	// Viewer is the account listing ("" for none): only the reports it may
	// read are listed.
	Viewer string
	// Target and State, if set, list only the reports of that target or
	// in that state.
	Target, State string
	// Mine lists only the reports Viewer filed.
	Mine          bool
	Offset, Limit int
}

// Errors a Store returns. The server maps each to a wire code.
var (
	ErrNotFound      = errors.New("not found")
	ErrExists        = errors.New("already exists")
	ErrNotOwner      = errors.New("not an owner of the team")
	ErrNoMember      = errors.New("not a member of the team")
	ErrLastOwner     = errors.New("the team would have no owner")
	ErrAlreadyMember = errors.New("already a member of the team")
	ErrInviteInvalid = errors.New("invite is unknown, used, revoked, expired or for another account, or its creator is no longer an owner")
	ErrNoInvite      = errors.New("no such invite")

	ErrNoTarget      = errors.New("the report target is neither a module on the hub nor the station")
	ErrNotMaintainer = errors.New("not a maintainer of the report's target")
	ErrNotAdmin      = errors.New("not a hub admin")
	ErrStateChange   = errors.New("the report's state does not allow the change")
	ErrFixedVersion  = errors.New("the fixed-in version is not published, is yanked, or is not a recorded station release")
	ErrReportInvalid = errors.New("the report, comment or advisory is not valid")
	ErrAwardRefused  = errors.New("the award is refused")
	ErrNoVersion     = errors.New("no such version of the report's target")
	ErrNoAccount     = errors.New("no such account")
)

// RuleError is a refusal by one of the rules a Store checks in its
// transaction: Err is the sentinel error of the rule (the server maps it to
// a wire code), Msg says what was refused and why, for the account that
// asked.
type RuleError struct {
	Err error
	Msg string
}

func (e *RuleError) Error() string { return e.Msg }

// Unwrap returns the sentinel error.
func (e *RuleError) Unwrap() error { return e.Err }

// refuse returns a *RuleError.
func refuse(err error, format string, args ...any) error {
	return &RuleError{Err: err, Msg: fmt.Sprintf(format, args...)}
}

// ConflictError is returned by PushLockfile when the base revision is not
// the team's current one.
type ConflictError struct {
	Base, Current int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("lockfile push on revision %d, but the team is at revision %d", e.Base, e.Current)
}
