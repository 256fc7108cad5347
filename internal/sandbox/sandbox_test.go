package sandbox

import (
	"errors"
	"testing"
)

// A refusal over a limit is recorded exactly as a denial is: the same
// module, command, trace, capability, target and reason, never allowed.
func TestLimitErrorDecision(t *testing.T) {
	sentinel := errors.New("size limit exceeded")
	call := &Call{Module: "dave/stripe", Command: "create-invoice", Trace: "run/1"}
	e := Exceed("dave/stripe", Network, "https://api.stripe.com/\x00", "response body is larger than the limit of 16 bytes", 16, sentinel)
	v := Deny("dave/stripe", Network, "https://api.stripe.com/\x00", "response body is larger than the limit of 16 bytes")
	if e.Target != `https://api.stripe.com/\x00` {
		t.Errorf("target %q is not sanitized", e.Target)
	}
	got, want := e.Decision(call), v.Decision(call)
	if got.Time.IsZero() {
		t.Error("the decision has no time")
	}
	got.Time = want.Time
	if got != want || got.Allowed || got.Command != "create-invoice" || got.Trace != "run/1" {
		t.Errorf("limit decision\n got %+v\nwant %+v", got, want)
	}
	if nilCall := e.Decision(nil); nilCall.Command != "" || nilCall.Module != "dave/stripe" {
		t.Errorf("decision without a call: %+v", nilCall)
	}
	if !errors.Is(e, sentinel) {
		t.Error("a LimitError does not match the sentinel it wraps")
	}
	var viol *Violation
	if errors.As(error(e), &viol) {
		t.Error("a LimitError is a Violation")
	}
}

// TestSanitizeEscapesInvisibleText: what could reorder or hide text on a
// terminal is shown escaped — control bytes, line separators and every
// invisible format character (bidi marks and overrides, zero-width spaces,
// the BOM, the soft hyphen, tag characters that spell hidden ASCII) — and
// what scripts and emoji need (ZWNJ, ZWJ) and plain text stay as written.
func TestSanitizeEscapesInvisibleText(t *testing.T) {
	for in, want := range map[string]string{
		"a\x1b[2Jb":               `a\x1b[2Jb`,
		"evil\u202egnp.exe":       `evil\u202egnp.exe`,
		"x\u061cy":                `x\u061cy`,
		"zero\u200bwidth":         `zero\u200bwidth`,
		"\ufeffbom":               `\ufeffbom`,
		"soft\u00adhyphen":        `soft\u00adhyphen`,
		"tag\U000e0061\U000e0062": `tag\U000e0061\U000e0062`,
		"line\u2028sep":           `line\u2028sep`,
		"می\u200cخواهم":           "می\u200cخواهم",
		"👩\u200d💻":                "👩\u200d💻",
		"plain, ünïcödé":          "plain, ünïcödé",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
