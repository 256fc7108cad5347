package uicmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
)

// fakeUI is a dashboard that only makes codes.
type fakeUI struct{ http.Handler }

func (fakeUI) NewSignInCode() (string, time.Time) { return "CODE", time.Now().Add(2 * time.Minute) }

// serve starts a daemon for a fresh home, with ui as its dashboard.
func serve(t *testing.T, ui daemon.UI) string {
	t.Helper()
	home := t.TempDir()
	st, err := station.Open(context.Background(), home, station.Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	srv, err := daemon.New(daemon.Options{Station: st, UI: ui})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := daemon.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(home, daemon.StateFile))
		return err == nil
	}, "the state file")
	return home
}

func runUI(t *testing.T, home string, open func(string) error, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	opts := &Options{IO: &cmdutil.IOStreams{Out: &out, Err: &errb}, Open: open,
		Dial: func(ctx context.Context) (*daemon.Client, error) { return daemon.Dial(ctx, home) }}
	for _, a := range args {
		opts.JSON = opts.JSON || a == "--json"
		opts.NoBrowse = opts.NoBrowse || a == "--no-browser"
	}
	err := run(context.Background(), opts)
	return out.String(), errb.String(), err
}

func TestUI(t *testing.T) {
	home := serve(t, fakeUI{http.NotFoundHandler()})
	var opened []string
	browser := func(u string) error { opened = append(opened, u); return nil }
	noBrowser := func(string) error { return errors.New("exec: \"xdg-open\": executable file not found in $PATH") }

	// A browser starts: it gets the link, the terminal does not.
	out, errs, err := runUI(t, home, browser)
	if err != nil || len(opened) != 1 || !strings.HasSuffix(opened[0], "/ui/signin?code=CODE") || strings.Contains(out, "code=") || !strings.Contains(errs, "opened the dashboard") {
		t.Errorf("with a browser: out %q, err %q, %v, opened %v", out, errs, err, opened)
	}
	// None can be started: the link is printed, with why.
	out, errs, err = runUI(t, home, noBrowser)
	if err != nil || !strings.Contains(out, "/ui/signin?code=CODE") || !strings.Contains(out, "works once") || !strings.Contains(errs, "xdg-open") {
		t.Errorf("without a browser: out %q, err %q, %v", out, errs, err)
	}
	// --no-browser and --json start none.
	opened = nil
	if out, _, err := runUI(t, home, browser, "--no-browser"); err != nil || len(opened) != 0 || !strings.Contains(out, "code=CODE") {
		t.Errorf("--no-browser: %q, %v, opened %v", out, err, opened)
	}
	out, _, err = runUI(t, home, browser, "--json")
	var link Link
	if err != nil || json.Unmarshal([]byte(out), &link) != nil || !strings.HasSuffix(link.URL, "code=CODE") || link.Expires.IsZero() || len(opened) != 0 {
		t.Errorf("--json: %q, %v, opened %v", out, err, opened)
	}
}

func TestUIWithoutADaemon(t *testing.T) {
	_, _, err := runUI(t, t.TempDir(), func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "start one with station serve") {
		t.Errorf("no daemon: %v", err)
	}
	// A daemon without a dashboard (older than it) says to restart it.
	home := serve(t, nil)
	if _, _, err := runUI(t, home, func(string) error { return nil }); err == nil || !strings.Contains(err.Error(), "restart station serve") {
		t.Errorf("no dashboard: %v", err)
	}
}
