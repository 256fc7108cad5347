// Package moduletest runs a module's tests the way a user's station would
// run the module, before any user does: `station module test DIR`.
//
// Load reads and checks everything first — the manifest, DIR/tests.yaml
// (or one ad hoc call) and the fixture files — so that a mistake in any of
// them is an error with its file and line before anything runs. Open then
// makes a throwaway station in a fresh temporary home, with fixture
// servers on 127.0.0.1 standing in for the hosts the module reaches: each
// fixture host gets an HTTPS server with a certificate signed by a CA made
// for the run (the station trusts it through network.extra_ca) and, where
// the allowlist grants plain http, an HTTP server; config.yaml's
// network.resolve sends the host's ports there. Every other host the
// allowlist names goes to a server that answers 502 "no fixture for HOST",
// and the station resolves no other name: nothing a test does reaches the
// network. The module is installed from DIR with its manifest's grants
// approved, and each Run is one call through the station's one entry
// point, under the module's gates, with the decisions they made read back
// from the audit log by the call's trace. Close removes the home.
package moduletest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/yamlx"
	"github.com/station-dev/station/manifest"
)

// Request is what to test.
type Request struct {
	// Dir is the module directory.
	Dir string
	// Fixtures are --fixture HOST=FILE: any file the user can read. One
	// for a host tests.yaml names too replaces that one.
	Fixtures []string
	// Command, if set, is one ad hoc call in place of tests.yaml's tests
	// (whose fixtures still apply), with Input (nil: no input).
	Command string
	Input   json.RawMessage
}

// Suite is a module's tests, read and checked: nothing has run yet.
type Suite struct {
	Dir      string
	Manifest *manifest.Manifest
	// Spec is DIR/tests.yaml; nil when there is none.
	Spec     *Spec
	Tests    []Test
	Fixtures []*Fixture
}

// ErrNoTests is the error of a module directory without tests.yaml (or
// with one that has no tests) and no ad hoc command.
var ErrNoTests = errors.New("no tests to run")

// noTestsError says what to write.
type noTestsError struct {
	dir, file, command string
	empty              bool
}

func (e *noTestsError) Error() string {
	lead := "no tests to run: write " + e.file
	if e.empty {
		lead = e.file + " has no tests: add them"
	}
	return fmt.Sprintf("%s, for example\n  tests:\n    - command: %s\n      input: {}\nor pass --command NAME [--input JSON]", lead, e.command)
}

func (e *noTestsError) Is(target error) bool { return target == ErrNoTests }

