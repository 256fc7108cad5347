// Package sandbox holds the vocabulary every gate shares: the capabilities a
// module can be granted, the decision a gate makes about one operation, the
// typed Violation a denial becomes, and the Recorder that receives every
// decision for the audit log.
//
// A decision always names the module that made the call. The module identity
// is bound into each gate when the module is linked (see RATIONALE.md, "Why is
// a module's policy bound at link time?"); the per-call details (the command
// name) travel in the call's context and are only ever used for attribution,
// never to decide.
package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/station-dev/station/internal/units"
)

// Capability names one gated kind of operation.
type Capability string

// The capabilities a module can be granted (and Advisory, which is never
// granted: the station decides it).
const (
	Network    Capability = "network"
	Filesystem Capability = "filesystem"
	Subprocess Capability = "subprocess"
	LLM        Capability = "llm"  // completions from the station's LLM (requires.llm)
	Host       Capability = "host" // the host boundary itself: bad pointers, oversized arguments
	// Advisory is the station's advisory gate, which no manifest asks
	// for: a call of a module version a security advisory of its hub
	// affects (refused at or above advisories.block; run with a warning
	// below it, when the operator allowed it, or when the version is
	// yanked). The target is the advisory id, or "yank".
	Advisory Capability = "advisory"
)

// Decision is one allow or deny made by a gate.
type Decision struct {
	Time       time.Time  `json:"time"`
	Module     string     `json:"module"`
	Command    string     `json:"command,omitempty"`
	Capability Capability `json:"capability"`
	Target     string     `json:"target"`
	Allowed    bool       `json:"allowed"`
	Reason     string     `json:"reason,omitempty"`
	// Trace, if set, names what the call was part of (a workflow run's
	// step, a daemon request): the caller's sandbox.WithTrace.
	Trace string `json:"trace,omitempty"`
	// Folded is 0 for a decision a gate made. A summary row of the audit
	// log's rate limit has the number of decisions it stands for, each of
	// which is in no other record (internal/audit, ratelimit.go): the
	// decisions a module made are its records with Folded 0 plus the sum
	// of Folded over its summaries.
	Folded int `json:"folded"`
}

// Recorder receives every decision a gate makes. Implementations must be safe
// for concurrent use and must not block for long: gates call Record inline.
type Recorder interface {
	Record(Decision)
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(Decision)

// Record calls f(d).
func (f RecorderFunc) Record(d Decision) { f(d) }

// Discard is a Recorder that drops every decision.
var Discard Recorder = RecorderFunc(func(Decision) {})

// Violation is the typed error a denial becomes. It is returned to the guest
// (as an ABI error) and, when the command fails, to the caller of dispatch.
type Violation struct {
	Module     string     `json:"module"`
	Capability Capability `json:"capability"`
	Target     string     `json:"target"` // already sanitized by Sanitize
	Reason     string     `json:"reason"`
}

// Error renders the violation as one line, e.g.
//
//	sandbox violation: module dave/stripe: network: "evil.example:443" is not in its allowlist (api.stripe.com)
func (v *Violation) Error() string {
	return fmt.Sprintf("sandbox violation: module %s: %s: %q %s", v.Module, v.Capability, v.Target, v.Reason)
}

// Deny builds a Violation, sanitizing the target.
func Deny(module string, c Capability, target, reason string) *Violation {
	return &Violation{Module: module, Capability: c, Target: Sanitize(target), Reason: reason}
}

// Decision returns the audit decision that corresponds to v, attributed to
// call c (which may be nil).
func (v *Violation) Decision(c *Call) Decision {
	return refused(c, v.Module, v.Capability, v.Target, v.Reason)
}

// refused is the audit decision of a refusal, attributed to call c (which
// may be nil): a Violation's and a LimitError's are the same record.
func refused(c *Call, module string, capability Capability, target, reason string) Decision {
	return Decision{Time: time.Now(), Module: module, Command: c.CommandName(), Trace: c.TraceName(), Capability: capability, Target: c.Scrub(target), Reason: c.Scrub(reason)}
}

// MaxTargetLen bounds a sanitized target.
const MaxTargetLen = 256

// Sanitize makes a target safe to print and store: control bytes and invalid
// UTF-8 are escaped and the result is bounded to MaxTargetLen bytes. Callers
// that hold a URL must redact userinfo and query before calling Sanitize (see
// netgate.Redact).
func Sanitize(s string) string { return SanitizeLimit(s, MaxTargetLen) }

// SanitizeLimit is Sanitize with another bound (in bytes, at least 16).
func SanitizeLimit(s string, limit int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r) && r != 0x200c && r != 0x200d:
			// Line separators and invisible format characters: bidi
			// controls (U+061C, U+200E, U+202A..., U+2066...), zero-width
			// spaces, the BOM, tag characters that hide ASCII. ZWNJ and ZWJ
			// stay: scripts and emoji need them.
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
		if b.Len() > limit {
			out := b.String()
			for len(out) > limit-3 || !utf8.ValidString(out) {
				out = out[:len(out)-1]
			}
			return out + "..."
		}
	}
	return b.String()
}

type callKey struct{}

// Call is the per-call attribution a dispatch puts in the context of every
// host call it serves. It is never consulted to decide anything.
type Call struct {
	Module  string
	Command string
	Trace   string // the caller's WithTrace, if any
	// Redact, if set, is the caller's WithRedact: applied to every target
	// and reason recorded for the call and to every guest log line of it.
	Redact func(string) string
}

