// Package learn is `station module learn DIR`: it runs a module's sample
// calls in a throwaway station under gates that allow nothing, reads back
// from the audit log everything the gates refused, and proposes the
// minimal requires block that would have allowed exactly that, with a diff
// against the module's manifest.
//
// The learning run is the station's own: the module is installed from a
// staged copy of DIR whose manifest grants every capability the wasm
// imports with nothing allowed, and each call goes through Station.Run
// under the real gates, which record each access with its target — the
// network gate "host:port" (https) or "http://host:port", the
// subprocess gate the program, the filesystem gate the host path. Nothing
// is recorded by a shim of learn's own, so what learn sees is what an
// installed module's gates would decide.
//
//   - network: an empty allowlist. Offline (the default) every request is
//     refused and recorded. Live, each newly refused host is put to
//     Options.Approve once; the calls that were refused an approved host
//     run again with it in the allowlist, until no new host appears or
//     MaxRounds.
//   - filesystem: one empty directory of the run's is mounted read-only,
//     which puts the filesystem gate at the guest's "/": every path the
//     module opens, anywhere, reaches the gate, and every write (and every
//     read) outside that directory is refused and recorded with its host
//     path. Nothing is ever written.
//   - subprocess (if the wasm imports process_run): "subprocess: true" on
//     a search path that is an empty directory, so every program the
//     module names is refused and recorded without running; with
//     AllowPrograms, those programs are granted and run confined, as
//     installed, and every other is refused.
//   - llm (if the wasm imports llm_complete): granted without limits to a
//     completer that records each request and fails it.
//
// Learn never writes DIR and never grants anything: the proposal is text.
package learn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/moduletest"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/yamlx"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// Call is one sample call.
type Call struct {
	Command string
	// Input is the input document; nil sends none.
	Input json.RawMessage
	// File and Line say where the call was written ("" and 0 for one
	// given on the command line).
	File string
	Line int
}

// Options are what to learn from.
type Options struct {
	// Dir is the module directory: module.yaml and the built wasm.
	Dir string
	// Calls are the sample calls; nil means the calls of DIR/tests.yaml.
	Calls []Call
	// Live performs the network requests of hosts Approve approves;
	// otherwise every request is refused.
	Live bool
	// Approve is asked once per host a live run was refused, as the
	// allowlist entry that would allow it ("api.example.com",
	// "http://intranet.example:8080"). Nil refuses every host.
	Approve func(ctx context.Context, rule string) (bool, error)
	// MaxRounds bounds the runs of a live learn; 0 means DefaultMaxRounds.
	MaxRounds int
	// AllowPrograms are programs the module may really start (resolved
	// from the station's default search path, run confined).
	AllowPrograms []string

	// TempDir is where the throwaway station is made; "" means
	// os.TempDir().
	TempDir string
	// Cache is the compilation cache; nil gives the run one in memory.
	Cache wazero.CompilationCache
	// Logger receives the throwaway station's log; nil discards it.
	Logger *slog.Logger
	// Network is the throwaway station's network configuration for live
	// requests (the operator's resolve overrides, extra CA, private
	// ranges; tests point hosts at fixtures on 127.0.0.1).
	Network Network
	// Resolver resolves names for live requests that Network.Resolve does
	// not cover; nil means the system's. Offline nothing is resolved.
	Resolver netgate.Resolver
	// Home is the operator's home directory, how "~/" paths are written;
	// "" means os.UserHomeDir().
	Home string
}

// Network is the part of a station's config.yaml network section a live
// run uses.
type Network struct {
	// Resolve are "host:port=addr:port" overrides (network.resolve).
	Resolve []string
	// ExtraCA is PEM certificates to trust besides the system's
	// (network.extra_ca).
	ExtraCA []byte
	// AllowPrivate are prefixes the module may connect to although they
	// are private (network.allow_private).
	AllowPrivate []netip.Prefix
}

// DefaultMaxRounds bounds the runs of a live learn.
const DefaultMaxRounds = 8

// MaxCalls bounds the sample calls of one learn.
const MaxCalls = moduletest.MaxTests

// maxDecisions bounds the decisions read back for one call.
const maxDecisions = 2000

