package cmdutil

import (
	"errors"
	"fmt"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/demo"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/workflow"
)

// Exit codes. They are part of the CLI's contract with scripts.
const (
	ExitOK        = 0
	ExitError     = 1 // anything else: bad input, a command that returned an error, ...
	ExitUsage     = 2 // wrong flags or arguments
	ExitViolation = 3 // a sandbox gate denied an operation and the command failed
	ExitCrash     = 4 // the module trapped, crashed or ran out of time
	ExitDeclined  = 5 // the operator declined an approval
)

// ErrNotInstalled is the error of a command about an installed module
// (show, remove) given an id that is not installed.
var ErrNotInstalled = errors.New("module is not installed")

// ErrDeclined is the answer no to a confirmation.
var ErrDeclined = fmt.Errorf("declined: %w", station.ErrNotApproved)

// UsageError is a mistake in how the command was called: exit code 2, and
// a pointer to the command's own help.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the process exit code. It is the only place
// that does.
func ExitCode(err error) int {
	var v *sandbox.Violation
	var ce *host.CallError
	var ue UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &v):
		return ExitViolation
	case errors.As(err, &ce) && (ce.Kind == host.KindCrash || ce.Kind == host.KindTimeout || ce.Kind == host.KindFault):
		return ExitCrash
	case errors.Is(err, station.ErrNotApproved):
		return ExitDeclined
	}
	return ExitError
}

// Hint returns what a person should do about err, or "": it is the one
// place the CLI adds advice to an error, beside the exit-code mapping.
func Hint(err error) string {
	var keyExists *hubsync.KeyExistsError
	var notMember *hubsync.NotMemberError
	var invite *hubsync.InviteError
	switch {
	case errors.As(err, &keyExists):
		return "to rotate it: station hub key create --force registers a new key and keeps the old file beside it; stations that pinned the old key ask their operators before they trust the new one; docs/hub-client.md says more"
	case errors.As(err, &notMember) && notMember.Account:
		return "join it with an invite code from an owner: station team join CODE"
	case errors.As(err, &notMember):
		return "station team status lists this station's teams"
	case errors.As(err, &invite) && hub.CodeOf(err) == hub.CodeInviteNotFound:
		return "station team invites " + TermText(invite.Team) + " lists the pending ones"
	case errors.As(err, &invite) && hub.CodeOf(err) == hub.CodeNotTeamOwner:
		return "only owners make, see and revoke invites"
	}
	switch hub.CodeOf(err) {
	case hub.CodeUnauthenticated:
		return "log in again: station hub login --url URL"
	case hub.CodeUnavailable:
		return "the hub could not reach its database or storage: retry in a few seconds; if it lasts, tell the hub's operator (the hub's log has the cause under the request id)"
	case hub.CodeNotTeamOwner:
		return "ask an owner of the team to push, or to make you an owner"
	case hub.CodeTeamNotFound:
		return "station team status lists the teams this station is in"
	case hub.CodeReportNotFound:
		return "station report list shows the reports you may read"
	case hub.CodeNotMaintainer:
		return "only the target's owner (for station: a hub admin) triages; anyone taking part may comment: station report comment ID --body TEXT"
	case hub.CodeNotAdmin:
		return "the hub's operator makes an account an admin on the hub's machine: station hub user admin NAME"
	case hub.CodeStateChangeInvalid:
		return "station report show ID shows its state and thread; docs/security-reports.md has the changes each state allows"
	case hub.CodeFixedVersionNotFound:
		return "publish the fixed version first (station module publish DIR), then mark the report fixed in it; for station, a hub admin records the release: station hub release record VERSION"
	case hub.CodeAwardRefused:
		return "credits go to the reporter of a confirmed report: station report triage ID --state confirmed --award N --reason TEXT"
	}
	switch {
	case errors.Is(err, ErrNotInstalled):
		return "station module list shows what is installed"
	case errors.Is(err, hubsync.ErrNotLoggedIn):
		return "log in first: station hub login --url URL"
	case errors.Is(err, demo.ErrNoCheckout):
		return "cd into a clone of the station repository and run it there, e.g. go run ./cmd/station demo"
	case errors.Is(err, demo.ErrNotDemoHome):
		return "give the demo a directory of its own with --home, or leave --home out"
	case errors.Is(err, hubsync.ErrNotFromHub):
		return "to replace it with the hub's version: station module install OWNER/SLUG@VERSION, which shows what changes and asks first"
	case errors.Is(err, hubsync.ErrNoSigningKey):
		return "make one: station hub key create; or name one: --key PATH"
	case errors.Is(err, workflow.ErrNoRun):
		return "station workflow runs lists the runs"
	}
	return ""
}
