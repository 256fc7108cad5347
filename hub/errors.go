package hub

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Code is a numeric error code of the hub protocol. Codes are grouped by
// area (1000 request, 1100 access, 1200 accounts and keys, 1300 modules,
// 1400 teams, 1500 server); a code's number, name and meaning never change,
// and a retired code's number is never reused.
type Code int

// Error codes. docs/hub-protocol.md has the same table; a test keeps them in
// step.
const (
	CodeBadRequest          Code = 1000
	CodeInvalidName         Code = 1001
	CodeTooLarge            Code = 1002
	CodeProtocolUnsupported Code = 1003
	CodeCursorAhead         Code = 1004
	CodeNoEndpoint          Code = 1005

	CodeUnauthenticated Code = 1100
	CodeRateLimited     Code = 1102
	CodeTooManyStreams  Code = 1103

	CodeAccountNotFound Code = 1200
	CodeAccountExists   Code = 1201
	CodeTokenNotFound   Code = 1202
	CodeKeyInvalid      Code = 1203
	CodeKeyExists       Code = 1204
	CodeKeyNotFound     Code = 1205

	CodeModuleNotFound     Code = 1300
	CodeVersionNotFound    Code = 1301
	CodeNamespaceForbidden Code = 1302
	CodeVersionExists      Code = 1303
	CodeBundleInvalid      Code = 1304
	CodeManifestInvalid    Code = 1305
	CodeDigestMismatch     Code = 1306
	CodeSignatureInvalid   Code = 1307
	CodeKeyUnknown         Code = 1308
	CodeKeyRevoked         Code = 1309
	CodeWasmInvalid        Code = 1310
	CodeModuleRefused      Code = 1311

	CodeTeamNotFound     Code = 1400
	CodeTeamExists       Code = 1401
	CodeNotTeamOwner     Code = 1402
	CodeAlreadyMember    Code = 1403
	CodeInviteInvalid    Code = 1404
	CodeLastOwner        Code = 1405
	CodeMemberNotFound   Code = 1406
	CodeRevisionConflict Code = 1407
	CodeLockfileInvalid  Code = 1408
	CodeInviteNotFound   Code = 1409

	CodeReportNotFound       Code = 1600
	CodeTargetNotFound       Code = 1601
	CodeReportInvalid        Code = 1602
	CodeStateChangeInvalid   Code = 1603
	CodeFixedVersionNotFound Code = 1604
	CodeNotMaintainer        Code = 1605
	CodeAwardRefused         Code = 1606
	CodeAdvisoryNotFound     Code = 1607
	CodeReleaseExists        Code = 1608
	CodeNotAdmin             Code = 1609

	CodeInternal    Code = 1500
	CodeUnavailable Code = 1501
)

type codeInfo struct {
	name   string
	status int
	text   string // what it means, for the documentation table
}

