package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	clihub "github.com/station-dev/station/internal/cli/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/wasmbuild"
)

// home is a station home logged in to a hub as one account.
type home struct {
	t    *testing.T
	dir  string
	name string
}

// loggedIn returns a station home logged in to h with token.
func loggedIn(t *testing.T, h *hubtest.Hub, name, token string) *home {
	t.Helper()
	hm := &home{t: t, dir: t.TempDir(), name: name}
	f := hm.factory(nil, nil, nil)
	defer f.Close(context.Background())
	st, err := f.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hubsync.Login(context.Background(), st, h.URL, token); err != nil {
		t.Fatalf("log %s in: %v", name, err)
	}
	return hm
}

func (hm *home) factory(stdin *strings.Reader, out, errb *bytes.Buffer) *cmdutil.Factory {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	if out == nil {
		out, errb = &bytes.Buffer{}, &bytes.Buffer{}
	}
	f := cmdutil.New(cmdutil.IOStreams{In: stdin, Out: out, Err: errb, Cache: wasmbuild.CacheForTest()})
	f.Home = hm.dir
	return f
}

// result is what a command printed, and its error.
type result struct {
	out, err string
	e        error
}

// do runs newCmd's command with args on this station, as the CLI would.
func (hm *home) do(newCmd func(*cmdutil.Factory) *cobra.Command, stdin string, args ...string) result {
	hm.t.Helper()
	var out, errb bytes.Buffer
	f := hm.factory(strings.NewReader(stdin), &out, &errb)
	err := clitest.Parse(newCmd(f), args...)
	if cerr := f.Close(context.Background()); err == nil {
		err = cerr
	}
	r := result{out.String(), errb.String(), err}
	if c := clitest.RawControl(r.out + r.err); c != "" {
		hm.t.Errorf("%s %q: %s reaches the terminal", hm.name, args, c)
	}
	return r
}

// report runs `station report ARGS` as this station.
func (hm *home) report(stdin string, args ...string) result {
	hm.t.Helper()
	return hm.do(NewCmdReport, stdin, args...)
}

// ok fails the test unless the command succeeded, and returns its output.
func (r result) ok(t *testing.T, what string) result {
	t.Helper()
	if r.e != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", what, r.e, r.out, r.err)
	}
	return r
}

// code fails the test unless the command failed with the hub's code.
func (r result) code(t *testing.T, what string, c hub.Code) {
	t.Helper()
	if hub.CodeOf(r.e) != c {
		t.Errorf("%s: %v, want hub error %s", what, r.e, c)
	}
}

func (r result) has(t *testing.T, what string, res ...string) {
	t.Helper()
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(r.out) {
			t.Errorf("%s does not match %s:\n%s", what, re, r.out)
		}
	}
}

