package hub

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

	hubapi "github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/wasmbuild"
)

// TestReleaseFlags: a release is named by its version, with or without
// "v" or "station-v"; the hub is sent the version alone.
func TestReleaseFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*ReleaseRecordOptions) error) *cobra.Command {
		return NewCmdReleaseRecord(clitest.Factory(), runF)
	}, []clitest.FlagCase[ReleaseRecordOptions]{
		{Args: []string{"0.72.0"}, Want: ReleaseRecordOptions{Version: "0.72.0"}},
		{Args: []string{"v0.72.0"}, Want: ReleaseRecordOptions{Version: "0.72.0"}},
		{Args: []string{"station-v0.72.0", "--json"}, Want: ReleaseRecordOptions{Version: "0.72.0", JSON: true}},
		{Args: []string{"station-v1.0.0-rc.1"}, Want: ReleaseRecordOptions{Version: "1.0.0-rc.1"}},
		{Args: []string{"station-0.72.0"}, Code: cmdutil.ExitUsage},
		{Args: []string{"vv0.72.0"}, Code: cmdutil.ExitUsage},
		{Args: []string{"0.72"}, Code: cmdutil.ExitUsage},
		{Args: []string{"latest"}, Code: cmdutil.ExitUsage},
		{Args: nil, Code: cmdutil.ExitUsage},
		{Args: []string{"0.72.0", "0.73.0"}, Code: cmdutil.ExitUsage},
	})
	clitest.CheckFlags(t, func(runF func(*ReleaseListOptions) error) *cobra.Command {
		return NewCmdReleaseList(clitest.Factory(), runF)
	}, []clitest.FlagCase[ReleaseListOptions]{
		{Args: []string{"--json"}, Want: ReleaseListOptions{JSON: true}},
		{Args: []string{"0.72.0"}, Code: cmdutil.ExitUsage},
	})
	err := clitest.Parse(NewCmdReleaseRecord(clitest.Factory(), nil), "latest")
	if !strings.Contains(err.Error(), "write 0.72.0, v0.72.0 or station-v0.72.0") {
		t.Errorf("record latest: %v", err)
	}
}

// fakeReleases is a ReleaseService with canned answers.
type fakeReleases struct {
	rels     []hubapi.Release
	err      error
	recorded []string
}

func (f *fakeReleases) RecordRelease(_ context.Context, v string) (hubapi.Release, error) {
	f.recorded = append(f.recorded, v)
	if f.err != nil {
		return hubapi.Release{}, f.err
	}
	return f.rels[0], nil
}

func (f *fakeReleases) Releases(context.Context) ([]hubapi.Release, error) { return f.rels, f.err }

func (f *fakeReleases) session() func(context.Context) (ReleaseService, error) {
	return func(context.Context) (ReleaseService, error) { return f, nil }
}

func TestReleaseRun(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	svc := &fakeReleases{rels: []hubapi.Release{{Version: "0.72.0", RecordedBy: "dave", RecordedAt: at}, {Version: "0.71.2", RecordedBy: "erin", RecordedAt: at}}}
	var out, errb bytes.Buffer
	io := &cmdutil.IOStreams{Out: &out, Err: &errb}
	if err := releaseRecordRun(ctx, &ReleaseRecordOptions{IO: io, Session: svc.session(), Version: "0.72.0"}); err != nil {
		t.Fatal(err)
	}
	if want := "recorded station release station-v0.72.0 (by dave, " + at.Local().Format(time.RFC3339) + ")\n"; out.String() != want || strings.Join(svc.recorded, ",") != "0.72.0" {
		t.Errorf("record printed %q (sent %v), want %q", out.String(), svc.recorded, want)
	}
	out.Reset()
	if err := releaseListRun(ctx, &ReleaseListOptions{IO: io, Session: svc.session()}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^RELEASE\s+RECORDED BY\s+RECORDED AT\nstation-v0\.72\.0\s+dave\s+\S+\nstation-v0\.71\.2\s+erin\s+\S+\n$`).MatchString(out.String()) {
		t.Errorf("list:\n%s", out.String())
	}
	out.Reset()
	if err := releaseListRun(ctx, &ReleaseListOptions{IO: io, Session: svc.session(), JSON: true}); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 2 || got[0]["version"] != "0.72.0" || got[0]["recorded_by"] != "dave" {
		t.Errorf("list --json: %s (%v)", out.String(), err)
	}

	// None recorded: said on stderr, [] with --json.
	out.Reset()
	empty := &fakeReleases{}
	if err := releaseListRun(ctx, &ReleaseListOptions{IO: io, Session: empty.session()}); err != nil || out.Len() != 0 || !strings.Contains(errb.String(), "station hub release record VERSION") {
		t.Errorf("empty list: %q %q %v", out.String(), errb.String(), err)
	}
	if err := releaseListRun(ctx, &ReleaseListOptions{IO: io, Session: empty.session(), JSON: true}); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("empty list --json: %q %v", out.String(), err)
	}

	// The hub's refusal is the command's error.
	refused := &fakeReleases{err: hubapi.Errorf(hubapi.CodeNotAdmin, "only a hub admin records releases")}
	if err := releaseRecordRun(ctx, &ReleaseRecordOptions{IO: io, Session: refused.session(), Version: "0.72.0"}); hubapi.CodeOf(err) != hubapi.CodeNotAdmin {
		t.Errorf("record by a non-admin: %v", err)
	}

	// A hostile hub's text reaches the terminal escaped.
	x := clitest.Hostile
	hostile := &fakeReleases{rels: []hubapi.Release{{Version: x, RecordedBy: x}}}
	out.Reset()
	releaseRecordRun(ctx, &ReleaseRecordOptions{IO: io, Session: hostile.session(), Version: "0.72.0"})
	releaseListRun(ctx, &ReleaseListOptions{IO: io, Session: hostile.session()})
	clitest.CheckPrinted(t, "release record and list", out.String())
}

// TestReleaseNotLoggedIn: the release commands use the station's hub
// login, and say how to make one.
func TestReleaseNotLoggedIn(t *testing.T) {
	f := cmdutil.New(cmdutil.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Cache: wasmbuild.CacheForTest()})
	f.Home = t.TempDir()
	t.Cleanup(func() { f.Close(context.Background()) })
	for _, args := range [][]string{{"record", "0.72.0"}, {"list"}} {
		err := clitest.Parse(NewCmdRelease(f), args...)
		if !errors.Is(err, hubsync.ErrNotLoggedIn) || !strings.Contains(cmdutil.Hint(err), "station hub login") {
			t.Errorf("release %q not logged in: %v", args, err)
		}
	}
}
