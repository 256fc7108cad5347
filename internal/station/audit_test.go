package station_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/audit"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

// TestAuditFloodIsSummarized: a module looping on denied requests cannot
// flood the audit log, and the log still accounts for every denial: the
// records stored one by one plus the counts of the rate limit's summaries
// add up to exactly what the module did. Another module's record is
// untouched.
func TestAuditFloodIsSummarized(t *testing.T) {
	// A still clock: no record leaves the rate limit's window while the
	// flood runs, on however slow a machine (under -race and load, a flood
	// can take longer than a window).
	still := time.Now()
	e := newEnv(t, envOpts{auditClock: func() time.Time { return still }})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	e.install(moduleSpec{id: groqMod, allow: []string{"api.groq.com"}}, probe.Wasm(t))
	const flood = audit.RecordsPerWindow + 700
	actions := make([]probe.Action, flood)
	for i := range actions {
		actions[i] = probe.HTTP("GET", "https://evil.example/")
	}
	res := e.mustProbe(stripeMod, probe.Seq(actions...))
	if res[0].Error != nil {
		t.Fatalf("the flood call failed: %+v", res[0].Error)
	}
	e.mustProbe(groqMod, probe.HTTP("GET", "https://evil.example/"))

	summary := regexp.MustCompile(`^audit rate limit: (\d+) more denied network decisions`)
	single, summarized := 0, 0
	for _, r := range e.audit(store.AuditFilter{Module: stripeMod, DeniedOnly: true}) {
		if m := summary.FindStringSubmatch(r.Reason); m != nil {
			n, _ := strconv.Atoi(m[1])
			summarized += n
			continue
		}
		single++
	}
	// Exactly the burst is stored one by one, the rest summarized, and
	// nothing is unaccounted for.
	if single != audit.RecordsPerWindow || single+summarized != flood {
		t.Errorf("flooding module: %d denials stored one by one and %d summarized; want %d one by one and %d in all", single, summarized, audit.RecordsPerWindow, flood)
	}
	if got := e.audit(store.AuditFilter{Module: groqMod, DeniedOnly: true}); len(got) != 1 || got[0].Target != "evil.example:443" {
		t.Errorf("the other module's denials: %+v, want its one denial", got)
	}
	if got := e.evil.Accepted(); got != 0 {
		t.Errorf("evil.example accepted %d connections", got)
	}
}

// TestTraceReachesTheAudit: a caller's trace (a workflow step, a daemon
// request) is on every decision of the call it made, and only on those.
func TestTraceReachesTheAudit(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	ctx := sandbox.WithTrace(context.Background(), "run/7/step/charge")
	if _, err := e.st.Run(ctx, stripeMod, probe.Command, probe.Run(probe.HTTP("GET", "https://api.stripe.com/"), probe.HTTP("GET", "https://evil.example/"))); err != nil {
		t.Fatal(err)
	}
	e.mustProbe(stripeMod, probe.HTTP("GET", "https://evil.example/")) // untraced
	got := e.audit(store.AuditFilter{Trace: "run/7/step/charge"})
	if len(got) < 2 || !got[0].Allowed || got[len(got)-1].Allowed || got[len(got)-1].Target != "evil.example:443" {
		t.Fatalf("traced decisions: %+v, want the allowed GET's and then the denied one", got)
	}
	all := e.audit(store.AuditFilter{Module: stripeMod})
	if len(all) != len(got)+1 || all[len(all)-1].Trace != "" {
		t.Errorf("all decisions: %+v, want the traced ones and one untraced", all)
	}
}

// TestVerify: the check every load makes is the one workflow check reports:
// a changed file is named with what to do, and a missing module matches
// store.ErrNotFound.
func TestVerify(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	ctx := context.Background()
	in, err := e.st.Verify(ctx, stripeMod)
	if err != nil || in.Manifest == nil || len(in.Wasm) == 0 || in.Approved.Network[0] != "api.stripe.com" {
		t.Fatalf("Verify = %+v, %v", in, err)
	}
	// The station stores modules read-only; whoever tampers makes it
	// writable first (root needs not, a normal user must).
	if err := os.Chmod(in.WasmPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in.WasmPath, append(in.Wasm, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err = e.st.Verify(ctx, stripeMod)
	if in == nil || in.Manifest == nil || err == nil || !strings.Contains(err.Error(), "refusing to run it (reinstall the module)") {
		t.Errorf("Verify of a changed file = %+v, %v", in, err)
	}
	if in, err := e.st.Verify(ctx, "nobody/none"); in != nil || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Verify of a missing module = %+v, %v", in, err)
	}
}
