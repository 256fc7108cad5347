package report

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
)

const (
	id    = "R-abcdefgh2345"
	other = "R-zyxwvuts7654"
	cvss  = "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N"
)

func TestFileFlags(t *testing.T) {
	const usage = cmdutil.ExitUsage
	base := []string{"--target", "alice/hello", "--title", "leaks the token", "--severity", "high", "--body", "it does"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	want := FileOptions{Target: "alice/hello", Title: "leaks the token", Severity: hub.Severity{Level: "high"}, Body: textFlag{Text: "it does"}}
	wantWith := func(edit func(*FileOptions)) FileOptions { o := want; edit(&o); return o }
	clitest.CheckFlags(t, func(runF func(*FileOptions) error) *cobra.Command { return NewCmdFile(clitest.Factory(), runF) }, []clitest.FlagCase[FileOptions]{
		{Args: base, Want: want},
		{Args: []string{"--target", "station", "--title", "t", "--severity", "critical", "--cvss", cvss, "--cwe", "CWE-22",
			"--body-file", "-", "--reproduction-file", "repro.sh", "--versions", "station-v0.70.0..v0.72.1", "--json"},
			Want: FileOptions{Target: "station", Title: "t", Severity: hub.Severity{Level: "critical", CVSS: cvss}, CWE: "CWE-22",
				Body: textFlag{File: "-"}, Reproduction: "repro.sh", Versions: "station-v0.70.0..v0.72.1", Introduced: "0.70.0", LastAffected: "0.72.1", JSON: true}},
		{Args: with("--versions", "1.2.0"), Want: wantWith(func(o *FileOptions) { o.Versions, o.Introduced = "1.2.0", "1.2.0" })},
		{Args: with("--versions", "1.2.0..1.2.0"), Want: wantWith(func(o *FileOptions) { o.Versions, o.Introduced, o.LastAffected = "1.2.0..1.2.0", "1.2.0", "1.2.0" })},
		// What is missing or malformed is a usage error, before anything
		// is read or sent.
		{Args: base[2:], Code: usage}, // no --target
		{Args: []string{"--target", "alice/hello", "--severity", "high", "--body", "b"}, Code: usage}, // no --title
		{Args: base[:6], Code: usage},                 // no body
		{Args: with("--body-file", "f"), Code: usage}, // --body and --body-file
		{Args: append(append([]string{}, base[:6]...), "--body-file", "-", "--reproduction-file", "-"), Code: usage},
		{Args: []string{"--target", "alice/hello", "--title", "t", "--body", "b"}, Code: usage}, // no --severity
		{Args: with("--severity", "urgent"), Code: usage},
		{Args: with("--cvss", "CVSS:3.1/AV:N"), Code: usage},
		{Args: with("--cwe", "200"), Code: usage},
		{Args: with("--target", "Alice/Hello"), Code: usage},
		{Args: with("--target", "hello"), Code: usage},
		{Args: with("--target", "alice/hello@1.2.0"), Code: usage},
		{Args: with("--title", strings.Repeat("x", hub.MaxTitleBytes+1)), Code: usage},
		{Args: with("--title", "two\nlines"), Code: usage},
		{Args: with("--title", "  "), Code: usage},
		{Args: with("--title", "a\x1b[2Jb"), Code: usage},
		{Args: with("--title", "a\tb"), Code: usage},
		{Args: with("--body", "  "), Code: usage},
		{Args: with("--versions", "1.3.0..1.2.0"), Code: usage},
		{Args: with("--versions", "..1.2.0"), Code: usage},
		{Args: with("--versions", "1.2"), Code: usage},
		{Args: with("--versions", "1.2.0..latest"), Code: usage},
		{Args: with("extra"), Code: usage},
	})
}

func TestListShowCommentFlags(t *testing.T) {
	const usage = cmdutil.ExitUsage
	clitest.CheckFlags(t, func(runF func(*ListOptions) error) *cobra.Command { return NewCmdList(clitest.Factory(), runF) }, []clitest.FlagCase[ListOptions]{
		{Args: nil, Want: ListOptions{}},
		{Args: []string{"--target", "station", "--state", "confirmed", "--mine", "--offset", "20", "--limit", "10", "--json"},
			Want: ListOptions{Filter: hubclient.ReportListOptions{Target: "station", State: "confirmed", Mine: true, Offset: 20, Limit: 10}, JSON: true}},
		{Args: []string{"--state", "open"}, Code: usage},
		{Args: []string{"--target", "x"}, Code: usage},
		{Args: []string{"--offset", "-1"}, Code: usage},
		{Args: []string{"--limit", "101"}, Code: usage},
		{Args: []string{"x"}, Code: usage},
	})
	clitest.CheckFlags(t, func(runF func(*ShowOptions) error) *cobra.Command { return NewCmdShow(clitest.Factory(), runF) }, []clitest.FlagCase[ShowOptions]{
		{Args: []string{id, "--json"}, Want: ShowOptions{ID: id, JSON: true}},
		{Args: nil, Code: usage},
		{Args: []string{"R-1"}, Code: usage},
		{Args: []string{"../../admin"}, Code: usage},
		{Args: []string{id, other}, Code: usage},
	})
	clitest.CheckFlags(t, func(runF func(*CommentOptions) error) *cobra.Command { return NewCmdComment(clitest.Factory(), runF) }, []clitest.FlagCase[CommentOptions]{
		{Args: []string{id, "--body", "still there", "--verified-in", "v1.3.0"}, Want: CommentOptions{ID: id, Body: textFlag{Text: "still there"}, VerifiedIn: "1.3.0"}},
		{Args: []string{id, "--body-file", "-", "--json"}, Want: CommentOptions{ID: id, Body: textFlag{File: "-"}, JSON: true}},
		{Args: []string{id}, Code: usage},
		{Args: []string{id, "--body", "a", "--body-file", "f"}, Code: usage},
		{Args: []string{id, "--body", "a", "--verified-in", "latest"}, Code: usage},
		{Args: []string{"R-x", "--body", "a"}, Code: usage},
	})
	clitest.CheckFlags(t, func(runF func(*CreditsOptions) error) *cobra.Command { return NewCmdCredits(clitest.Factory(), runF) }, []clitest.FlagCase[CreditsOptions]{
		{Args: nil, Want: CreditsOptions{}},
		{Args: []string{"bob", "--json"}, Want: CreditsOptions{Account: "bob", JSON: true}},
		{Args: []string{"../bob"}, Code: usage},
		{Args: []string{"bob", "erin"}, Code: usage},
	})
	clitest.CheckFlags(t, func(runF func(*FameOptions) error) *cobra.Command { return NewCmdFame(clitest.Factory(), runF) }, []clitest.FlagCase[FameOptions]{
		{Args: []string{"--json"}, Want: FameOptions{JSON: true}},
		{Args: []string{"bob"}, Code: usage},
	})
}

// TestTriageFlags: what can be checked without the hub is a usage error
// that says what to pass.
func TestTriageFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*TriageOptions) error) *cobra.Command { return NewCmdTriage(clitest.Factory(), runF) }, []clitest.FlagCase[TriageOptions]{
		{Args: []string{id, "--state", "confirmed", "--comment", "reproduced", "--award", "5", "--reason", "clear", "--json"},
			Want: TriageOptions{ID: id, State: "confirmed", Comment: "reproduced", Award: 5, Reason: "clear", JSON: true}},
		{Args: []string{id, "--state", "fixed", "--fixed-in", "station-v0.72.0", "--advisory", "--publish"},
			Want: TriageOptions{ID: id, State: "fixed", FixedIn: "0.72.0", Advisory: true, Publish: true}},
		{Args: []string{id, "--state", "duplicate", "--duplicate-of", other}, Want: TriageOptions{ID: id, State: "duplicate", DuplicateOf: other}},
		{Args: []string{id, "--severity", "low", "--cvss", cvss}, Want: TriageOptions{ID: id, Severity: hub.Severity{Level: "low", CVSS: cvss}}},
		{Args: []string{id, "--publish"}, Want: TriageOptions{ID: id, Publish: true}},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{id}, "say what to change: --state STATE"},
		{[]string{id, "--comment", "hm"}, "station report comment " + id + " --body TEXT"},
		{[]string{id, "--state", "open"}, "pass one of new, triaged, confirmed, fixed, duplicate, wontfix, invalid"},
		{[]string{id, "--state", "new"}, "reopen a closed one with --state triaged"},
		{[]string{id, "--state", "fixed"}, "--state fixed needs --fixed-in VERSION"},
		{[]string{id, "--state", "confirmed", "--fixed-in", "1.2.0"}, "pass --state fixed --fixed-in 1.2.0"},
		{[]string{id, "--state", "fixed", "--fixed-in", "soon"}, `--fixed-in "soon" is not a version`},
		{[]string{id, "--state", "duplicate"}, "--state duplicate needs --duplicate-of ID"},
		{[]string{id, "--state", "wontfix", "--duplicate-of", other}, "pass --state duplicate --duplicate-of " + other},
		{[]string{id, "--state", "duplicate", "--duplicate-of", id}, "is this report"},
		{[]string{id, "--state", "duplicate", "--duplicate-of", "R-1"}, `--duplicate-of "R-1" is not a report id`},
		{[]string{id, "--award", "5"}, "--award 5 needs --reason R"},
		{[]string{id, "--award", "5", "--reason", " "}, "--award 5 needs --reason R"},
		{[]string{id, "--award", "0", "--reason", "r"}, "award 1 to 1000 credits"},
		{[]string{id, "--award", "-3", "--reason", "r"}, "award 1 to 1000 credits"},
		{[]string{id, "--award", "1001", "--reason", "r"}, "award 1 to 1000 credits"},
		{[]string{id, "--publish", "--reason", "r"}, "--reason goes with --award N"},
		{[]string{id, "--award", "1", "--reason", strings.Repeat("r", hub.MaxReasonBytes+1)}, "--reason is longer than 1024 bytes"},
		{[]string{id, "--cvss", cvss}, "--cvss goes with --severity"},
		{[]string{id, "--publish", "--comment", "ok\n\x1b[2J"}, "--comment: line 2 holds U+001B"},
		{[]string{id, "--award", "1", "--reason", "a\nb"}, "--reason: line 1 holds U+000A"},
		{[]string{id, "--severity", "severe"}, "none of low, medium, high, critical"},
		{[]string{"R-1", "--publish"}, "is not a report id"},
		{[]string{"--publish"}, "needs 1 argument(s): ID"},
	} {
		err := clitest.Parse(NewCmdTriage(clitest.Factory(), func(*TriageOptions) error {
			t.Errorf("triage %q ran", tc.args)
			return nil
		}), tc.args...)
		if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("triage %q: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestGroup: station report alone prints its help; a word that is none of
// its commands is a usage error.
func TestGroup(t *testing.T) {
	if err := clitest.Parse(NewCmdReport(clitest.Factory())); err != nil {
		t.Errorf("report alone: %v", err)
	}
	err := clitest.Parse(NewCmdReport(clitest.Factory()), "fil")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), `did you mean "file"`) {
		t.Errorf("report fil: %v", err)
	}
	// Every command explains itself with an example.
	for _, c := range NewCmdReport(clitest.Factory()).Commands() {
		if c.Long == "" || c.Example == "" {
			t.Errorf("report %s has no Long or no Example", c.Name())
		}
	}
}
