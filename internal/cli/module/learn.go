package module

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/learn"
	"github.com/station-dev/station/internal/moduletest"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

// LearnOptions are what `station module learn` was asked to do.
type LearnOptions struct {
	IO            *cmdutil.IOStreams
	Build         func(ctx context.Context, dir, out string) error
	StartProgress func(label string) *cmdutil.Progress
	Logger        func() *slog.Logger
	Confirm       func(question string) bool
	Cache         wazero.CompilationCache
	TempDir       string
	// Network and Resolver are the throwaway station's for --live (tests
	// point hosts at fixtures on 127.0.0.1).
	Network  learn.Network
	Resolver netgate.Resolver
	// OperatorNetwork reads your station's network settings (resolve,
	// extra_ca, allow_private), which --live uses when Network is empty.
	OperatorNetwork func() (learn.Network, error)

	Dir          string
	Calls        []string // the arguments after --: COMMAND [--input JSON] [-- COMMAND ...]
	CallsFile    string   // --calls
	Live         bool     // --live
	Offline      bool     // --offline (the default)
	YesHosts     []string // --yes-host
	AllowProgram []string // --allow-program
	Write        string   // --write
	NoBuild      bool
	JSON         bool
}

// NewCmdLearn returns `station module learn`.
func NewCmdLearn(f *cmdutil.Factory, runF func(*LearnOptions) error) *cobra.Command {
	opts := &LearnOptions{IO: &f.IO, Build: func(ctx context.Context, dir, out string) error {
		return wasmbuild.BuildWith(ctx, dir, out, buildOptions(f))
	}, StartProgress: f.StartProgress, Cache: f.IO.Cache, Confirm: f.Confirm,
		Logger: func() *slog.Logger { return f.Logger("") },
		OperatorNetwork: func() (learn.Network, error) {
			home, err := f.HomeDir()
			if err != nil {
				return learn.Network{}, err
			}
			return operatorNetwork(home)
		}}
	c := &cobra.Command{
		Use:   "learn DIR [-- COMMAND [--input JSON] [-- COMMAND ...]]",
		Short: "Run a module's sample calls under gates that allow nothing, and propose the minimal requires block",
		Long: `Learn builds the module in DIR (--no-build uses the wasm that is there),
installs it into a throwaway station in a new temporary directory with
gates that allow nothing, makes the sample calls, and prints the requires
block that would have allowed exactly what the calls did — network hosts,
programs, file writes and reads, the station's LLM — and a diff against
DIR/module.yaml: what it declares that no call used, and what the calls
used that it does not declare. The throwaway station is removed again,
also on Ctrl-C. Nothing learned is granted: module.yaml is never changed
(--write FILE writes the proposal to another file).

The calls are those after --, each COMMAND [--input JSON] (inline JSON,
@FILE or - for standard input), several separated by --; or those of
--calls FILE, a file in the tests.yaml format (each test's command and
input; want and fixtures are not used); by default those of DIR/tests.yaml.

Every access is made through the station's real gates, which refuse it
and record its target in the throwaway station's audit log:

  network     --offline (the default): every request is refused.
              --live: each host a call was refused is asked once on the
              terminal (y/N; --yes-host HOST answers yes, and without a
              terminal every other host is refused); the calls refused an
              approved host run again with it allowed, so they get further
              (requests they made before are made again).
  files       every write and read, anywhere, is refused: nothing is written.
              A path is proposed as module.yaml writes it (~/... inside
              your home).
  programs    every program is refused without running, unless
              --allow-program NAME (it then runs, confined, as installed).
  llm         every request is recorded and fails.

A call that goes on after a reply, a write or a program it was refused may
do more than learn sees: the proposal is what the calls reached, a start
for module.yaml, not a proof. requires.secrets cannot be learned; module.yaml's
are carried over unchanged.`,
		Example: `  station module learn examples/stripe-invoicing -- create-invoice --input '{"customer":"cus_42"}'
  station module learn . --calls samples.yaml --json | jq .undeclared
  station module learn . --live --yes-host api.example.com -- fetch -i '{"url":"https://api.example.com/"}'
  station module learn . --write proposed-requires.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			at := cmd.ArgsLenAtDash()
			if at < 0 {
				at = len(args)
			}
			if at != 1 {
				return cmdutil.Usagef("want DIR, then the calls after --: station module learn DIR -- COMMAND [--input JSON]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Calls = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return learnRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.CallsFile, "calls", "", "make the calls of FILE (the tests.yaml format) instead of DIR/tests.yaml's")
	c.Flags().BoolVar(&opts.Offline, "offline", false, "refuse every network request (the default)")
	c.Flags().BoolVar(&opts.Live, "live", false, "perform the requests of the hosts you approve, asked once each")
	c.Flags().StringArrayVar(&opts.YesHosts, "yes-host", nil, "with --live, approve HOST without asking (repeatable; an allowlist entry: host, host:port, http://host)")
	c.Flags().StringArrayVar(&opts.AllowProgram, "allow-program", nil, "let the module really run program NAME, confined (repeatable)")
	c.Flags().StringVar(&opts.Write, "write", "", "also write the proposed requires block to FILE (never module.yaml)")
	c.Flags().BoolVar(&opts.NoBuild, "no-build", false, "learn from the wasm file in DIR as it is, without building it")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// parseCalls reads the calls after --: COMMAND [--input JSON], separated
// by --.
func parseCalls(stdin io.Reader, args []string) ([]learn.Call, error) {
	var calls []learn.Call
	stdinUsed := false
	for len(args) > 0 {
		end := len(args)
		for i, a := range args {
			if a == "--" {
				end = i
				break
			}
		}
		group := args[:end]
		if end < len(args) {
			args = args[end+1:]
		} else {
			args = nil
		}
		if len(group) == 0 {
			continue
		}
		c := learn.Call{Command: group[0]}
		if strings.HasPrefix(c.Command, "-") {
			return nil, cmdutil.Usagef("call %d: want COMMAND [--input JSON], not %s (the flags of learn go before --)", len(calls)+1, cmdutil.TermText(c.Command))
		}
		rest := group[1:]
		for len(rest) > 0 {
			var spec string
			switch a := rest[0]; {
			case a == "--input" || a == "-i":
				if len(rest) < 2 {
					return nil, cmdutil.Usagef("call %s: %s needs a value: inline JSON, @FILE or -", cmdutil.TermText(c.Command), a)
				}
				spec, rest = rest[1], rest[2:]
			case strings.HasPrefix(a, "--input="):
				spec, rest = strings.TrimPrefix(a, "--input="), rest[1:]
			default:
				return nil, cmdutil.Usagef("call %s: unexpected %s; want COMMAND [--input JSON], calls separated by --", cmdutil.TermText(c.Command), cmdutil.TermText(a))
			}
			if c.Input != nil {
				return nil, cmdutil.Usagef("call %s: --input given twice", cmdutil.TermText(c.Command))
			}
			if spec == "-" {
				if stdinUsed {
					return nil, cmdutil.Usagef("only one call can read its input from standard input")
				}
				stdinUsed = true
			}
			in, err := cmdutil.ReadInput(stdin, spec)
			if err != nil {
				return nil, err
			}
			c.Input = in
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func learnRun(ctx context.Context, opts *LearnOptions) error {
	if opts.Live && opts.Offline {
		return cmdutil.Usagef("--live and --offline exclude each other")
	}
	if len(opts.YesHosts) > 0 && !opts.Live {
		return cmdutil.Usagef("--yes-host approves a host for --live; without --live every request is refused")
	}
	yes := map[string]bool{}
	for _, h := range opts.YesHosts {
		r, err := netgate.ParseRule(h)
		if err != nil {
			return cmdutil.Usagef("--yes-host: %v", err)
		}
		yes[r.String()] = true
	}
	calls, err := parseCalls(opts.IO.In, opts.Calls)
	if err != nil {
		return err
	}
	if opts.CallsFile != "" {
		if len(calls) > 0 {
			return cmdutil.Usagef("--calls and calls after -- exclude each other")
		}
		if calls, err = readCallsFile(opts.CallsFile); err != nil {
			return err
		}
	}
	if opts.Write != "" {
		if err := notTheManifest(opts.Dir, opts.Write); err != nil {
			return err
		}
	}
	man, err := manifest.Load(opts.Dir)
	if err != nil {
		return err
	}
	rep := LearnReport{}
	if !opts.NoBuild {
		if rep.Build, err = buildFor(ctx, opts.Dir, man, opts.Build, opts.StartProgress); err != nil {
			return err
		}
	}
	if opts.Live && opts.OperatorNetwork != nil && len(opts.Network.Resolve) == 0 && opts.Network.ExtraCA == nil && opts.Network.AllowPrivate == nil {
		// A live request goes where your station would send it.
		if opts.Network, err = opts.OperatorNetwork(); err != nil {
			return err
		}
	}
	var refused []string
	lo := learn.Options{Dir: opts.Dir, Calls: calls, Live: opts.Live, AllowPrograms: opts.AllowProgram,
		TempDir: opts.TempDir, Cache: opts.Cache, Logger: opts.Logger(), Network: opts.Network, Resolver: opts.Resolver,
		Approve: func(_ context.Context, rule string) (bool, error) {
			switch {
			case yes[rule]:
				return true, nil
			case !opts.IO.IsTerminal:
				refused = append(refused, rule)
				return false, nil
			}
			return opts.Confirm(fmt.Sprintf("Let %s reach %s while it learns (the request is really made)?", cmdutil.TermText(man.ID), cmdutil.TermText(rule))), nil
		}}
	p := opts.StartProgress("learning " + man.ID + "@" + man.Version + " in a throwaway station")
	r, err := learn.Learn(ctx, lo)
	p.Stop()
	if errors.As(err, new(*learn.NoCallsError)) {
		return cmdutil.UsageError{Err: err}
	}
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		r.Notes = append(r.Notes, "standard input is not a terminal: refused "+strings.Join(refused, ", ")+" without asking (pass --yes-host HOST to approve one)")
	}
	rep.Report = r
	for _, c := range r.Calls {
		rep.Calls = append(rep.Calls, newLearnedCall(c))
	}
	if opts.Write != "" {
		if err := os.WriteFile(opts.Write, []byte(learnFileHeader+r.ProposalYAML), 0o644); err != nil {
			return err
		}
		rep.Written = opts.Write
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, rep)
}

const learnFileHeader = "# proposed by station module learn: the requires block that would have allowed\n# exactly what the sample calls did. Review it before it goes into module.yaml.\n"

// readCallsFile reads a --calls file, strictly, in the tests.yaml format.
func readCallsFile(name string) ([]learn.Call, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--calls: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, moduletest.MaxSpecSize+1))
	if err != nil {
		return nil, fmt.Errorf("--calls: %w", err)
	}
	spec, err := moduletest.ParseSpec(name, data)
	if err != nil {
		return nil, err
	}
	calls := learn.CallsOf(spec)
	if len(calls) == 0 {
		return nil, cmdutil.Usagef("--calls %s has no calls: write tests: [{command: NAME, input: {...}}]", cmdutil.TermText(name))
	}
	return calls, nil
}

// notTheManifest refuses a --write that would replace DIR/module.yaml:
// nothing learned is granted without the author's edit.
func notTheManifest(dir, file string) error {
	a, err := os.Stat(filepath.Join(dir, manifest.FileName))
	if err != nil {
		return nil
	}
	b, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil && os.SameFile(a, b) {
		return cmdutil.Usagef("--write %s is the module's manifest: learn never changes it; write the proposal elsewhere and edit module.yaml yourself", cmdutil.TermText(file))
	}
	return nil
}

// LearnReport is what --json prints.
type LearnReport struct {
	*learn.Report
	Build   *TestedBuild  `json:"build,omitempty"`
	Calls   []LearnedCall `json:"calls"`
	Written string        `json:"written,omitempty"`
}

// LearnedCall is one sample call, with the module's documents kept safe
// for JSON.
type LearnedCall struct {
	Command       string                 `json:"command"`
	Input         cmdutil.ModuleDocument `json:"input,omitempty"`
	Round         int                    `json:"round"`
	Result        cmdutil.ModuleDocument `json:"result,omitempty"`
	Error         string                 `json:"error,omitempty"`
	Decisions     []TestDecision         `json:"decisions"`
	MoreDecisions bool                   `json:"more_decisions,omitempty"`
	LLMRequests   []learn.LLMRequest     `json:"llm_requests"`
}

func newLearnedCall(c learn.CallResult) LearnedCall {
	lc := LearnedCall{Command: c.Command, Input: cmdutil.ModuleDocument(c.Input), Round: c.Round, Result: cmdutil.ModuleDocument(c.Output),
		Error: c.Error, MoreDecisions: c.MoreDecisions, LLMRequests: c.LLMRequests, Decisions: []TestDecision{}}
	for _, d := range c.Decisions {
		lc.Decisions = append(lc.Decisions, TestDecision{Capability: string(d.Capability), Target: d.Target, Allowed: d.Allowed, Reason: d.Reason, Folded: d.Folded})
	}
	return lc
}

// Text implements cmdutil.Texter.
func (r LearnReport) Text(w io.Writer) error {
	var b strings.Builder
	if r.Build != nil {
		fmt.Fprintf(&b, "built %s in %s\n", cmdutil.TermText(r.Build.Wasm), r.Build.Took)
	}
	mode := "offline: every network request refused"
	if r.Mode == "live" {
		mode = "live: requests to the hosts you approved performed"
	}
	fmt.Fprintf(&b, "learned %s %s from %s in a throwaway station (%s; %s)\n\n", cmdutil.TermText(r.Module), cmdutil.TermText(r.Version),
		plural(len(r.Calls), "call"), mode, plural(r.Rounds, "round"))
	for _, c := range r.Calls {
		title := c.Command
		if c.Input != nil {
			title += " " + moduletest.Cut(compactJSON(c.Input), maxShown)
		}
		fmt.Fprintf(&b, "call %s\n", cmdutil.TermText(title))
		if c.Error != "" {
			fmt.Fprintf(&b, "  error   %s\n", cmdutil.TermBlock(moduletest.Cut(c.Error, 4*maxShown), indent))
		} else {
			fmt.Fprintf(&b, "  result  %s\n", cmdutil.TermText(moduletest.Cut(compactJSON(c.Result), maxShown)))
		}
		lines(&b, len(c.Decisions), "decisions", func(i int) string {
			d := c.Decisions[i]
			verb := "allowed"
			if !d.Allowed {
				verb = "denied "
			}
			return verb + " " + d.Capability + " " + d.Target
		})
		if n := len(c.LLMRequests); n > 0 {
			fmt.Fprintf(&b, "  llm     %s recorded (answered with an error)\n", plural(n, "request"))
		}
	}
	b.WriteString("\nproposed (nothing is granted; module.yaml is unchanged):\n\n")
	for _, line := range strings.Split(strings.TrimRight(r.ProposalYAML, "\n"), "\n") {
		fmt.Fprintf(&b, "  %s\n", cmdutil.TermText(line))
	}
	b.WriteString("\nagainst module.yaml:\n")
	und, unu := requiresLines(r.Undeclared), requiresLines(r.Unused)
	if len(und)+len(unu) == 0 {
		b.WriteString("  it declares exactly what the calls used\n")
	}
	lines(&b, len(und), "entries", func(i int) string { return "used but not declared:   " + und[i] })
	lines(&b, len(unu), "entries", func(i int) string { return "declared but never used: " + unu[i] })
	if len(r.Unnamed) > 0 {
		b.WriteString("\nnot in the proposal (no manifest entry names them):\n")
		lines(&b, len(r.Unnamed), "accesses", func(i int) string {
			u := r.Unnamed[i]
			return u.Capability + " " + u.Target + " — " + u.Why
		})
	}
	if len(r.Hosts) > 0 {
		b.WriteString("\nhosts asked:\n")
		lines(&b, len(r.Hosts), "hosts", func(i int) string {
			if r.Hosts[i].Approved {
				return "approved " + r.Hosts[i].Rule
			}
			return "refused  " + r.Hosts[i].Rule
		})
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "note: %s\n", cmdutil.TermText(n))
		}
	}
	if r.Written != "" {
		fmt.Fprintf(&b, "\nwrote the proposal to %s\n", cmdutil.TermText(r.Written))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// requiresLines says what a partial requires block holds, one entry a line.
func requiresLines(q learn.Requires) []string {
	var out []string
	for _, e := range q.Network {
		out = append(out, "network "+e)
	}
	if q.SubprocessAny {
		out = append(out, "subprocess: true (any program)")
	}
	for _, e := range q.Programs {
		out = append(out, "program "+e)
	}
	for _, e := range q.Env {
		out = append(out, "subprocess env "+e)
	}
	for _, e := range q.Writes {
		out = append(out, "write "+e)
	}
	for _, e := range q.Reads {
		out = append(out, "read "+e)
	}
	if l := q.LLM; l != nil {
		s := "llm"
		if l.MaxTokensPerCall > 0 {
			s += fmt.Sprintf(" (max_tokens_per_call %d)", l.MaxTokensPerCall)
		}
		out = append(out, s)
	}
	return out
}

// operatorNetwork is the network part of the station config in home, in
// the form a throwaway station takes: a live learn's requests go where the
// operator's station sends them (a company proxy's address, an internal
// CA), and nowhere else.
func operatorNetwork(home string) (learn.Network, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return learn.Network{}, err
	}
	var n learn.Network
	for _, r := range cfg.Network.Resolve {
		to := r.To.String()
		if r.To.Port() == 0 {
			to = r.To.Addr().String()
		}
		n.Resolve = append(n.Resolve, net.JoinHostPort(r.Host, strconv.Itoa(r.Port))+"="+to)
	}
	if f := cfg.Network.ExtraCA; f != "" {
		if !filepath.IsAbs(f) {
			f = filepath.Join(home, f)
		}
		if n.ExtraCA, err = os.ReadFile(f); err != nil {
			return learn.Network{}, fmt.Errorf("network.extra_ca: %w", err)
		}
	}
	n.AllowPrivate = cfg.AllowPrivate()
	return n, nil
}