// Load reads the module's manifest, its tests (tests.yaml, or the ad hoc
// call) and its fixtures, and checks them: every test names a command of
// the manifest, every fixture file is readable and well formed. A
// fixture path in tests.yaml must stay inside Dir (the file may come from
// anyone); one on the command line may be any file.
func Load(req Request) (*Suite, error) {
	man, err := manifest.Load(req.Dir)
	if err != nil {
		return nil, err
	}
	s := &Suite{Dir: req.Dir, Manifest: man}
	s.Spec, err = LoadSpec(req.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		s.Spec, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	specFile := filepath.Join(req.Dir, SpecFile)
	names := make([]string, len(man.Commands))
	for i, c := range man.Commands {
		names[i] = c.Name
	}
	switch {
	case req.Command != "":
		if _, ok := man.Command(req.Command); !ok {
			return nil, fmt.Errorf("--command: module %s has no %s", man.ID, yamlx.Unknown("command", req.Command, names))
		}
		s.Tests = []Test{{Command: req.Command, Input: req.Input}}
	case s.Spec == nil || len(s.Spec.Tests) == 0:
		first := "COMMAND"
		if len(names) > 0 {
			first = names[0]
		}
		return nil, &noTestsError{dir: req.Dir, file: specFile, command: first, empty: s.Spec != nil}
	default:
		var errs []error
		for i, t := range s.Spec.Tests {
			if _, ok := man.Command(t.Command); !ok {
				errs = append(errs, &Error{File: s.Spec.File, Line: t.Line, Field: fmt.Sprintf("tests[%d].command", i),
					Msg: yamlx.Unknown("command", t.Command, names) + " of module " + man.ID})
			}
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		s.Tests = s.Spec.Tests
	}
	if s.Fixtures, err = loadFixtures(req, s.Spec); err != nil {
		return nil, err
	}
	return s, nil
}

// loadFixtures reads the fixtures of the command line and of tests.yaml
// (those the command line does not replace), reporting every bad one.
func loadFixtures(req Request, spec *Spec) ([]*Fixture, error) {
	var errs []error
	var out []*Fixture
	flagged := map[string]bool{}
	for _, arg := range req.Fixtures {
		h, file, ok := strings.Cut(arg, "=")
		if !ok || file == "" {
			errs = append(errs, fmt.Errorf("--fixture %s: want HOST=FILE, e.g. api.example.com=testdata/reply.json", yamlx.Printable(arg)))
			continue
		}
		host, err := ParseHost(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("--fixture %s: %s %w", yamlx.Printable(arg), yamlx.Quote(h), err))
			continue
		}
		if flagged[host] {
			errs = append(errs, fmt.Errorf("--fixture %s: %s has a fixture already", yamlx.Printable(arg), displayHost(host)))
			continue
		}
		flagged[host] = true
		fx, err := LoadFixture(nil, host, file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fx.From = "--fixture"
		out = append(out, fx)
	}
	if spec != nil && len(spec.Fixtures) > 0 {
		root, err := os.OpenRoot(req.Dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		for _, ref := range spec.Fixtures {
			if flagged[ref.Host] {
				continue
			}
			fx, err := LoadFixture(root, ref.Host, ref.File)
			var inFile *Error
			switch {
			case errors.As(err, &inFile):
				errs = append(errs, err) // it names its file and line
				continue
			case err != nil:
				errs = append(errs, fmt.Errorf("%s:%d: %w", spec.File, ref.Line, err))
				continue
			}
			fx.From = SpecFile
			out = append(out, fx)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, nil
}

// OpenOptions configure the throwaway station.
type OpenOptions struct {
	// TempDir is where its home is made; "" means os.TempDir().
	TempDir string
	// Cache, if set, is the compilation cache it uses; nil gives it one in
	// memory, for the run.
	Cache wazero.CompilationCache
	// Logger receives the station's own log (the gates a module is loaded
	// with, warnings); what the module logs during a call, and the
	// station's warnings about the call, go to the call's Result instead.
	// Nil discards it.
	Logger *slog.Logger
}

// Session is a throwaway station with the module installed and its
// fixtures serving. Run calls one at a time; Close removes everything.
type Session struct {
	// Plan is what was installed and the permissions approved.
	Plan station.Plan
	// Mappings say where each granted host and port goes.
	Mappings []Mapping
	// Notes and Warnings are for the author: hosts without a fixture,
	// fixtures the module can never reach, what a grant means here.
	Notes, Warnings []string
	// Home is the throwaway station's home, removed by Close.
	Home string

	st       *station.Station
	net      *network
	sink     *sink
	ownCache wazero.CompilationCache
	calls    int
	closed   sync.Once
	closeErr error
}

// Open starts the fixture servers, makes the throwaway station's home and
// configuration, opens it and installs the module from the suite's
// directory with its manifest's grants approved. Everything it made is
// removed again if it fails.
func (s *Suite) Open(ctx context.Context, opts OpenOptions) (_ *Session, err error) {
	sess := &Session{sink: &sink{}}
	defer func() {
		if err != nil {
			sess.Close()
		}
	}()
	if sess.net, err = startNetwork(s.Manifest.Requires.Network.Allow, s.Fixtures); err != nil {
		return nil, err
	}
	sess.Mappings = sess.net.mappings
	sess.Notes, sess.Warnings = sess.net.notes, sess.net.warnings
	if sess.Home, err = os.MkdirTemp(opts.TempDir, "station-module-test-"); err != nil {
		return nil, fmt.Errorf("throwaway station: %w", err)
	}
	if err := os.WriteFile(filepath.Join(sess.Home, "fixture-ca.pem"), sess.net.ca.PEM(), 0o600); err != nil {
		return nil, fmt.Errorf("throwaway station: %w", err)
	}
	if err := os.WriteFile(filepath.Join(sess.Home, "config.yaml"), configYAML(sess.net.mappings), 0o600); err != nil {
		return nil, fmt.Errorf("throwaway station: %w", err)
	}
	cache := opts.Cache
	if cache == nil {
		cache = wazero.NewCompilationCache()
		sess.ownCache = cache
	}
	next := slog.Handler(slog.DiscardHandler)
	if opts.Logger != nil {
		next = opts.Logger.Handler()
	}
	sess.st, err = station.Open(ctx, sess.Home, station.Options{
		Logger:   slog.New(&captureHandler{sink: sess.sink, next: next}),
		Cache:    cache,
		Resolver: refusingResolver{},
		// The station's own settings come from nowhere: no LLM provider,
		// no key from this environment.
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		return nil, fmt.Errorf("throwaway station: %w", err)
	}
	plan, err := sess.st.Install(ctx, s.Dir, func(station.Plan) (bool, error) { return true, nil })
	if err != nil {
		return nil, err
	}
	sess.Plan = *plan
	p := plan.Permissions
	if len(p.FilesystemWrites) > 0 {
		sess.Warnings = append(sess.Warnings, "the module's writes go to the real files its grants name ("+strings.Join(p.FilesystemWrites, ", ")+"): a test writes there as the module would for a user")
	}
	if p.LLM != nil {
		sess.Notes = append(sess.Notes, "the test station has no LLM provider: the module's llm calls fail")
	}
	// Secrets get stand-in values, which the gate puts in as it would the
	// operator's: a fixture sees TestSecretValue(name), only on the hosts
	// the secret is bound to.
	for _, sec := range s.Manifest.Requires.Secrets {
		if err := sess.st.SetSecret(ctx, s.Manifest.ID, sec.Name, []byte(TestSecretValue(sec.Name))); err != nil {
			return nil, fmt.Errorf("throwaway station: %w", err)
		}
		sess.Notes = append(sess.Notes, fmt.Sprintf("secret %s has the test value %s, sent only to %s", sec.Name, TestSecretValue(sec.Name), strings.Join(sec.Hosts, ", ")))
	}
	return sess, nil
}

// TestSecretValue is the value a throwaway station stores for a module's
// secret name: a fixture that checks a credential expects it.
func TestSecretValue(name string) string { return "test-value-of-" + name }

// configYAML is the throwaway station's config.yaml: the fixture servers
// in place of the hosts, the run's CA, and loopback granted (only the
// mapped names can lead there: no other name resolves).
func configYAML(ms []Mapping) []byte {
	var b bytes.Buffer
	b.WriteString("# written by station module test for one run\nnetwork:\n  extra_ca: fixture-ca.pem\n  allow_private: [127.0.0.1/32]\n")
	if len(ms) > 0 {
		b.WriteString("  resolve:\n")
	}
	for _, m := range ms {
		entry := hostPort(m.Host, m.Port) + "=" + m.To.String()
		q, _ := json.Marshal(entry)
		fmt.Fprintf(&b, "    - %s\n", q)
	}
	return b.Bytes()
}

// Result is what one test did.
type Result struct {
	Test Test
	// Name is the test's title (Test.Title).
	Name string
	// OK says whether it passed; Failure why not.
	OK      bool
	Failure string
	// Output is the call's result; Err its error.
	Output json.RawMessage
	Err    error
	// Decisions are every sandbox decision the call made, in order, from
	// the audit log.
	Decisions []store.AuditRecord
	// MoreDecisions is set when the call made more than Decisions holds.
	MoreDecisions bool
	// Logs are the module's log lines, its stdout and stderr, and the
	// station's warnings about the call.
	Logs []LogLine
	// Served are the requests the fixture servers answered during the
	// call.
	Served []Served
	Took   time.Duration
}

// LogLine is one line logged during a call.
type LogLine struct {
	// Source is "log" (the module's log import), "stdout/stderr", or
	// "station".
	Source string `json:"source"`
	Level  string `json:"level"`
	Text   string `json:"text"`
}

// maxDecisions bounds the decisions read back for one call (the audit
// log's rate limit stores at most 600 records a minute of one module).
const maxDecisions = 2000

// Run makes the test's call in the throwaway station and judges it. The
// decisions are those the audit log holds for the call's trace once it
// has been flushed, so they are exactly the call's own.
func (s *Session) Run(ctx context.Context, t Test) *Result {
	s.calls++
	trace := fmt.Sprintf("station module test, call %d", s.calls)
	r := &Result{Test: t, Name: t.Title()}
	s.sink.begin(trace, r)
	s.net.recordTo(func(sv Served) { s.sink.add(func(r *Result) { r.Served = append(r.Served, sv) }) })
	start := time.Now()
	out, err := s.st.Run(sandbox.WithTrace(ctx, trace), s.Plan.Manifest.ID, t.Command, t.Input)
	r.Took = time.Since(start)
	s.net.recordTo(nil)
	s.sink.end()

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if ferr := s.st.Audit.Flush(rctx); ferr != nil {
		r.Logs = append(r.Logs, LogLine{Source: "station", Level: "error", Text: ferr.Error()})
	}
	recs, qerr := s.st.Store.Audit(rctx, store.AuditFilter{Module: s.Plan.Manifest.ID, Trace: trace, Limit: maxDecisions + 1})
	if qerr != nil {
		r.Logs = append(r.Logs, LogLine{Source: "station", Level: "error", Text: "read the call's decisions: " + qerr.Error()})
	}
	if len(recs) > maxDecisions {
		recs, r.MoreDecisions = recs[len(recs)-maxDecisions:], true
	}
	r.Decisions = recs
	judge(r, out, err, ctx.Err())
	return r
}

// judge decides whether the call did what the test wants.
func judge(r *Result, out []byte, err, interrupted error) {
	t := r.Test
	if err != nil {
		r.Err = err
		switch {
		case interrupted != nil:
			r.Failure = "interrupted"
		case t.WantError != "" && strings.Contains(err.Error(), t.WantError):
			r.OK = true
		case t.WantError != "":
			r.Failure = fmt.Sprintf("the error does not contain %s", yamlx.Quote(t.WantError))
		default:
			r.Failure = "the call failed"
		}
		return
	}
	r.Output = out
	switch {
	case t.WantError != "":
		r.Failure = fmt.Sprintf("the call returned a result; want an error containing %s", yamlx.Quote(t.WantError))
	case t.Want != nil:
		if d := Diff(t.Want, out); d != "" {
			r.Failure = "the result is not the one wanted: " + d
			return
		}
		r.OK = true
	default:
		r.OK = true
	}
}

// Close stops the station (its audit log flushed), the fixture servers,
// and removes the throwaway home. It may be called more than once.
func (s *Session) Close() error {
	s.closed.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errs []error
		if s.st != nil {
			errs = append(errs, s.st.Close(ctx))
		}
		if s.net != nil {
			s.net.close()
		}
		if s.ownCache != nil {
			errs = append(errs, s.ownCache.Close(ctx))
		}
		if s.Home != "" {
			if err := os.RemoveAll(s.Home); err != nil {
				errs = append(errs, fmt.Errorf("remove the throwaway station %s: %w", s.Home, err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// sink is the Result of the call in progress, which the log handler and
// the fixture servers add to; nil between calls.
type sink struct {
	mu    sync.Mutex
	trace string
	cur   *Result
}

func (k *sink) begin(trace string, r *Result) {
	k.mu.Lock()
	k.trace, k.cur = trace, r
	k.mu.Unlock()
}

func (k *sink) end() {
	k.mu.Lock()
	k.trace, k.cur = "", nil
	k.mu.Unlock()
}

// add applies f to the current Result, if a call is in progress, and
// reports whether it did. trace, when not "", must be the call's.
func (k *sink) addFor(trace string, f func(*Result)) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur == nil || trace != "" && trace != k.trace {
		return false
	}
	f(k.cur)
	return true
}

func (k *sink) add(f func(*Result)) bool { return k.addFor("", f) }

// captureHandler is the throwaway station's log: the module's lines (its
// log import carries the call in its context; its stdout and stderr are
// written during the call) and the station's warnings during a call go to
// the call's Result; everything else to next.
type captureHandler struct {
	sink  *sink
	next  slog.Handler
	attrs []slog.Attr
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == host.GuestLogMessage {
		attrs := map[string]string{}
		for _, a := range h.attrs {
			attrs[a.Key] = a.Value.String()
		}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		line := LogLine{Source: "log", Level: strings.ToLower(r.Level.String()), Text: attrs["text"]}
		if s := attrs["stream"]; s != "" {
			line.Source = s
		}
		if h.sink.addFor(sandbox.CallFrom(ctx).TraceName(), func(res *Result) { res.Logs = append(res.Logs, line) }) {
			return nil
		}
	} else if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(r.Message)
		attr := func(a slog.Attr) bool {
			if a.Key != "module" {
				fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
			}
			return true
		}
		for _, a := range h.attrs {
			attr(a)
		}
		r.Attrs(attr)
		line := LogLine{Source: "station", Level: strings.ToLower(r.Level.String()), Text: b.String()}
		if h.sink.add(func(res *Result) { res.Logs = append(res.Logs, line) }) {
			return nil
		}
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.WithAttrs(h.attrs).Handle(ctx, r)
	}
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(slices.Clip(h.attrs), as...)
	return &n
}

func (h *captureHandler) WithGroup(string) slog.Handler { return h }

// Diff compares two JSON documents as values — key order, spacing and the
// spelling of numbers (1, 1.0, 1e0) do not matter — and says where they
// first differ ("at .items[2].id: got "b", want "a""), or "" when they
// are equal.
func Diff(want, got []byte) string {
	w, err := decodeJSON(want)
	if err != nil {
		return "want is not JSON: " + err.Error()
	}
	g, err := decodeJSON(got)
	if err != nil {
		return "the result is not JSON: " + err.Error()
	}
	return diff(w, g, "")
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func diff(w, g any, path string) string {
	at := path
	if at == "" {
		at = "the top"
	}
	show := func(v any) string {
		b, _ := json.Marshal(v)
		return Cut(string(b), 80)
	}
	mismatch := func() string { return fmt.Sprintf("at %s: got %s, want %s", at, show(g), show(w)) }
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok {
			return mismatch()
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := gm[k]
			if !ok {
				return fmt.Sprintf("at %s: %s is missing", at, yamlx.Quote(k))
			}
			if d := diff(w[k], gv, path+"."+k); d != "" {
				return d
			}
		}
		var extra []string
		for k := range gm {
			if _, ok := w[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return fmt.Sprintf("at %s: %s is not wanted", at, yamlx.Quote(extra[0]))
		}
		return ""
	case []any:
		gs, ok := g.([]any)
		if !ok {
			return mismatch()
		}
		for i := range min(len(w), len(gs)) {
			if d := diff(w[i], gs[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		if len(w) != len(gs) {
			return fmt.Sprintf("at %s: %d elements, want %d", at, len(gs), len(w))
		}
		return ""
	case json.Number:
		gn, ok := g.(json.Number)
		if !ok {
			return mismatch()
		}
		a, aok := new(big.Rat).SetString(w.String())
		b, bok := new(big.Rat).SetString(gn.String())
		if !aok || !bok || a.Cmp(b) != 0 {
			return mismatch()
		}
		return ""
	default: // string, bool, nil
		if w != g {
			return mismatch()
		}
		return ""
	}
}