// Scrub returns s with what the call's caller asked to keep out of the
// records (Redact) replaced; s itself for a nil c or no Redact.
func (c *Call) Scrub(s string) string {
	if c == nil || c.Redact == nil {
		return s
	}
	return c.Redact(s)
}

// CommandName returns c.Command, or "" for a nil c.
func (c *Call) CommandName() string {
	if c == nil {
		return ""
	}
	return c.Command
}

// TraceName returns c.Trace, or "" for a nil c.
func (c *Call) TraceName() string {
	if c == nil {
		return ""
	}
	return c.Trace
}

type traceKey struct{}

type redactKey struct{}

// WithRedact returns ctx carrying redact, which the dispatch copies into
// the call (Call.Redact): values the caller gave the module that must not
// reach the audit log or the station log — a workflow's secret inputs, if
// the module puts one in a URL or logs it. Like a trace it never decides
// anything; the module itself still holds the values.
func WithRedact(ctx context.Context, redact func(string) string) context.Context {
	return context.WithValue(ctx, redactKey{}, redact)
}

// RedactFrom returns the redact function in ctx, or nil.
func RedactFrom(ctx context.Context) func(string) string {
	r, _ := ctx.Value(redactKey{}).(func(string) string)
	return r
}

// WithTrace returns ctx carrying trace, a caller's name for what a dispatch
// is part of (for example "run/42/step/invoice"). The dispatch copies it
// into every decision of the call, so the audit log can be read per trace.
// Like Call, it never decides anything.
func WithTrace(ctx context.Context, trace string) context.Context {
	return context.WithValue(ctx, traceKey{}, trace)
}

// TraceFrom returns the trace in ctx, or "".
func TraceFrom(ctx context.Context) string {
	t, _ := ctx.Value(traceKey{}).(string)
	return t
}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the Call in ctx, or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// CommandFrom returns the command name of the call in ctx, or "".
func CommandFrom(ctx context.Context) string { return CallFrom(ctx).CommandName() }

// LimitError is the typed error a refusal over a limit becomes: an argument
// or a result of a module's operation is larger than the module may have.
// Like a Violation it names the module, the capability and the target, and
// the gate that refused records it (its Decision) in the audit log; unlike a
// Violation it is not a breach of the module's grants, and it reaches the
// guest as too_large, not denied.
type LimitError struct {
	Module     string
	Capability Capability
	Target     string // already sanitized by Sanitize
	Reason     string // what exceeded which limit, e.g. "response body is larger than the limit of 16777216 bytes"
	Limit      int64  // the limit, in its own unit (bytes, buffers); 0 when the reason alone says it
	// Bytes says that Limit counts bytes: Error renders it human readable
	// ("16 MiB").
	Bytes bool
	// Key is the setting that raises the limit, where one does: a key of
	// the module's manifest ("limits.max_output") or of the station's
	// configuration ("filesystem.open_files"), as KeyIn says. "" for a
	// limit the station fixes.
	Key   string
	KeyIn KeyFile
	Err   error // the sentinel the refusal also wraps (netgate.ErrTooLarge), or nil
}

// KeyFile is the file a LimitError's Key is set in.
type KeyFile string

// The files a limit's key is set in.
const (
	InManifest KeyFile = "manifest" // the module's manifest: its author raises it
	InConfig   KeyFile = "config"   // the station's config.yaml: the operator raises it
)

// Error renders the refusal as one line, e.g.
//
//	limit exceeded: module dave/stripe: network: "https://api.stripe.com/v1/files" response body is larger than the limit of 16777216 bytes; the limit is 16 MiB
//	limit exceeded: module dave/x: host: "output_set" the module's result of 4096 bytes exceeds the limit of 1024; the limit is 1 KiB (raise it with limits.max_output in the module's manifest)
func (e *LimitError) Error() string {
	return fmt.Sprintf("limit exceeded: module %s: %s: %q %s", e.Module, e.Capability, e.Target, e.Reason) + e.Detail()
}

// Detail is what Error adds to the reason: the limit in bytes made human
// readable, and the key that raises it and where it is set ("" when e has
// neither).
func (e *LimitError) Detail() string {
	var b strings.Builder
	if e.Bytes && e.Limit > 0 {
		b.WriteString("; the limit is " + units.Bytes(e.Limit))
	}
	if h := e.Hint(); h != "" {
		b.WriteString(" (" + h + ")")
	}
	return b.String()
}

// Hint says who raises the limit, with which key, in which file: "raise it
// with limits.max_output in the module's manifest", "the operator can raise
// it with filesystem.open_files in config.yaml"; "" without a Key.
func (e *LimitError) Hint() string {
	switch {
	case e.Key == "":
		return ""
	case e.KeyIn == InConfig:
		return "the operator can raise it with " + e.Key + " in config.yaml"
	}
	return "raise it with " + e.Key + " in the module's manifest"
}

// Unwrap returns e.Err, so errors.Is(err, netgate.ErrTooLarge) still holds.
func (e *LimitError) Unwrap() error { return e.Err }

// Exceed builds a LimitError, sanitizing the target.
func Exceed(module string, c Capability, target, reason string, limit int64, err error) *LimitError {
	return &LimitError{Module: module, Capability: c, Target: Sanitize(target), Reason: reason, Limit: limit, Err: err}
}

// Decision returns the audit decision (a refusal) that corresponds to e,
// attributed to call c (which may be nil).
func (e *LimitError) Decision(c *Call) Decision {
	return refused(c, e.Module, e.Capability, e.Target, e.Reason)
}
