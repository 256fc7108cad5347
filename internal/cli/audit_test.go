package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
)

// TestAuditShowsFolded: a rate-limit summary row says in the table (FOLDED)
// and in --json ("folded") how many decisions it stands for; a decision
// recorded one by one says 0 ("-" in the table).
func TestAuditShowsFolded(t *testing.T) {
	home := t.TempDir()
	s, err := store.Open(filepath.Join(home, "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	err = s.AppendAudit(context.Background(), []sandbox.Decision{
		{Time: at, Module: "atk/flood", Command: "loop", Capability: sandbox.Network, Target: "evil.example:443", Reason: "is not in its allowlist"},
		{Time: at.Add(time.Second), Module: "atk/flood", Command: "loop", Capability: sandbox.Network, Target: "(700 decisions)", Folded: 700,
			Reason: "audit rate limit: 700 more denied network decisions from 2026-11-29T12:00:00Z to 2026-11-29T12:00:01Z were counted, not recorded one by one"},
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	r := station(t, home, "", "audit", "--no-daemon").want(t, 0)
	for _, re := range []string{`TARGET\s+DECISION\s+FOLDED\s+REASON`, `evil\.example:443\s+DENY\s+-\s+is not`, `\(700 decisions\)\s+DENY\s+700\s+audit rate limit`} {
		if !regexp.MustCompile(re).MatchString(r.out) {
			t.Errorf("audit table does not match %s:\n%s", re, r.out)
		}
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(station(t, home, "", "audit", "--no-daemon", "--json").want(t, 0).out), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0]["folded"] != float64(0) || recs[1]["folded"] != float64(700) {
		t.Errorf("audit --json: %v, want folded 0 and 700", recs)
	}
}