// Report is what a learn found.
type Report struct {
	Module  string `json:"module"`
	Version string `json:"version"`
	// Mode is "offline" or "live".
	Mode string `json:"mode"`
	// Rounds is how many times the calls ran (live: after approvals).
	Rounds int `json:"rounds"`
	// Calls are the sample calls, as they last ran.
	Calls []CallResult `json:"calls"`
	// Proposal is the minimal requires block; ProposalYAML the same as
	// manifest YAML ("requires:\n  ...").
	Proposal     Requires `json:"proposal"`
	ProposalYAML string   `json:"proposal_yaml"`
	// Declared is what module.yaml asks for.
	Declared Requires `json:"declared"`
	// Unused is what the manifest declares that no call used; Undeclared
	// what the calls used that it does not declare.
	Unused     Requires `json:"unused"`
	Undeclared Requires `json:"undeclared"`
	// Unnamed are accesses no manifest entry can name exactly (a path
	// longer than the audit log keeps, a host the allowlist syntax
	// refuses) or that the manifest rules refuse without an operator
	// grant; they are not in the proposal.
	Unnamed []Unnamed `json:"unnamed"`
	// Hosts are the hosts a live learn asked about, with the answers.
	Hosts []HostAnswer `json:"hosts"`
	// Truncated counts what the proposal leaves out of each list over
	// MaxEntries, by field ("network", "filesystem_writes", ...).
	Truncated map[string]int `json:"truncated,omitempty"`
	// Complete is false when the audit log may have folded decisions
	// into counts (its per-module rate limit), whose targets learn
	// cannot know.
	Complete bool     `json:"complete"`
	Notes    []string `json:"notes"`
}

