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
