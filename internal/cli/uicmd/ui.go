// Package uicmd is `station ui`: it asks the running daemon for a one-time
// sign-in link to its dashboard and opens it in a browser.
package uicmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/daemon"
)

// Options are what `station ui` was asked to do.
type Options struct {
	IO *cmdutil.IOStreams
	// Dial finds the daemon of the station home.
	Dial func(ctx context.Context) (*daemon.Client, error)
	// Open starts a browser on url; an error means none could be started.
	Open     func(url string) error
	NoBrowse bool // --no-browser
	JSON     bool
}

// NewCmdUI returns `station ui`.
func NewCmdUI(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: &f.IO, Open: func(url string) error { return openBrowser(f.IO.Getenv, url) }, Dial: func(ctx context.Context) (*daemon.Client, error) {
		home, err := f.HomeDir()
		if err != nil {
			return nil, err
		}
		return daemon.Dial(ctx, home)
	}}
	c := &cobra.Command{
		Use:   "ui",
		Short: "Open the dashboard of the running daemon in a browser",
		Long: `UI opens the dashboard that station serve serves at /ui/ on its loopback
address: the installed modules and what each may do, pending approvals, the
audit log with a live tail, workflow runs, LLM spending, teams and advisories.

It asks the daemon for a one-time sign-in link (with the daemon's token, which
only the station's user can read) and opens it in your browser ($BROWSER, else
xdg-open or open); the browser exchanges the link's code for a session cookie.
A link works once, within two minutes. When no browser can be started, or
with --no-browser, it prints the link: open it on this machine.

With --json: {"url", "expires"}, and no browser is started.`,
		Example: "  station serve &\n  station ui\n  station ui --no-browser",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.NoBrowse, "no-browser", false, "print the sign-in link instead of opening it")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// Link is what station ui --json prints.
type Link struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// Text implements cmdutil.Texter.
func (l Link) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s\n(a one-time link: it works once, until %s)\n", l.URL, l.Expires.Local().Format("15:04:05"))
	return err
}

func run(ctx context.Context, opts *Options) error {
	c, err := opts.Dial(ctx)
	if errors.Is(err, daemon.ErrNotRunning) {
		return fmt.Errorf("no daemon serves this station home: start one with station serve (the dashboard is part of it), then run station ui again")
	}
	if err != nil {
		return err
	}
	defer c.Close()
	in, err := c.UISignIn(ctx)
	var ae *daemon.APIError
	if errors.As(err, &ae) && ae.Code == daemon.CodeNotFound {
		return fmt.Errorf("the running daemon serves no dashboard (it is older than this station): restart station serve")
	}
	if err != nil {
		return err
	}
	link := Link{URL: in.URL, Expires: in.Expires}
	if opts.JSON {
		return cmdutil.Print(opts.IO.Out, true, link)
	}
	if !opts.NoBrowse {
		err := opts.Open(in.URL)
		if err == nil {
			fmt.Fprintln(opts.IO.Err, "opened the dashboard in your browser (if none appeared: station ui --no-browser prints a link)")
			return nil
		}
		fmt.Fprintf(opts.IO.Err, "could not start a browser (%s); open this link on this machine:\n", cmdutil.TermText(err.Error()))
	}
	return cmdutil.Print(opts.IO.Out, false, link)
}

// openBrowser starts the user's browser on url without waiting for it.
func openBrowser(getenv func(string) string, url string) error {
	var cmd *exec.Cmd
	switch {
	case getenv("BROWSER") != "":
		cmd = exec.Command(getenv("BROWSER"), url)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", url)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
