package advisories

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// TestCheckFlags: the check takes --offline and --json and no argument
// but a subcommand.
func TestCheckFlags(t *testing.T) {
	newCmd := func(runF func(*CheckOptions) error) *cobra.Command { return newCmdCheck(clitest.Factory(), runF) }
	v := cmdutil.Version()
	clitest.CheckFlags(t, newCmd, []clitest.FlagCase[CheckOptions]{
		{Args: nil, Want: CheckOptions{Version: v}},
		{Args: []string{"--offline", "--json"}, Want: CheckOptions{Version: v, Offline: true, JSON: true}},
		{Args: []string{"sohw"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--bogus"}, Code: cmdutil.ExitUsage},
	}, "Now")
}

// TestAllowFlags: an allowance names a well-formed advisory id, exactly
// one module version, and a reason; anything else is a usage error.
func TestAllowFlags(t *testing.T) {
	newCmd := func(runF func(*AllowOptions) error) *cobra.Command { return NewCmdAllow(clitest.Factory(), runF) }
	const id = "STATION-2026-0007"
	clitest.CheckFlags(t, newCmd, []clitest.FlagCase[AllowOptions]{
		{Args: []string{id, "dave/x@1.4.0", "--reason", "never called"}, Want: AllowOptions{ID: id, Module: "dave/x", Version: "1.4.0", Reason: "never called"}},
		{Args: []string{id, "dave/x@1.4.0"}, Code: cmdutil.ExitUsage},                                // no reason
		{Args: []string{id, "dave/x@1.4.0", "--reason", "  "}, Code: cmdutil.ExitUsage},              // a blank one
		{Args: []string{id, "dave/x", "--reason", "r"}, Code: cmdutil.ExitUsage},                     // no version
		{Args: []string{id, "dave/x@", "--reason", "r"}, Code: cmdutil.ExitUsage},                    // empty version
		{Args: []string{id, "@1.0.0", "--reason", "r"}, Code: cmdutil.ExitUsage},                     // no module
		{Args: []string{id, "dave/x@latest", "--reason", "r"}, Code: cmdutil.ExitUsage},              // not a version
		{Args: []string{id, "dave/x@v1.0.0", "--reason", "r"}, Code: cmdutil.ExitUsage},              // a v
		{Args: []string{id, "../etc@1.0.0", "--reason", "r"}, Code: cmdutil.ExitUsage},               // not a module id
		{Args: []string{id, "dave/x@1.0.0@2.0.0", "--reason", "r"}, Code: cmdutil.ExitUsage},         // two
		{Args: []string{"GHSA-xxxx-yyyy", "dave/x@1.0.0", "--reason", "r"}, Code: cmdutil.ExitUsage}, // not a hub's id
		{Args: []string{"STATION-2026-0007\x1b[2J", "dave/x@1.0.0", "--reason", "r"}, Code: cmdutil.ExitUsage},
		{Args: []string{id, "dave/x@1.0.0", "--reason", strings.Repeat("x", hub.MaxReasonBytes+1)}, Code: cmdutil.ExitUsage},
		{Args: []string{id}, Code: cmdutil.ExitUsage},
		{Args: []string{id, "dave/x@1.4.0", "--revoke"}, Want: AllowOptions{ID: id, Module: "dave/x", Version: "1.4.0", Revoke: true}},
		{Args: []string{id, "dave/x@1.4.0", "--revoke", "--reason", "r"}, Code: cmdutil.ExitUsage},
		{Args: []string{id, "dave/x", "--revoke"}, Code: cmdutil.ExitUsage},
	}, "Now")
}

// TestPublishFlags: what the hub would refuse and can be seen here is a
// usage error before any request.
func TestPublishFlags(t *testing.T) {
	newCmd := func(runF func(*PublishOptions) error) *cobra.Command { return NewCmdPublish(clitest.Factory(), runF) }
	base := []string{"--target", "dave/x", "--introduced", "1.0.0", "--summary", "s", "--details-file", "d.md", "--severity", "high"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	want := PublishOptions{DetailsFile: "d.md", Request: hub.AdvisoryRequest{Target: "dave/x", Summary: "s", Severity: hub.Severity{Level: "high"},
		Ranges: []hub.Range{{Introduced: "1.0.0", Fixed: "1.0.1"}}}}
	station := want
	station.Request.Target, station.Request.Ranges = hub.Product, []hub.Range{{Introduced: "0", LastAffected: "0.72.0"}}
	station.Request.CWE, station.Request.Severity.CVSS = "CWE-22", "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N"
	clitest.CheckFlags(t, newCmd, []clitest.FlagCase[PublishOptions]{
		{Args: with("--fixed", "1.0.1"), Want: want},
		{Args: []string{"--target", "station", "--introduced", "0", "--last-affected", "0.72.0", "--summary", "s", "--details-file", "d.md", "--severity", "high",
			"--cwe", "CWE-22", "--cvss", station.Request.Severity.CVSS}, Want: station},
		{Args: with("--fixed", "1.0.1", "--last-affected", "1.0.0"), Code: cmdutil.ExitUsage},
		{Args: with("--fixed", "next"), Code: cmdutil.ExitUsage},
		{Args: with("--severity", "severe"), Code: cmdutil.ExitUsage},
		{Args: with("--cvss", "9.8"), Code: cmdutil.ExitUsage},
		{Args: with("--cwe", "200"), Code: cmdutil.ExitUsage},
		{Args: []string{"--target", "nobody", "--introduced", "0", "--summary", "s", "--details-file", "d", "--severity", "low"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--target", "dave/x", "--summary", "s", "--details-file", "d", "--severity", "low"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--target", "dave/x", "--introduced", "0", "--details-file", "d", "--severity", "low"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--target", "dave/x", "--introduced", "0", "--summary", "s", "--severity", "low"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--target", "dave/x", "--introduced", "0", "--summary", "s", "--details-file", "d"}, Code: cmdutil.ExitUsage},
		{Args: with("extra"), Code: cmdutil.ExitUsage},
	})
}

// TestWithdrawAndShowFlags: both take one well-formed id; withdraw a
// reason.
func TestWithdrawAndShowFlags(t *testing.T) {
	const id = "STATION-2026-0007"
	clitest.CheckFlags(t, func(runF func(*WithdrawOptions) error) *cobra.Command { return NewCmdWithdraw(clitest.Factory(), runF) },
		[]clitest.FlagCase[WithdrawOptions]{
			{Args: []string{id, "--reason", "wrong"}, Want: WithdrawOptions{ID: id, Reason: "wrong"}},
			{Args: []string{id}, Code: cmdutil.ExitUsage},
			{Args: []string{"R-abcdefghijkl", "--reason", "wrong"}, Code: cmdutil.ExitUsage},
		})
	clitest.CheckFlags(t, func(runF func(*ShowOptions) error) *cobra.Command { return NewCmdShow(clitest.Factory(), runF) },
		[]clitest.FlagCase[ShowOptions]{
			{Args: []string{id, "--json", "--offline"}, Want: ShowOptions{ID: id, JSON: true, Offline: true}},
			{Args: []string{"station-2026-0007"}, Code: cmdutil.ExitUsage},
			{Args: nil, Code: cmdutil.ExitUsage},
		})
}

// TestPrintersEscape: every string a hub supplied is printed escaped by
// the check's table, show and the results of allow, publish and
// withdraw; --json keeps the text and stays snake_case.
func TestPrintersEscape(t *testing.T) {
	h := clitest.Hostile
	osv := hub.OSV{ID: h, Summary: h, Details: h + "\n" + h, Aliases: []string{h}, Modified: hub.OSVTime{Time: time.Now()},
		Severity: []hub.OSVScore{{Type: "CVSS_V4", Score: h}},
		Affected: []hub.OSVAffect{{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: h},
			Ranges: []hub.OSVRange{{Type: "SEMVER", Events: []hub.OSVEvent{{Introduced: h}, {Fixed: h}}}}}, {Package: hub.OSVPackage{Ecosystem: h, Name: h}}},
		References: []hub.OSVRef{{Type: h, URL: h}}, Credits: []hub.OSVCredit{{Name: h, Type: h}}, Database: &hub.OSVDatabase{Severity: h, CWEIDs: []string{h}}}
	finding := hubsync.Finding{Module: h, Version: h, Hub: h, Origin: hubsync.FromHub, Yanked: true, YankReason: h, Status: hubsync.StatusBlocked,
		Advisories: []hubsync.AdvisoryFinding{{ID: h, Summary: h, Severity: h, FixedIn: h, Hub: h, Status: hubsync.StatusBlocked, Allowed: true, AllowReason: h}}}
	station := finding
	station.Status, station.Note = hubsync.StatusUnknown, h
	for name, r := range map[string]cmdutil.Texter{
		"check":    &CheckResult{Hub: h, SyncedAt: time.Now(), Affected: true, Modules: []hubsync.Finding{finding, {Module: h, Version: h, Origin: hubsync.FromDirectory, Status: hubsync.StatusOK}}, Station: station},
		"show":     &ShowResult{OSV: osv, from: h},
		"allow":    AllowResult{Advisory: h, Module: h, Version: h, Severity: h, Summary: h, Reason: h, Hub: h},
		"publish":  PublishResult{osv},
		"withdraw": WithdrawResult{osv},
	} {
		var out bytes.Buffer
		if err := r.Text(&out); err != nil {
			t.Fatal(err)
		}
		clitest.CheckPrinted(t, name, out.String())
		out.Reset()
		if err := cmdutil.WriteJSON(&out, r); err != nil {
			t.Errorf("%s --json: %v", name, err)
		}
		if c := clitest.RawControl(out.String()); c != "" {
			t.Errorf("%s --json: %s reaches the terminal", name, c)
		}
	}
}
