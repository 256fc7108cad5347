package demo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/shellquote"
	"github.com/station-dev/station/internal/store"
)

// A Call is one call of a module's command the tour makes.
type Call struct {
	Module, Command, Input string
	// Deny is whether the tour expects the sandbox to deny it.
	Deny bool
	// Output is the command's result, Err its error.
	Output []byte
	Err    error
}

// Calls are the tour's calls: a greeting (no permissions), an invoice
// through the stand-in for api.stripe.com (in the allowlist), and a fetch
// of a host outside the allowlist, which the network gate denies.
var Calls = []Call{
	{Module: "station/hello", Command: "greet", Input: `{"name":"Ada"}`},
	{Module: "dave/stripe-invoicing", Command: "create-invoice", Input: `{"customer":"cus_demo"}`},
	{Module: "dave/stripe-invoicing", Command: "fetch", Input: `{"url":"https://evil.example/steal"}`, Deny: true},
}

// Result is what the tour did.
type Result struct {
	Home  string
	Steps []Step
	Calls []Call
	// Audit is the station's audit log after the calls.
	Audit []store.AuditRecord
	// APIRequests is how many requests reached the stand-in APIs: the
	// allowed calls' (a denied call never connects).
	APIRequests int
	Took        time.Duration
}

// Run is the one-shot tour: it sets the demo up in opts.Home (Start), makes
// the calls in Calls, reads the audit log and closes the demo. A call that
// fails when it should succeed, or that succeeds or fails otherwise than by
// the sandbox's denial when it should be denied, is an error; the result
// then holds what ran until then.
func Run(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	d, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	r := &Result{Home: d.Home, Steps: d.Steps}
	err = d.tour(ctx, r)
	r.Took = time.Since(start)
	return r, errors.Join(err, d.Close(ctx))
}

func (d *Demo) tour(ctx context.Context, r *Result) error {
	before := d.APIs.Requests()
	for _, c := range Calls {
		c.Output, c.Err = d.Station.Run(ctx, c.Module, c.Command, []byte(c.Input))
		r.Calls = append(r.Calls, c)
		var v *sandbox.Violation
		switch {
		case !c.Deny && c.Err != nil:
			return c.Err
		case c.Deny && (!errors.As(c.Err, &v) || v.Capability != sandbox.Network):
			return fmt.Errorf("demo: expected the network gate to deny %s %s, got %v", c.Module, c.Command, c.Err)
		}
	}
	if err := d.Station.Audit.Flush(ctx); err != nil {
		return err
	}
	recs, err := d.Station.Store.Audit(ctx, store.AuditFilter{})
	if err != nil {
		return err
	}
	r.Audit = recs
	r.APIRequests = d.APIs.Requests() - before
	return nil
}

// A Command is a command line to try against the demo in another terminal.
type Command struct {
	Line string // for a POSIX shell
	Note string // what it shows, "" when the line speaks for itself
}

// Try returns the commands to try against the running demo from another
// terminal: a call that succeeds, one the sandbox denies (whose exit code
// the line prints), the example workflow and the denials in the audit log.
// They run Binary; without one, go run ./cmd/station from the checkout, and
// the denial's note says that go run reports the 3 as "exit status 3" and
// itself exits 1.
func (d *Demo) Try() []Command {
	station := "station"
	workflow := filepath.Join(d.Root, "examples", "workflows", "invoice.yaml")
	cmds := []Command{{Line: "export STATION_HOME=" + shellquote.Quote(d.Home) + " PATH=" + shellquote.Quote(filepath.Dir(d.Binary)) + ":$PATH",
		Note: "bin/station is a copy of this station binary"}}
	denied := "denied by the network gate: exit code 3"
	if d.Binary == "" {
		station = "go run ./cmd/station"
		workflow = "examples/workflows/invoice.yaml"
		cmds = []Command{{Line: "cd " + shellquote.Quote(d.Root)}, {Line: "export STATION_HOME=" + shellquote.Quote(d.Home)}}
		denied = `denied by the network gate: station exits 3, which go run reports as "exit status 3" (go run itself exits 1)`
	}
	return append(cmds,
		Command{Line: station + ` run station/hello greet --input '{"name":"Ada"}'`},
		Command{Line: station + ` run dave/stripe-invoicing fetch --input '{"url":"https://evil.example/"}'; echo "exit code $?"`, Note: denied},
		Command{Line: station + " workflow run " + shellquote.Quote(workflow) + " --input customer=cus_demo"},
		Command{Line: station + " secret list", Note: "the example's API keys: where each may go; their values are never shown"},
		Command{Line: station + " audit --denied"},
	)
}
