package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

func TestFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*AuditOptions) error) *cobra.Command { return NewCmdAudit(clitest.Factory(), runF) }, []clitest.FlagCase[AuditOptions]{
		{Args: nil, Want: AuditOptions{Filter: store.AuditFilter{Limit: 1000}}},
		{Args: []string{"--module", "a/b", "--denied", "--limit", "5", "--since", "1h", "--json"},
			Want: AuditOptions{Filter: store.AuditFilter{Module: "a/b", DeniedOnly: true, Limit: 5}, Since: time.Hour, JSON: true}},
		{Args: []string{"--limit", "0"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--since", "-1h"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--since", "soon"}, Code: cmdutil.ExitUsage},
		{Args: []string{"x"}, Code: cmdutil.ExitUsage},
	}, "Now")
}

type fakeLog struct {
	recs   []store.AuditRecord
	err    error
	filter store.AuditFilter
}

func (f *fakeLog) Audit(_ context.Context, filter store.AuditFilter) ([]store.AuditRecord, error) {
	f.filter = filter
	return f.recs, f.err
}

func run(t *testing.T, log *fakeLog, opts AuditOptions) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	opts.IO = &cmdutil.IOStreams{Out: &out, Err: &errb}
	opts.Log = func(context.Context) (Log, error) { return log, nil }
	err := auditRun(context.Background(), &opts)
	return out.String(), errb.String(), err
}

// TestShowsFolded: a rate-limit summary row says in the table (FOLDED) and
// in --json ("folded") how many decisions it stands for; a decision
// recorded one by one says 0 ("-" in the table).
func TestShowsFolded(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	log := &fakeLog{recs: []store.AuditRecord{
		{ID: 1, Decision: sandbox.Decision{Time: at, Module: "atk/flood", Command: "loop", Capability: sandbox.Network, Target: "evil.example:443", Reason: "is not in its allowlist"}},
		{ID: 2, Decision: sandbox.Decision{Time: at.Add(time.Second), Module: "atk/flood", Command: "loop", Capability: sandbox.Network, Target: "(700 decisions)", Folded: 700,
			Reason: "audit rate limit: 700 more denied network decisions from 2026-11-29T12:00:00Z to 2026-11-29T12:00:01Z were counted, not recorded one by one"}},
		{ID: 3, Decision: sandbox.Decision{Time: at.Add(2 * time.Second), Module: "station/hello", Command: "greet", Capability: sandbox.Host, Target: "log", Allowed: true}},
	}}
	out, _, err := run(t, log, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`TARGET\s+DECISION\s+FOLDED\s+REASON`, `evil\.example:443\s+DENY\s+-\s+is not`, `\(700 decisions\)\s+DENY\s+700\s+audit rate limit`, `log\s+allow\s+-`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("audit table does not match %s:\n%s", re, out)
		}
	}
	out, _, err = run(t, log, AuditOptions{JSON: true})
	var recs []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &recs) != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(recs) != 3 || recs[0]["folded"] != float64(0) || recs[1]["folded"] != float64(700) || recs[0]["module"] != "atk/flood" || recs[2]["allowed"] != true {
		t.Errorf("audit --json: %v, want folded 0 and 700", recs)
	}
}

func TestFilterAndNothing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	log := &fakeLog{}
	out, errOut, err := run(t, log, AuditOptions{Filter: store.AuditFilter{Module: "a/b", DeniedOnly: true, Limit: 7}, Since: time.Hour, Now: func() time.Time { return now }})
	if err != nil || out != "" || !strings.Contains(errOut, "no sandbox decisions recorded") {
		t.Errorf("no records: %v %q %q", err, out, errOut)
	}
	if want := (store.AuditFilter{Module: "a/b", DeniedOnly: true, Limit: 7, Since: now.Add(-time.Hour)}); log.filter != want {
		t.Errorf("filter %+v, want %+v", log.filter, want)
	}
	if out, _, err := run(t, log, AuditOptions{JSON: true}); err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("no records --json: %v %q", err, out)
	}
	want := errors.New("boom")
	if _, _, err := run(t, &fakeLog{err: want}, AuditOptions{}); err != want {
		t.Errorf("error %v", err)
	}
}

// TestHostileRecords: what a module supplied to its decisions is printed
// escaped.
func TestHostileRecords(t *testing.T) {
	h := clitest.Hostile
	out, _, err := run(t, &fakeLog{recs: []store.AuditRecord{{Decision: sandbox.Decision{Module: h, Command: h, Capability: sandbox.Capability(h), Target: h, Reason: h}}}}, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clitest.CheckPrinted(t, "audit", out)
	if err := cmdutil.CheckJSONNames(Records{}); err != nil {
		t.Error(err)
	}
}
