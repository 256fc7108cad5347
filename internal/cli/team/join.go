package team

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubsync"
)

// JoinOptions are what `station team join` was asked to do.
type JoinOptions struct {
	// Overrides are --allow-advisory (and for push --allow-yanked).
	Overrides cmdutil.Overrides
	IO        *cmdutil.IOStreams
	Session   func(context.Context) (Service, error)
	Approver  func(yes bool) hubsync.Approver
	Reload    func(ctx context.Context, id string)
	Home      func() (string, error)
	Code      string // "-": read it from standard input
	Yes       bool   // --yes
	JSON      bool
}

// NewCmdJoin returns `station team join`.
func NewCmdJoin(f *cmdutil.Factory, runF func(*JoinOptions) error) *cobra.Command {
	opts := &JoinOptions{IO: &f.IO, Approver: approver(f), Reload: f.ReloadInDaemon, Home: f.HomeDir}
	opts.Session = sessionWith(f, &opts.Overrides)
	c := &cobra.Command{
		Use:   "join CODE|-",
		Short: "Join a team with an invite code and apply its lockfile",
		Long: `Join uses an invite code ("-" reads it from standard input, which keeps it out
of shell history) and applies the team's lockfile like 'station team sync'.

With --json: {"team", "role", "sync"}, sync as one team of 'station team sync
--json'.`,
		Example: "  station team join - < invite.txt\n  station team join --yes - < invite.txt",
		Args:    cmdutil.ExactArgs(1, "CODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Code = args[0]
			if runF != nil {
				return runF(opts)
			}
			return joinRun(cmd.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve what the team's modules ask for without asking")
	cmdutil.AddAdvisoryFlag(c, &opts.Overrides)
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// JoinResult is the team joined and what applying its lockfile did.
type JoinResult struct {
	Team string    `json:"team"`
	Role string    `json:"role"`
	Sync *TeamSync `json:"sync"`
}

// Text implements cmdutil.Texter. The name and role are the hub's answer.
func (r JoinResult) Text(w io.Writer) error {
	fmt.Fprintf(w, "joined team %s as %s\n", cmdutil.TermText(r.Team), cmdutil.TermText(r.Role))
	if r.Sync != nil {
		r.Sync.text(w, "")
	}
	return nil
}

func joinRun(ctx context.Context, opts *JoinOptions) error {
	code := opts.Code
	if code == "-" {
		b, err := io.ReadAll(io.LimitReader(opts.IO.In, 4096))
		if err != nil {
			return fmt.Errorf("team join: read the code: %w", err)
		}
		code = strings.TrimSpace(string(b))
	}
	s, err := opts.Session(ctx)
	if err != nil {
		return err
	}
	t, rep, err := s.Join(ctx, code, opts.Approver(opts.Yes))
	if err != nil {
		return err
	}
	res := JoinResult{Team: t.Name, Role: t.Role}
	if rep != nil {
		home, _ := opts.Home()
		ts := newTeamSync(rep, home)
		res.Sync = &ts
		reload(ctx, opts.Reload, rep)
	}
	if err := cmdutil.Print(opts.IO.Out, opts.JSON, res); err != nil {
		return err
	}
	if res.Sync == nil {
		return nil
	}
	return outcome(*res.Sync)
}
