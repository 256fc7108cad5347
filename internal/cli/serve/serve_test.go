package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
)

func TestFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*ServeOptions) error) *cobra.Command { return NewCmdServe(clitest.Factory(), runF) }, []clitest.FlagCase[ServeOptions]{
		{Args: nil, Want: ServeOptions{Addr: DefaultAddr}},
		{Args: []string{"--addr", "127.0.0.1:0", "--demo"}, Want: ServeOptions{Addr: "127.0.0.1:0", Demo: true}},
		{Args: []string{"now"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--port", "1"}, Code: cmdutil.ExitUsage},
	}, "Relay")
}

// TestServeSaysWhatTheRelayDid: the daemon prints a line when the relay
// follower applies a pushed lockfile, holds a change for approval, or stops
// following, and one when it stops itself; a second daemon on the same home
// is refused, and the state file goes with the daemon.
func TestServeSaysWhatTheRelayDid(t *testing.T) {
	home := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out fixture.SyncBuffer
	events := []hubsync.RelayEvent{
		{Kind: hubsync.RelayFollowing, Hub: "https://hub.example", Account: "ada"},
		{Kind: hubsync.RelayApplied, Team: "acme", Revision: 3, Installed: []string{"acme/tool@1.1.0"}},
		{Kind: hubsync.RelayPending, Team: "acme", Revision: 4, Module: "acme/tool", Version: "2.0.0", FromVersion: "1.1.0", Asks: []string{"may now connect to evil.example"}},
		{Kind: hubsync.RelayStopped, Hub: "https://hub.example", Reason: "the hub login changed"},
	}
	opened := make(chan *station.Station, 2)
	f := cmdutil.New(cmdutil.IOStreams{Out: &out, Err: &out})
	defer f.Close(ctx)
	opts := func() *ServeOptions {
		return &ServeOptions{IO: &cmdutil.IOStreams{Out: &out, Err: &out, Getenv: func(string) string { return "" }}, Addr: "127.0.0.1:0",
			Open: func(ctx context.Context) (*station.Station, error) {
				s, err := station.Open(ctx, home, station.Options{})
				if err == nil {
					opened <- s
				}
				return s, err
			},
			Logger:     f.Logger,
			FileLogger: f.FileLogger,
			Relay: func(_ *station.Station, o hubsync.FollowOptions) func(context.Context) {
				return func(ctx context.Context) {
					// What the follower logs is station.log's: the
					// relay's lines say it once.
					o.Log.Warn("team change waits for approval (station team sync)", "team", "acme")
					for _, e := range events {
						o.OnEvent(e)
					}
					<-ctx.Done()
				}
			}}
	}
	done := make(chan error, 1)
	go func() { done <- serveRun(ctx, opts()) }()
	if !fixture.Poll(20*time.Second, func() bool { return strings.Contains(out.String(), "the hub login changed") }) {
		t.Fatalf("the daemon did not start and report the relay:\n%s", out.String())
	}
	for _, want := range []string{
		"station daemon listening on http://127.0.0.1:", "token in " + filepath.Join(home, daemon.StateFile),
		"following the hub relay at https://hub.example as ada\n",
		"team acme: applied lockfile revision 3 from the hub (installed acme/tool@1.1.0)\n",
		"team acme: acme/tool@2.0.0 waits for your approval (revision 4; 1.1.0 keeps running): it may now connect to evil.example; review: station team status acme, approve: station team sync acme\n",
		"stopped following the hub relay at https://hub.example: the hub login changed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve does not print %q:\n%s", want, out.String())
		}
	}

	if strings.Contains(out.String(), "warn: team change waits") {
		t.Errorf("the relay follower's log reaches the daemon's output:\n%s", out.String())
	}

	err := serveRun(ctx, opts())
	if err == nil || !strings.Contains(err.Error(), "already serves "+home) {
		t.Errorf("a second daemon: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	// serveRun leaves the stations it opened to its caller (the Factory).
	(<-opened).Close(context.Background())
	(<-opened).Close(context.Background())
	if !strings.Contains(out.String(), "station daemon stopped after ") {
		t.Errorf("no line when the daemon stopped:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(home, daemon.StateFile)); !os.IsNotExist(err) {
		t.Errorf("the state file outlived the daemon: %v", err)
	}
}