func publishVersion(t *testing.T, c *hubclient.Client, s *hubclient.Signer, id, version string) {
	t.Helper()
	b, err := hubclient.NewBundle(hubtest.Manifest(id, version), hubtest.Wasm(version), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(context.Background(), b); err != nil {
		t.Fatalf("publish %s@%s: %v", id, version, err)
	}
}

// TestAgainstTheHub: a report's life on a real hub, through the commands:
// bob files against alice's module; it is private to him, alice and the
// admins; they talk in the thread; alice confirms it and awards credits,
// marks it fixed with an advisory and publishes it; then everyone reads it,
// and bob's credits and the hall of fame say so. The station's own reports
// are triaged by an admin, fixed in a release an admin recorded.
func TestAgainstTheHub(t *testing.T) {
	ctx := context.Background()
	h := hubtest.Start(t)
	aliceC, signer := h.Publisher(t, "alice")
	publishVersion(t, aliceC, signer, "alice/hello", "1.2.0")
	publishVersion(t, aliceC, signer, "alice/hello", "1.3.0")
	rootToken := h.Account(t, "root")
	if err := h.Store.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	aliceToken, err := aliceC.CreateToken(ctx, "station")
	if err != nil {
		t.Fatal(err)
	}
	alice := loggedIn(t, h, "alice", aliceToken.Secret)
	bob := loggedIn(t, h, "bob", h.Account(t, "bob"))
	erin := loggedIn(t, h, "erin", h.Account(t, "erin"))
	root := loggedIn(t, h, "root", rootToken)

	repro := filepath.Join(t.TempDir(), "repro.sh")
	os.WriteFile(repro, []byte("station run alice/hello greet --input '{\"token\":\"x\"}'\n"), 0o600)
	r := bob.report("## What\r\nThe token is logged.\r\n", "file", "--target", "alice/hello", "--versions", "1.2.0", "--title", "greet logs the token",
		"--severity", "high", "--cwe", "CWE-532", "--body-file", "-", "--reproduction-file", repro).ok(t, "file")
	id := strings.TrimSpace(r.out)
	if !hub.ValidReportID(id) || !strings.Contains(r.err, "private to you, the owner of alice/hello (alice) and the hub's admins until it is published") {
		t.Fatalf("file printed %q, %q", r.out, r.err)
	}

	// Private: bob, alice and root read it; erin does not, not even that
	// it exists.
	bob.report("", "show", id).ok(t, "bob shows").has(t, "bob's show", `^`+id+`: greet logs the token\n`, `state:\s+new\n`,
		`versions:\s+1\.2\.0 and later\n`, `private:\s+read only by bob, the owner of alice/hello \(alice\) and the hub's admins`,
		`\n    ## What\n    The token is logged\.\n`, `reproduction:\n    station run alice/hello greet`, `  bob  filed the report\n`)
	alice.report("", "show", id).ok(t, "alice shows")
	root.report("", "show", id).ok(t, "root shows")
	erin.report("", "show", id).code(t, "erin shows a private report", hub.CodeReportNotFound)
	erin.report("", "comment", id, "--body", "me too").code(t, "erin comments on a private report", hub.CodeReportNotFound)
	if r := erin.report("", "list", "--json").ok(t, "erin lists"); strings.Contains(r.out, id) {
		t.Errorf("erin's list has the private report:\n%s", r.out)
	}
	alice.report("", "list", "--target", "alice/hello").ok(t, "alice lists").has(t, "alice's list", id+`\s+alice/hello\s+new\s+high\s+greet logs the token\s+bob\s`)

	// The thread.
	alice.report("", "comment", id, "--body", "Which versions?").ok(t, "alice comments")
	bob.report("Still there on 1.3.0.\n", "comment", id, "--verified-in", "1.3.0", "--body-file", "-").ok(t, "bob comments").
		has(t, "bob's comment", `verified on 1\.3\.0: report `+id)

	// Only the owner triages; the hub refuses what the state does not allow.
	bob.report("", "triage", id, "--state", "confirmed").code(t, "bob triages his own report", hub.CodeNotMaintainer)
	alice.report("", "triage", id, "--award", "5", "--reason", "early").code(t, "an award on a new report", hub.CodeAwardRefused)
	alice.report("", "triage", id, "--state", "confirmed", "--comment", "Reproduced on 1.2.0.", "--award", "5", "--reason", "clear reproduction").
		ok(t, "alice confirms").has(t, "alice's triage", `^`+id+`: new → confirmed\n`, `awarded 5 credits to bob: clear reproduction \(5 for this report in all\)`)
	// The award is public, but says nothing of the private report.
	if r := erin.report("", "credits", "bob").ok(t, "bob's credits, private"); !regexp.MustCompile(`\+5\s+-\s+-\s+a private report\n`).MatchString(r.out) || strings.Contains(r.out, "clear") || strings.Contains(r.out, id) {
		t.Errorf("credits of a private report's award:\n%s", r.out)
	}
	alice.report("", "triage", id, "--state", "triaged").code(t, "confirmed back to triaged", hub.CodeStateChangeInvalid)
	alice.report("", "triage", id, "--severity", "critical").ok(t, "alice rescores").has(t, "alice's rescore", `^`+id+`: still confirmed\n  severity now critical\n`)
	alice.report("", "triage", id, "--state", "fixed", "--fixed-in", "1.3.1").code(t, "fixed in an unpublished version", hub.CodeFixedVersionNotFound)
	publishVersion(t, aliceC, signer, "alice/hello", "1.3.1")
	r = alice.report("", "triage", id, "--state", "fixed", "--fixed-in", "1.3.1", "--advisory", "--publish").ok(t, "alice fixes and publishes")
	r.has(t, "alice's fix", `^`+id+`: confirmed → fixed\n`, `  fixed in 1\.3\.1\n`, `  advisory STATION-\d{4}-\d+ published`, `  published: everyone may read the report`)

	// Public now: erin reads it, thread and all.
	var rep hub.Report
	if r := erin.report("", "show", id, "--json").ok(t, "erin shows the published report"); json.Unmarshal([]byte(r.out), &rep) != nil || rep.State != hub.StateFixed || rep.Advisory == "" || rep.PublishedAt == nil {
		t.Fatalf("show --json of the published report:\n%s", r.out)
	}
	if rep.Reproduction != "" {
		t.Errorf("a public reader gets the reproduction: %q", rep.Reproduction)
	}
	erin.report("", "show", id).ok(t, "erin shows").has(t, "the published report's thread",
		`published:\s+\d{4}-`, `  alice  new → confirmed\n    Reproduced on 1\.2\.0\.\n`, `  alice  \+5 credits: clear reproduction\n`,
		`  alice  commented\n    Which versions\?\n`, `  bob  verified on 1\.3\.0\n    Still there on 1\.3\.0\.\n`,
		`  alice  severity set to critical\n`, `  alice  confirmed → fixed \(fixed in 1\.3\.1\)\n`, `  alice  published advisory `+rep.Advisory+`\n`)

	erin.report("", "comment", id, "--body", "me too").code(t, "erin comments on a public report", hub.CodeNotMaintainer)

	// Credits and the hall of fame.
	bob.report("", "credits").ok(t, "bob's credits").has(t, "bob's credits", `^bob: 5 credits from 1 award\(s\)\n`, `\+5\s+clear reproduction\s+alice\s+`+id+` \(alice/hello\)`)
	var cr hub.Credits
	if r := erin.report("", "credits", "bob", "--json").ok(t, "erin reads bob's credits"); json.Unmarshal([]byte(r.out), &cr) != nil || cr.Balance != 5 || len(cr.History) != 1 || cr.History[0].Report != id {
		t.Errorf("credits bob --json:\n%s", r.out)
	}
	erin.report("", "fame").ok(t, "fame").has(t, "fame", `RANK\s+ACCOUNT\s+CREDITS\s+AWARDS\n1\s+bob\s+5\s+1\n`)
	erin.report("", "credits", "nobody").code(t, "credits of no account", hub.CodeAccountNotFound)

	// The station's own reports: an admin records the release the fix is
	// in, and triages.
	release := func(f *cmdutil.Factory) *cobra.Command { return clihub.NewCmdRelease(f) }
	bob.do(release, "", "record", "0.72.0").code(t, "bob records a release", hub.CodeNotAdmin)
	root.do(release, "", "record", "station-v0.72.0").ok(t, "root records a release").has(t, "record", `^recorded station release station-v0\.72\.0 \(by root, `)
	root.do(release, "", "record", "v0.72.0").code(t, "a release recorded twice", hub.CodeReleaseExists)
	erin.do(release, "", "list").ok(t, "release list").has(t, "release list", `RELEASE\s+RECORDED BY\s+RECORDED AT\nstation-v0\.72\.0\s+root\s`)
	r = bob.report("", "file", "--target", "station", "--versions", "0.70.0..0.71.9", "--title", "a module writes outside its glob", "--severity", "critical", "--body", "It does.").ok(t, "file against the station")
	sid := strings.TrimSpace(r.out)
	if !strings.Contains(r.err, "private to you and the hub's admins until it is published") {
		t.Errorf("file against the station: %s", r.err)
	}
	alice.report("", "show", sid).code(t, "a module owner shows a station report", hub.CodeReportNotFound)
	root.report("", "triage", sid, "--state", "confirmed").ok(t, "root confirms")
	root.report("", "triage", sid, "--state", "fixed", "--fixed-in", "0.72.1").code(t, "fixed in an unrecorded release", hub.CodeFixedVersionNotFound)
	root.report("", "triage", sid, "--state", "fixed", "--fixed-in", "station-v0.72.0").ok(t, "root fixes").has(t, "root's fix", `confirmed → fixed\n  fixed in 0\.72\.0\n`)
}
