package station_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
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
	t.Parallel()
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

	single, summarized := 0, 0
	for _, r := range e.audit(store.AuditFilter{Module: stripeMod, DeniedOnly: true}) {
		if r.Folded > 0 {
			if r.Capability != sandbox.Network || !strings.HasPrefix(r.Reason, fmt.Sprintf("audit rate limit: %d more denied network decisions", r.Folded)) {
				t.Errorf("summary row %+v", r)
			}
			summarized += r.Folded
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

// TestAuditFloodOverMinutes: a module that floods denials in call after
// call, on a clock that moves fifteen seconds between calls, has one
// window's one-by-one allowance stored per minute and the rest folded into
// summary rows, within the bound per window and exact in sum; another
// module denied between its calls has every decision stored one by one.
func TestAuditFloodOverMinutes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	e := newEnv(t, envOpts{auditClock: clock})
	e.install(moduleSpec{id: stripeMod, allow: []string{"api.stripe.com"}}, probe.Wasm(t))
	e.install(moduleSpec{id: groqMod, allow: []string{"api.groq.com"}}, probe.Wasm(t))
	const calls, each = 8, 1500 // calls at 0 s, 15 s, ... 105 s: two windows
	actions := make([]probe.Action, each)
	for i := range actions {
		actions[i] = probe.HTTP("GET", "https://evil.example/")
	}
	for range calls {
		if res := e.mustProbe(stripeMod, probe.Seq(actions...)); res[0].Error != nil {
			t.Fatalf("the flood call failed: %+v", res[0].Error)
		}
		e.mustProbe(groqMod, probe.HTTP("GET", "https://evil.example/"))
		mu.Lock()
		now = now.Add(15 * time.Second)
		mu.Unlock()
	}
	e.reopen() // Close stores the counts still held

	recs := e.audit(store.AuditFilter{Module: stripeMod})
	single, folded, summaries := 0, 0, 0
	for _, r := range recs {
		if r.Folded > 0 {
			summaries++
			folded += r.Folded
			continue
		}
		single++
	}
	if single != 2*audit.RecordsPerWindow || single+folded != calls*each {
		t.Errorf("flooding module: %d one by one + %d folded; want %d one by one and %d in all", single, folded, 2*audit.RecordsPerWindow, calls*each)
	}
	// Two windows of denials: at most twice a verdict's share of the bound.
	if most := 2 * (audit.RecordsPerWindow + audit.SummariesPerWindow); len(recs) > most {
		t.Errorf("flooding module: %d records (%d summaries) over two windows, want at most %d", len(recs), summaries, most)
	}
	other := e.audit(store.AuditFilter{Module: groqMod})
	if len(other) != calls {
		t.Errorf("the other module: %d records, want its %d denials", len(other), calls)
	}
	for _, r := range other {
		if r.Folded != 0 || r.Target != "evil.example:443" {
			t.Errorf("the other module's record %+v, want its denial one by one", r)
		}
	}
}

// TestTraceReachesTheAudit: a caller's trace (a workflow step, a daemon
// request) is on every decision of the call it made, and only on those.
func TestTraceReachesTheAudit(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
