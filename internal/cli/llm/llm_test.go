package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
)

func TestFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*UsageOptions) error) *cobra.Command { return NewCmdUsage(clitest.Factory(), runF) }, []clitest.FlagCase[UsageOptions]{
		{Args: nil, Want: UsageOptions{Since: 24 * time.Hour}},
		{Args: []string{"--since", "168h", "--json"}, Want: UsageOptions{Since: 168 * time.Hour, JSON: true}},
		{Args: []string{"--since", "0s"}, Code: cmdutil.ExitUsage},
		{Args: []string{"x"}, Code: cmdutil.ExitUsage},
	}, "Now")
	if err := clitest.Parse(NewCmdLLM(clitest.Factory()), "usag"); cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), `did you mean "usage"?`) {
		t.Errorf("llm usag: %v", err)
	}
}

type fakeUsage struct {
	rows       []station.LLMUsage
	since, now time.Time
}

func (f *fakeUsage) LLMUsage(_ context.Context, since, now time.Time) ([]station.LLMUsage, error) {
	f.since, f.now = since, now
	return f.rows, nil
}

func run(t *testing.T, u *fakeUsage, opts UsageOptions) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	opts.IO = &cmdutil.IOStreams{Out: &out, Err: &errb}
	opts.Usage = func(context.Context) (Usage, error) { return u, nil }
	if err := usageRun(context.Background(), &opts); err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String()
}

// TestUsage: a workflow's llm steps are the station's own spending and show
// as (station), with no budget and no last-24h count; a module shows its
// budget and what counts against it.
func TestUsage(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u := &fakeUsage{}
	if out, errOut := run(t, u, UsageOptions{Since: 24 * time.Hour, Now: func() time.Time { return now }}); out != "" || !strings.Contains(errOut, "no LLM usage in the last 24h\n") {
		t.Errorf("no usage: %q %q", out, errOut)
	}
	if !u.since.Equal(now.Add(-24*time.Hour)) || !u.now.Equal(now) {
		t.Errorf("asked since %v at %v", u.since, u.now)
	}
	if out, _ := run(t, u, UsageOptions{Since: time.Hour, JSON: true}); strings.TrimSpace(out) != "[]" {
		t.Errorf("no usage --json: %q", out)
	}

	u.rows = []station.LLMUsage{
		{Module: "", Calls: 1, PromptTokens: 10, CompletionTokens: 4},
		{Module: "ada/summarize", Calls: 3, PromptTokens: 300, CompletionTokens: 90, BudgetTokensPerDay: 5000, UsedInWindow: 390},
		{Module: clitest.Hostile, Calls: 1},
	}
	out, _ := run(t, u, UsageOptions{Since: time.Hour})
	for _, want := range []string{`(?m)^MODULE\s+CALLS\s+PROMPT\s+COMPLETION\s+BUDGET/DAY\s+LAST 24H$`, `(?m)^\(station\)\s+1\s+10\s+4\s+-\s+-$`, `(?m)^ada/summarize\s+3\s+300\s+90\s+5000\s+390$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("usage does not match %s:\n%s", want, out)
		}
	}
	clitest.CheckPrinted(t, "llm usage", out)

	out, _ = run(t, u, UsageOptions{Since: time.Hour, JSON: true})
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 || rows[0]["module"] != "(station)" || rows[0]["calls"] != float64(1) ||
		rows[1]["budget_tokens_per_day"] != float64(5000) || rows[1]["used_last_24h"] != float64(390) || rows[0]["completion_tokens"] != float64(4) {
		t.Errorf("usage --json: %v (%v)\n%s", rows, err, out)
	}
}

func TestPeriod(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 168 * time.Hour: "168h", 30 * time.Minute: "30m", 90 * time.Second: "1m30s", time.Hour + time.Second: "1h0m1s"} {
		if got := period(d); got != want {
			t.Errorf("period(%v) = %q, want %q", d, got, want)
		}
	}
}