var codes = map[Code]codeInfo{
	CodeBadRequest:          {"bad_request", http.StatusBadRequest, "the request is malformed: invalid JSON, an unknown field, a bad parameter"},
	CodeInvalidName:         {"invalid_name", http.StatusBadRequest, "an account, team, module, version or label is not well formed"},
	CodeTooLarge:            {"too_large", http.StatusRequestEntityTooLarge, "the request body is larger than the hub accepts for this endpoint"},
	CodeProtocolUnsupported: {"protocol_unsupported", http.StatusBadRequest, "the client speaks a protocol version the hub does not"},
	CodeCursorAhead:         {"cursor_ahead", http.StatusConflict, "the cursor is past the end of the hub's event log (the hub was restored or replaced): sync from 0"},
	CodeNoEndpoint:          {"no_endpoint", http.StatusNotFound, "no endpoint has this method and path"},

	CodeUnauthenticated: {"unauthenticated", http.StatusUnauthorized, "the endpoint needs a token, or the token is invalid or revoked"},
	CodeRateLimited:     {"rate_limited", http.StatusTooManyRequests, "too many requests: wait for Retry-After seconds"},
	CodeTooManyStreams:  {"too_many_streams", http.StatusTooManyRequests, "the account already holds the most event streams the hub allows"},

	CodeAccountNotFound: {"account_not_found", http.StatusNotFound, "no such account"},
	CodeAccountExists:   {"account_exists", http.StatusConflict, "an account with this name exists"},
	CodeTokenNotFound:   {"token_not_found", http.StatusNotFound, "the account has no token with this id"},
	CodeKeyInvalid:      {"key_invalid", http.StatusBadRequest, "the public key is not a minisign Ed25519 public key"},
	CodeKeyExists:       {"key_exists", http.StatusConflict, "the account already has a key with this id"},
	CodeKeyNotFound:     {"key_not_found", http.StatusNotFound, "the account has no key with this id"},

	CodeModuleNotFound:     {"module_not_found", http.StatusNotFound, "no such module"},
	CodeVersionNotFound:    {"version_not_found", http.StatusNotFound, "the module has no such version"},
	CodeNamespaceForbidden: {"namespace_forbidden", http.StatusForbidden, "the module's owner is not the publishing account"},
	CodeVersionExists:      {"version_exists", http.StatusConflict, "the version was published before; versions are immutable (yanked ones too)"},
	CodeBundleInvalid:      {"bundle_invalid", http.StatusUnprocessableEntity, "the bundle is not a well-formed bundle document"},
	CodeManifestInvalid:    {"manifest_invalid", http.StatusUnprocessableEntity, "the bundle's module.yaml does not parse or validate"},
	CodeDigestMismatch:     {"digest_mismatch", http.StatusUnprocessableEntity, "a digest does not match the bytes it names"},
	CodeSignatureInvalid:   {"signature_invalid", http.StatusUnprocessableEntity, "the signature is malformed or does not verify"},
	CodeKeyUnknown:         {"key_unknown", http.StatusUnprocessableEntity, "the signing key is not registered to the module's owner"},
	CodeKeyRevoked:         {"key_revoked", http.StatusUnprocessableEntity, "the signing key was revoked"},
	CodeWasmInvalid:        {"wasm_invalid", http.StatusUnprocessableEntity, "the wasm binary is empty, too large or not WebAssembly"},
	CodeModuleRefused:      {"module_refused", http.StatusUnprocessableEntity, "no station would install the module: its wasm does not compile, lacks an export the guest ABI requires, imports what its manifest does not grant, or is over an install limit (the message lists every problem)"},

	CodeTeamNotFound:     {"team_not_found", http.StatusNotFound, "no such team, or the account is not a member"},
	CodeTeamExists:       {"team_exists", http.StatusConflict, "a team with this name exists"},
	CodeNotTeamOwner:     {"not_team_owner", http.StatusForbidden, "only a team owner may do this"},
	CodeAlreadyMember:    {"already_member", http.StatusConflict, "the account is already a member of the team"},
	CodeInviteInvalid:    {"invite_invalid", http.StatusNotFound, "the invite code is unknown, used, revoked, expired or for another account, or its creator is no longer an owner"},
	CodeLastOwner:        {"last_owner", http.StatusConflict, "the change would leave the team without an owner"},
	CodeMemberNotFound:   {"member_not_found", http.StatusNotFound, "the account is not a member of the team"},
	CodeRevisionConflict: {"revision_conflict", http.StatusConflict, "the lockfile changed since the base revision: pull, merge and push again"},
	CodeLockfileInvalid:  {"lockfile_invalid", http.StatusUnprocessableEntity, "the lockfile is not valid or names a module version the hub does not have"},
	CodeInviteNotFound:   {"invite_not_found", http.StatusNotFound, "the team has no pending invite with this id (used, revoked or expired)"},

	CodeReportNotFound:       {"report_not_found", http.StatusNotFound, "no such report, or the account may not read it (a private report is read only by its reporter, the target's owners and the hub's admins)"},
	CodeTargetNotFound:       {"target_not_found", http.StatusNotFound, "the target is neither a module on the hub nor \"station\""},
	CodeReportInvalid:        {"report_invalid", http.StatusUnprocessableEntity, "a field of the report, comment or advisory is missing, too long or not well formed (title, severity, CWE, version range)"},
	CodeStateChangeInvalid:   {"state_change_invalid", http.StatusConflict, "the report's state does not allow this change (the allowed ones are in docs/security-reports.md)"},
	CodeFixedVersionNotFound: {"fixed_version_not_found", http.StatusUnprocessableEntity, "the fixed-in version is not published on the hub (or is yanked), or is not a recorded station release"},
	CodeNotMaintainer:        {"not_maintainer", http.StatusForbidden, "only the target's owner (for the station: a hub admin) may triage, award or publish"},
	CodeAwardRefused:         {"award_refused", http.StatusConflict, "credits go only to the reporter of a confirmed or fixed report, and never to the account awarding them"},
	CodeAdvisoryNotFound:     {"advisory_not_found", http.StatusNotFound, "no such advisory"},
	CodeReleaseExists:        {"release_exists", http.StatusConflict, "the station release is recorded already"},
	CodeNotAdmin:             {"not_admin", http.StatusForbidden, "only a hub admin may do this"},

	CodeInternal:    {"internal", http.StatusInternalServerError, "the hub failed; its log has the detail under the request id the message names"},
	CodeUnavailable: {"unavailable", http.StatusServiceUnavailable, "the hub's database or blob storage did not answer: retry after Retry-After seconds (a change is applied whole or not at all)"},
}

// String returns the code's name, e.g. "revision_conflict".
func (c Code) String() string {
	if i, ok := codes[c]; ok {
		return i.name
	}
	return fmt.Sprintf("code_%d", int(c))
}

// HTTPStatus returns the HTTP status the hub answers with for c.
func (c Code) HTTPStatus() int {
	if i, ok := codes[c]; ok {
		return i.status
	}
	return http.StatusInternalServerError
}

// Description says what c means.
func (c Code) Description() string { return codes[c].text }

// Codes returns every defined code, in ascending order.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Error is an error of the hub protocol, as sent in an ErrorResponse.
type Error struct {
	Code Code `json:"code"`
	// Name is Code's name, for people reading the JSON.
	Name string `json:"name"`
	// Message says what went wrong and, where there is something to do,
	// what to do. It never repeats a secret sent in the request.
	Message string `json:"message"`
	// Revision is the team's current lockfile revision on
	// CodeRevisionConflict.
	Revision int64 `json:"revision,omitempty"`
	// RetryAfter is the number of seconds to wait on CodeRateLimited.
	RetryAfter int `json:"retry_after,omitempty"`
}

// Errorf returns an *Error with code c and a formatted message.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Name: c.String(), Message: fmt.Sprintf(format, args...)}
}

// Error renders e as "message (hub error 1407 revision_conflict)".
func (e *Error) Error() string {
	return fmt.Sprintf("%s (hub error %d %s)", e.Message, int(e.Code), e.Code)
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error *Error `json:"error"`
}

// CodeOf returns the code of the first *Error in err's chain, or 0.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