// CallResult is one sample call and what it did in its last run.
type CallResult struct {
	Command string          `json:"command"`
	Input   json.RawMessage `json:"input,omitempty"`
	Round   int             `json:"round"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Decisions are the sandbox decisions of the call, in order.
	Decisions     []store.AuditRecord `json:"decisions"`
	MoreDecisions bool                `json:"more_decisions,omitempty"`
	// LLMRequests are the requests it made of the station's LLM.
	LLMRequests []LLMRequest `json:"llm_requests"`
	File        string       `json:"file,omitempty"`
	Line        int          `json:"line,omitempty"`
}

// LLMRequest is one llm_complete request a call made.
type LLMRequest struct {
	Messages  int `json:"messages"`
	MaxTokens int `json:"max_tokens"`
}

// HostAnswer is a host a live learn asked about.
type HostAnswer struct {
	Rule     string `json:"rule"`
	Approved bool   `json:"approved"`
}

// Unnamed is an access the proposal cannot hold.
type Unnamed struct {
	Capability string `json:"capability"`
	Target     string `json:"target"`
	Why        string `json:"why"`
}

// imports says which of the gated station imports a module imports: the
// learning run must link each of them (a station refuses a module that
// imports process_run without subprocess) and grants the capability with
// nothing allowed.
type imports struct {
	processRun, llmComplete bool
}

// Learn loads the module and its calls, runs them, and proposes.
func Learn(ctx context.Context, o Options) (*Report, error) {
	raw, man, err := loadManifest(o.Dir)
	if err != nil {
		return nil, err
	}
	calls, err := checkCalls(o, man)
	if err != nil {
		return nil, err
	}
	wasm, err := readWasm(o.Dir, man)
	if err != nil {
		return nil, err
	}
	names, err := host.StationImports(wasm)
	im := imports{processRun: slices.Contains(names, abi.ImportProcessRun), llmComplete: slices.Contains(names, abi.ImportLLMComplete)}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(o.Dir, man.Wasm), err)
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultMaxRounds
	}
	if o.Cache == nil {
		c := wazero.NewCompilationCache()
		defer c.Close(context.WithoutCancel(ctx))
		o.Cache = c
	}
	l := &learner{o: o, man: man, raw: raw, wasm: wasm, im: im}
	rep := &Report{Module: man.ID, Version: man.Version, Mode: "offline", Calls: make([]CallResult, len(calls)),
		Hosts: []HostAnswer{}, Unnamed: []Unnamed{}, Notes: []string{}, Complete: true}
	if o.Live {
		rep.Mode = "live"
	}
	for i, c := range calls {
		rep.Calls[i] = CallResult{Command: c.Command, Input: c.Input, File: c.File, Line: c.Line}
	}
	todo := make([]int, len(calls))
	for i := range calls {
		todo[i] = i
	}
	asked := map[string]bool{}
	var allow []string
	for round := 1; len(todo) > 0; round++ {
		rep.Rounds = round
		if err := l.round(ctx, round, allow, calls, todo, rep); err != nil {
			return nil, err
		}
		if !o.Live || ctx.Err() != nil {
			break
		}
		// Each host a call was refused is asked once; the calls refused
		// an approved host run again.
		approved := map[string]bool{}
		for _, i := range todo {
			for _, rule := range refusedRules(rep.Calls[i].Decisions) {
				if asked[rule] {
					continue
				}
				asked[rule] = true
				ok := false
				if o.Approve != nil {
					if ok, err = o.Approve(ctx, rule); err != nil {
						return nil, err
					}
				}
				rep.Hosts = append(rep.Hosts, HostAnswer{Rule: rule, Approved: ok})
				if ok {
					approved[rule] = true
					allow = append(allow, rule)
				}
			}
		}
		var again []int
		for _, i := range todo {
			for _, rule := range refusedRules(rep.Calls[i].Decisions) {
				if approved[rule] {
					again = append(again, i)
					break
				}
			}
		}
		if len(again) > 0 && round == o.MaxRounds {
			rep.Notes = append(rep.Notes, fmt.Sprintf("stopped after %d rounds: the calls that reach approved hosts may reach more", round))
			break
		}
		todo = again
	}
	propose(l, rep)
	return rep, nil
}

// loadManifest reads DIR/module.yaml, checked as the station checks it.
func loadManifest(dir string) ([]byte, *manifest.Manifest, error) {
	file := filepath.Join(dir, manifest.FileName)
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, fmt.Errorf("load manifest: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, manifest.MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("load manifest: %w", err)
	}
	man, err := manifest.Parse(file, raw)
	if err != nil {
		return nil, nil, err
	}
	return raw, man, nil
}

// checkCalls returns the calls to make: the given ones or tests.yaml's,
// each naming a command of the manifest.
func checkCalls(o Options, man *manifest.Manifest) ([]Call, error) {
	calls := o.Calls
	if calls == nil {
		spec, err := moduletest.LoadSpec(o.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			first := "COMMAND"
			if len(man.Commands) > 0 {
				first = man.Commands[0].Name
			}
			return nil, &NoCallsError{File: filepath.Join(o.Dir, moduletest.SpecFile), Command: first}
		}
		if err != nil {
			return nil, err
		}
		calls = CallsOf(spec)
		if len(calls) == 0 {
			return nil, &NoCallsError{File: spec.File, Command: man.Commands[0].Name, Empty: true}
		}
	}
	if len(calls) > MaxCalls {
		return nil, fmt.Errorf("%d calls are more than the %d one learn makes", len(calls), MaxCalls)
	}
	names := make([]string, len(man.Commands))
	for i, c := range man.Commands {
		names[i] = c.Name
	}
	var errs []error
	for _, c := range calls {
		if _, ok := man.Command(c.Command); ok {
			continue
		}
		msg := yamlx.Unknown("command", c.Command, names) + " of module " + man.ID
		if c.File != "" {
			errs = append(errs, fmt.Errorf("%s:%d: %s", c.File, c.Line, msg))
		} else {
			errs = append(errs, errors.New(msg))
		}
	}
	return calls, errors.Join(errs...)
}

// CallsOf is the calls of a tests.yaml (or a --calls file in its format):
// each test's command and input; what a test wants is not learn's
// concern.
func CallsOf(spec *moduletest.Spec) []Call {
	calls := make([]Call, 0, len(spec.Tests))
	for _, t := range spec.Tests {
		calls = append(calls, Call{Command: t.Command, Input: t.Input, File: spec.File, Line: t.Line})
	}
	return calls
}

// NoCallsError is a learn with no calls to make.
type NoCallsError struct {
	File, Command string
	Empty         bool
}

func (e *NoCallsError) Error() string {
	lead := "no calls to learn from: write " + e.File
	if e.Empty {
		lead = e.File + " has no tests to learn from: add them"
	}
	return fmt.Sprintf("%s, for example\n  tests:\n    - command: %s\n      input: {}\nor pass the calls: station module learn DIR -- %s --input '{}' (or --calls FILE)", lead, e.Command, e.Command)
}

func readWasm(dir string, man *manifest.Manifest) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(man.Wasm))
	if err != nil {
		return nil, fmt.Errorf("%w (build the module first: station module build %s)", err, dir)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, host.DefaultMaxModuleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > host.DefaultMaxModuleBytes {
		return nil, host.ModuleSizeError(man.ID, int64(len(b)), host.DefaultMaxModuleBytes)
	}
	return b, nil
}

// learner is one learn's state across its rounds.
type learner struct {
	o    Options
	man  *manifest.Manifest
	raw  []byte
	wasm []byte
	im   imports // the gated station imports the wasm asks for
	// roots are the throwaway directories of the rounds: paths in them
	// are the learning run's own, never proposed.
	roots []string
}

// round runs the calls todo in a new throwaway station whose network
// allowlist is allow, and stores their results in rep.
func (l *learner) round(ctx context.Context, round int, allow []string, calls []Call, todo []int, rep *Report) (err error) {
	root, err := os.MkdirTemp(l.o.TempDir, "station-module-learn-")
	if err != nil {
		return fmt.Errorf("throwaway station: %w", err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	l.roots = append(l.roots, root)
	defer func() {
		if rerr := os.RemoveAll(root); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove the throwaway station %s: %w", root, rerr))
		}
	}()
	home := filepath.Join(root, "home")
	staged := filepath.Join(root, "module")
	view := filepath.Join(root, "view")
	noPrograms := filepath.Join(root, "no-programs")
	for _, d := range []string{home, staged, view, noPrograms} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("throwaway station: %w", err)
		}
	}
	viewGlob := filepath.ToSlash(view) + "/**"
	if err := l.stage(staged, allow, viewGlob); err != nil {
		return err
	}
	cfg, err := l.config(home, viewGlob, noPrograms)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), cfg, 0o600); err != nil {
		return fmt.Errorf("throwaway station: %w", err)
	}
	logger := l.o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	resolver := l.o.Resolver
	if !l.o.Live {
		resolver = refusingResolver{}
	}
	rec := &llmRecorder{byTrace: map[string][]LLMRequest{}}
	st, err := station.Open(ctx, home, station.Options{Logger: logger, Cache: l.o.Cache, Resolver: resolver, LLM: rec,
		Getenv: func(string) string { return "" }})
	if err != nil {
		return fmt.Errorf("throwaway station: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, st.Close(cctx))
	}()
	if _, err := st.Install(ctx, staged, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		return fmt.Errorf("install %s for learning: %w", l.man.ID, err)
	}
	stored := map[bool]int{}
	for _, i := range todo {
		c := calls[i]
		trace := fmt.Sprintf("station module learn, round %d, call %d", round, i+1)
		out, cerr := st.Run(sandbox.WithTrace(ctx, trace), l.man.ID, c.Command, c.Input)
		r := &rep.Calls[i]
		r.Round, r.Output, r.Error = round, nil, ""
		if cerr != nil {
			r.Error = cerr.Error()
		} else {
			r.Output = out
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if ferr := st.Audit.Flush(rctx); ferr != nil {
			cancel()
			return fmt.Errorf("read the decisions of %s: %w", c.Command, ferr)
		}
		recs, qerr := st.Store.Audit(rctx, store.AuditFilter{Module: l.man.ID, Trace: trace, Limit: maxDecisions + 1})
		cancel()
		if qerr != nil {
			return fmt.Errorf("read the decisions of %s: %w", c.Command, qerr)
		}
		r.MoreDecisions = len(recs) > maxDecisions
		if r.MoreDecisions {
			recs = recs[len(recs)-maxDecisions:]
			rep.Complete = false
		}
		for _, d := range recs {
			stored[d.Allowed]++
			if d.Folded > 0 {
				rep.Complete = false
			}
		}
		r.Decisions = recs
		if r.Decisions == nil {
			r.Decisions = []store.AuditRecord{}
		}
		r.LLMRequests = rec.take(trace)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted during %s: %w", c.Command, ctx.Err())
		}
	}
	// Past this many decisions of one module in a minute, the audit log
	// stores counts instead of decisions (internal/audit): what they
	// were is not known.
	if stored[true] >= auditRecordsPerWindow || stored[false] >= auditRecordsPerWindow {
		rep.Complete = false
	}
	return nil
}

// auditRecordsPerWindow is audit.RecordsPerWindow.
const auditRecordsPerWindow = 250

// stage writes the module to learn from into dir: its wasm, and its
// manifest with requires replaced by the learning run's.
func (l *learner) stage(dir string, allow []string, viewGlob string) error {
	req := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) { req.Content = append(req.Content, scalar(k), v) }
	add("network", mapping("allow", strList(allow)))
	switch {
	case !l.im.processRun:
		add("subprocess", boolNode(false))
	case len(l.o.AllowPrograms) > 0:
		add("subprocess", mapping("allow", strList(l.o.AllowPrograms)))
	default:
		add("subprocess", boolNode(true))
	}
	add("filesystem_writes", strList(nil))
	add("filesystem_reads", strList([]string{viewGlob}))
	add("llm", boolNode(l.im.llmComplete))
	data, err := withRequires(l.raw, req)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, manifest.FileName), data, 0o600); err != nil {
		return err
	}
	wasm := filepath.Join(dir, filepath.FromSlash(l.man.Wasm))
	if err := os.MkdirAll(filepath.Dir(wasm), 0o700); err != nil {
		return err
	}
	return os.WriteFile(wasm, l.wasm, 0o600)
}

// config is the throwaway station's config.yaml.
func (l *learner) config(home, viewGlob, noPrograms string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# written by station module learn for one run\n")
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	n := l.o.Network
	if l.o.Live && (len(n.Resolve) > 0 || len(n.ExtraCA) > 0 || len(n.AllowPrivate) > 0) {
		b.WriteString("network:\n")
		if len(n.ExtraCA) > 0 {
			if err := os.WriteFile(filepath.Join(home, "extra-ca.pem"), n.ExtraCA, 0o600); err != nil {
				return nil, err
			}
			b.WriteString("  extra_ca: extra-ca.pem\n")
		}
		if len(n.AllowPrivate) > 0 {
			b.WriteString("  allow_private:\n")
			for _, p := range n.AllowPrivate {
				fmt.Fprintf(&b, "    - %s\n", q(p.String()))
			}
		}
		if len(n.Resolve) > 0 {
			b.WriteString("  resolve:\n")
			for _, r := range n.Resolve {
				fmt.Fprintf(&b, "    - %s\n", q(r))
			}
		}
	}
	// The run's one mount may be under a directory a manifest needs the
	// operator for (a TMPDIR under /var): this station's operator grants
	// it.
	fmt.Fprintf(&b, "filesystem:\n  grant: [%s]\n", q(viewGlob))
	if l.im.processRun && len(l.o.AllowPrograms) == 0 {
		// Any program, on a search path with none: every program the
		// module names is refused and recorded, and none can start (and
		// would be confined as always if one could).
		fmt.Fprintf(&b, "subprocess:\n  grant_any: true\n  search_path: [%s]\n", q(noPrograms))
	}
	return b.Bytes(), nil
}

// withRequires is the manifest raw with its requires block replaced by
// req (and requires.secrets left out: the learning run reaches no host a
// secret could be bound to).
func withRequires(raw []byte, req *yaml.Node) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	root := yamlx.Root(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, errors.New("module.yaml is not a mapping")
	}
	set := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "requires" {
			root.Content[i+1] = req
			set = true
		}
	}
	if !set {
		root.Content = append(root.Content, scalar("requires"), req)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	enc.Close()
	return out.Bytes(), nil
}

// secretsNode is the requires.secrets of raw, as written, or nil.
func secretsNode(raw []byte) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil {
		return nil
	}
	root := yamlx.Root(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "requires" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		req := root.Content[i+1]
		for j := 0; j+1 < len(req.Content); j += 2 {
			if req.Content[j].Value == "secrets" {
				return req.Content[j+1]
			}
		}
	}
	return nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(b)}
}

func intNode(n int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(n)}
}

func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, scalar(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return m
}

// strList is a flow list of strings, each quoted when YAML needs it.
func strList(ss []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range ss {
		v := scalar(s)
		if strings.HasPrefix(s, "*") {
			v.Style = yaml.DoubleQuotedStyle
		}
		n.Content = append(n.Content, v)
	}
	return n
}

// llmRecorder is the throwaway station's LLM: it records each request by
// the call's trace and answers none.
type llmRecorder struct {
	mu      sync.Mutex
	byTrace map[string][]LLMRequest
}

// errNoLLM is what a module's llm_complete gets in a learning run.
var errNoLLM = errors.New("station module learn answers no LLM request: the request was recorded")

func (r *llmRecorder) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	trace := sandbox.CallFrom(ctx).TraceName()
	r.mu.Lock()
	if len(r.byTrace[trace]) < maxDecisions {
		r.byTrace[trace] = append(r.byTrace[trace], LLMRequest{Messages: len(req.Messages), MaxTokens: req.MaxTokens})
	}
	r.mu.Unlock()
	return nil, errNoLLM
}

func (r *llmRecorder) take(trace string) []LLMRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.byTrace[trace]
	delete(r.byTrace, trace)
	if out == nil {
		out = []LLMRequest{}
	}
	return out
}

// refusingResolver resolves nothing: an offline run reaches no network.
type refusingResolver struct{}

func (refusingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, fmt.Errorf("%s: station module learn --offline resolves no name", host)
}
