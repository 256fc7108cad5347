package advisories

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
)

// TestCheckReloadsTheDaemon: advisories the check reads from the hub are
// stored by this process, which a running daemon does not see (its relay
// may have missed them: reconnecting, or the hub's relay down): each
// module they affect is reloaded in the daemon, so that it refuses a
// version the table says is BLOCKED from its next call. A check that
// brought nothing new, or --offline, reloads nothing.
func TestCheckReloadsTheDaemon(t *testing.T) {
	ctx := context.Background()
	h := hubtest.Start(t)
	dave, signer := h.Publisher(t, "dave")
	b, err := hubclient.NewBundle([]byte("id: dave/hello\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: []\n"),
		wasmbuild.ForTest(t, "examples/hello"), signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dave.Publish(ctx, b); err != nil {
		t.Fatal(err)
	}
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if _, err := hubsync.Login(ctx, st, h.URL, h.Account(t, "erin")); err != nil {
		t.Fatal(err)
	}
	sess, err := hubsync.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dave.PublishAdvisory(ctx, hub.AdvisoryRequest{Target: "dave/hello", Ranges: []hub.Range{{Introduced: "0"}},
		Summary: "greet leaks the name", Details: "The greeting is logged.", Severity: hub.Severity{Level: hub.SeverityCritical}}); err != nil {
		t.Fatal(err)
	}
	var reloaded []string
	check := func(offline bool) {
		t.Helper()
		var out, errb bytes.Buffer
		err := checkRun(ctx, &CheckOptions{IO: &cmdutil.IOStreams{Out: &out, Err: &errb}, Version: "(devel)", Offline: offline,
			Open:    func(context.Context) (*station.Station, error) { return st, nil },
			Session: func(context.Context, *station.Station) (*hubsync.Session, error) { return sess, nil },
			Reload:  func(_ context.Context, id string) { reloaded = append(reloaded, id) }})
		var ae *AffectedError
		if !errors.As(err, &ae) || ae.Blocked != 1 {
			t.Fatalf("check = %v, want dave/hello blocked:\n%s%s", err, out.String(), errb.String())
		}
	}
	check(false)
	if !slices.Equal(reloaded, []string{"dave/hello"}) {
		t.Errorf("after the hub brought a critical advisory, the daemon was told of %v, want dave/hello", reloaded)
	}
	reloaded = nil
	check(false)
	check(true)
	if len(reloaded) != 0 {
		t.Errorf("checks that brought nothing reloaded %v", reloaded)
	}
}
