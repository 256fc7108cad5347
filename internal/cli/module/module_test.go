package module

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

// term is a Factory on buffers: stdin answers prompts, and terminal says
// whether stdin and stderr are terminals.
type term struct {
	f        *cmdutil.Factory
	out, err *bytes.Buffer
}

func newTerm(stdin string, terminal bool) *term {
	var out, errb bytes.Buffer
	f := cmdutil.New(cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb, IsTerminal: terminal, ErrIsTerminal: terminal})
	return &term{f: f, out: &out, err: &errb}
}

func TestFlags(t *testing.T) {
	f := clitest.Factory()
	type tc struct {
		args []string
		want any
		code int
	}
	check := func(name string, c tc, err error, got any) {
		t.Helper()
		if code := cmdutil.ExitCode(err); code != c.code {
			t.Errorf("%s %q: exit %d (%v), want %d", name, c.args, code, err, c.code)
			return
		}
		if c.code == 0 && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: options %+v, want %+v", name, c.args, got, c.want)
		}
	}
	for _, c := range []tc{
		{args: []string{"dir"}, want: BuildOptions{Dir: "dir"}},
		{args: []string{"dir", "-o", "x.wasm", "--json"}, want: BuildOptions{Dir: "dir", Output: "x.wasm", JSON: true}},
		{args: []string{}, code: cmdutil.ExitUsage},
	} {
		var got BuildOptions
		err := clitest.Parse(NewCmdBuild(f, func(o *BuildOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Build, got.StartProgress = nil, nil, nil
		check("build", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{"examples/hello"}, want: InstallOptions{Arg: "examples/hello"}},
		{args: []string{"-y", "--json", "dave/x@1.0.0"}, want: InstallOptions{Arg: "dave/x@1.0.0", Yes: true, JSON: true}},
		{args: []string{"a", "b"}, code: cmdutil.ExitUsage},
		{args: []string{"--frob", "a"}, code: cmdutil.ExitUsage},
	} {
		var got InstallOptions
		err := clitest.Parse(NewCmdInstall(f, func(o *InstallOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Station, got.Hub, got.HubApprover, got.Confirm, got.Reload, got.StartProgress, got.IsDir = nil, nil, nil, nil, nil, nil, nil, nil
		check("install", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{"--json"}, want: ListOptions{JSON: true}},
		{args: []string{"extra"}, code: cmdutil.ExitUsage},
	} {
		var got ListOptions
		err := clitest.Parse(NewCmdList(f, func(o *ListOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Modules = nil, nil
		check("list", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{"a/b", "--json"}, want: ShowOptions{ID: "a/b", JSON: true}},
		{args: []string{}, code: cmdutil.ExitUsage},
	} {
		var got ShowOptions
		err := clitest.Parse(NewCmdShow(f, func(o *ShowOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Describe = nil, nil
		check("show", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{"a/b"}, want: RemoveOptions{ID: "a/b"}},
		{args: []string{"a/b", "-y", "--json"}, want: RemoveOptions{ID: "a/b", Yes: true, JSON: true}},
		{args: []string{"a/b", "--yes"}, want: RemoveOptions{ID: "a/b", Yes: true}},
		{args: []string{"a/b", "c/d"}, code: cmdutil.ExitUsage},
	} {
		var got RemoveOptions
		err := clitest.Parse(NewCmdRemove(f, func(o *RemoveOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Describe, got.Remove, got.Confirm, got.Reload = nil, nil, nil, nil, nil
		check("remove", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{"dir", "--key", "k.pem", "--json"}, want: PublishOptions{Dir: "dir", Key: "k.pem", JSON: true}},
		{args: []string{"dir", "--file", "k.pem"}, code: cmdutil.ExitUsage},
	} {
		var got PublishOptions
		err := clitest.Parse(NewCmdPublish(f, func(o *PublishOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Publisher = nil, nil
		check("publish", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{}, want: SearchOptions{}},
		{args: []string{"invoice", "--owner", "dave", "--offset", "20", "--limit", "5", "--json"},
			want: SearchOptions{SearchOptions: hubclient.SearchOptions{Query: "invoice", Owner: "dave", Offset: 20, Limit: 5}, JSON: true}},
		{args: []string{"a", "b"}, code: cmdutil.ExitUsage},
	} {
		var got SearchOptions
		err := clitest.Parse(NewCmdSearch(f, func(o *SearchOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Searcher = nil, nil
		check("search", c, err, got)
	}
	for _, c := range []tc{
		{args: []string{}, want: UpgradeOptions{Refs: []string{}}},
		{args: []string{"dave/a", "dave/b@1.2.0", "--yes", "--json"}, want: UpgradeOptions{Refs: []string{"dave/a", "dave/b@1.2.0"}, Yes: true, JSON: true}},
		{args: []string{"not-a-ref"}, code: cmdutil.ExitUsage},
		{args: []string{"dave/a@not a version"}, code: cmdutil.ExitUsage},
	} {
		var got UpgradeOptions
		err := clitest.Parse(NewCmdUpgrade(f, func(o *UpgradeOptions) error { got = *o; return nil }), c.args...)
		got.IO, got.Upgrader, got.HubApprover, got.Reload, got.StartProgress = nil, nil, nil, nil, nil
		check("upgrade", c, err, got)
	}
	// An unknown subcommand is a usage error that says what is close.
	err := clitest.Parse(NewCmdModule(f), "instal", "x")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), `did you mean "install"?`) {
		t.Errorf("module instal: %v", err)
	}
}

// moduleYAML writes a manifest into a new directory.
func moduleYAML(t *testing.T, id, version string) string {
	t.Helper()
	dir := t.TempDir()
	m := "id: " + id + "\nversion: \"" + version + "\"\nwasm: module.wasm\ncommands:\n  - name: greet\n"
	if err := os.WriteFile(filepath.Join(dir, manifest.FileName), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuild(t *testing.T) {
	dir := moduleYAML(t, "station/hello", "1.0.0")
	var built [2]string
	build := func(_ context.Context, dir, out string) error {
		built = [2]string{dir, out}
		time.Sleep(150 * time.Millisecond) // a frame of the spinner or two
		return os.WriteFile(out, make([]byte, 3<<10), 0o600)
	}
	for _, terminal := range []bool{false, true} {
		tm := newTerm("", terminal)
		opts := &BuildOptions{IO: &tm.f.IO, Build: build, StartProgress: tm.f.StartProgress, Dir: dir}
		if err := buildRun(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		wasm := filepath.Join(dir, "module.wasm")
		if built != [2]string{dir, wasm} {
			t.Errorf("built %v", built)
		}
		if out := tm.out.String(); !strings.HasPrefix(out, "built "+wasm+" (3 KiB) in ") || !strings.HasSuffix(out, "ms\n") {
			t.Errorf("printed %q", out)
		}
		switch progress := tm.err.String(); {
		case !terminal && progress != "":
			t.Errorf("not a terminal: stderr %q, want nothing", progress)
		case terminal && !strings.Contains(progress, "building station/hello@1.0.0") || terminal && !strings.HasSuffix(progress, "\r\x1b[K"):
			t.Errorf("on a terminal: stderr %q, want the spinner, cleared", progress)
		}
	}

	tm := newTerm("", false)
	out := filepath.Join(t.TempDir(), "x.wasm")
	opts := &BuildOptions{IO: &tm.f.IO, Build: build, StartProgress: tm.f.StartProgress, Dir: dir, Output: out, JSON: true}
	if err := buildRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil || r["wasm"] != out || r["size_bytes"] != float64(3<<10) || r["id"] != "station/hello" || r["duration_ms"] == nil {
		t.Errorf("--json: %s (%v)", tm.out, err)
	}

	boom := errors.New("boom")
	opts = &BuildOptions{IO: &tm.f.IO, Build: func(context.Context, string, string) error { return boom }, StartProgress: tm.f.StartProgress, Dir: dir}
	if err := buildRun(context.Background(), opts); !errors.Is(err, boom) || !strings.Contains(err.Error(), "build station/hello") {
		t.Errorf("a failed build: %v", err)
	}
	opts.Dir = t.TempDir()
	if err := buildRun(context.Background(), opts); err == nil {
		t.Error("a directory without module.yaml built")
	}
}

// fakeInstaller is a station that installs from a directory.
type fakeInstaller struct {
	plan  station.Plan
	asked bool
	dir   string
}

func (f *fakeInstaller) Install(_ context.Context, dir string, approve station.Approver) (*station.Plan, error) {
	f.dir = dir
	f.asked = true
	ok, err := approve(f.plan)
	if err != nil {
		return &f.plan, err
	}
	if !ok {
		return &f.plan, station.ErrNotApproved
	}
	return &f.plan, nil
}

func helloPlan() station.Plan {
	return station.Plan{Manifest: &manifest.Manifest{ID: "station/hello", Version: "1.0.0", Commands: []manifest.Command{{Name: "greet"}}},
		Digest: "sha256:abc", Size: 100, Permissions: station.Permissions{Network: []string{"api.example.com"}, FilesystemWrites: []string{}, Subprocess: false,
			Programs: []execgate.Program{{Name: "git", Path: "/usr/bin/git", Digest: "sha256:00"}}}}
}

func installOpts(tm *term, inst Installer, hubInst HubInstaller, arg string) (*InstallOptions, *[]string) {
	var reloaded []string
	return &InstallOptions{IO: &tm.f.IO, Arg: arg,
		Station:     func(context.Context) (Installer, error) { return inst, nil },
		Hub:         func(context.Context) (HubInstaller, error) { return hubInst, nil },
		HubApprover: tm.f.HubApprover, Confirm: tm.f.Confirm, StartProgress: tm.f.StartProgress,
		Reload: func(_ context.Context, id string) { reloaded = append(reloaded, id) },
		IsDir:  func(p string) bool { return !strings.Contains(p, "@") && !strings.HasPrefix(p, "dave/") },
	}, &reloaded
}

func TestInstallFromADirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	// No terminal, no --yes: the plan is shown and nothing is installed.
	tm := newTerm("", false)
	inst := &fakeInstaller{plan: helloPlan()}
	opts, reloaded := installOpts(tm, inst, nil, dir)
	err := installRun(ctx, opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "rerun with --yes") || len(*reloaded) != 0 {
		t.Errorf("install without approval: %v (reloaded %v)", err, *reloaded)
	}
	if !strings.Contains(tm.err.String(), "may connect to api.example.com") {
		t.Errorf("the plan is not shown:\n%s", tm.err)
	}

	// A terminal: asked, and "n" declines.
	tm = newTerm("n\n", true)
	opts, _ = installOpts(tm, inst, nil, dir)
	if err := installRun(ctx, opts); cmdutil.ExitCode(err) != cmdutil.ExitDeclined {
		t.Errorf("declined install: %v", err)
	}
	if !strings.Contains(tm.err.String(), "Install? [y/N]") || !strings.Contains(tm.err.String(), "checking "+dir) {
		t.Errorf("the prompt or the progress is missing:\n%q", tm.err)
	}

	// "y" installs, the daemon reloads it, and it says in how long.
	tm = newTerm("y\n", true)
	opts, reloaded = installOpts(tm, inst, nil, dir)
	if err := installRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if inst.dir != dir || !reflect.DeepEqual(*reloaded, []string{"station/hello"}) {
		t.Errorf("installed %s, reloaded %v", inst.dir, *reloaded)
	}
	if out := tm.out.String(); !strings.HasPrefix(out, "installed station/hello@1.0.0 (sha256:abc) in ") {
		t.Errorf("printed %q", out)
	}

	// --yes --json: the result, snake_case everywhere (the programs too),
	// with where it came from.
	tm = newTerm("", false)
	inst.plan.Replaces = &store.Module{ID: "station/hello", Version: "0.9.0"}
	opts, _ = installOpts(tm, inst, nil, dir)
	opts.Yes, opts.JSON = true, true
	if err := installRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	var r struct {
		ID, Version, Digest, Replaced string
		Changed                       bool
		Permissions                   struct {
			Network  []string
			Programs []map[string]string
		}
		Source map[string]string
	}
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "station/hello" || !r.Changed || r.Replaced != "0.9.0" || r.Source["kind"] != "directory" || r.Source["dir"] != dir ||
		len(r.Permissions.Programs) != 1 || r.Permissions.Programs[0]["path"] != "/usr/bin/git" {
		t.Errorf("--json: %s", tm.out)
	}
}

// fakeHub is a hub session that installs.
type fakeHub struct {
	req  *hubsync.Request
	plan hubsync.Plan
	res  hubsync.Result
	err  error
}

func (f *fakeHub) Install(_ context.Context, req hubsync.Request, approve hubsync.Approver) (hubsync.Result, error) {
	f.req = &req
	if f.err != nil {
		return hubsync.Result{ID: req.ID, Version: req.Version}, f.err
	}
	if !f.res.Changed {
		return f.res, nil
	}
	ok, err := approve(f.plan)
	if err != nil {
		return hubsync.Result{}, err
	}
	if !ok {
		return hubsync.Result{}, station.ErrNotApproved
	}
	return f.res, nil
}

func hubPlan(replaces *store.Module) hubsync.Plan {
	p := hubsync.Plan{Plan: helloPlan(), Hub: "https://hub.example", Version: hub.Version{Module: "dave/hello", Version: "1.0.0"}, Key: hub.PublicKey{ID: hub.KeyID{1}}}
	p.Plan.Manifest = &manifest.Manifest{ID: "dave/hello", Version: "1.0.0"}
	if replaces != nil {
		p.Plan.Replaces = replaces
		p.Approved = &station.Permissions{}
		p.OriginChange = true
	}
	return p
}

// TestInstallYesNeverFallsBackToTheHub: --yes with a path that is not a
// directory here (run from the wrong folder) is refused, not read as a hub
// module of that name; naming the version makes the hub install explicit.
func TestInstallYesNeverFallsBackToTheHub(t *testing.T) {
	ctx := context.Background()
	tm := newTerm("", false)
	h := &fakeHub{res: hubsync.Result{ID: "dave/hello", Version: "1.0.0"}}
	opts, _ := installOpts(tm, &fakeInstaller{}, h, "examples/hello")
	opts.IsDir = func(string) bool { return false }
	opts.Yes = true
	err := installRun(ctx, opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "examples/hello is not a directory here") || !strings.Contains(err.Error(), "examples/hello@VERSION") {
		t.Errorf("install --yes of a missing directory: %v", err)
	}
	if h.req != nil {
		t.Errorf("the hub was asked for %+v", h.req)
	}
	opts.Arg = "examples/hello@1.0.0"
	if err := installRun(ctx, opts); err != nil || h.req == nil || h.req.ID != "examples/hello" || h.req.Version != "1.0.0" || !h.req.Ask {
		t.Errorf("an explicit hub reference: %v, asked the hub for %+v", err, h.req)
	}
}

func TestInstallFromTheHub(t *testing.T) {
	ctx := context.Background()
	done := hubsync.Result{ID: "dave/hello", Version: "1.0.0", Changed: true}

	// Without a terminal and --yes: a usage error, after the plan.
	tm := newTerm("", false)
	h := &fakeHub{plan: hubPlan(nil), res: done}
	h.res.Plan = &h.plan
	opts, reloaded := installOpts(tm, nil, h, "dave/hello")
	if err := installRun(ctx, opts); cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "rerun with --yes") || len(*reloaded) != 0 {
		t.Errorf("hub install without approval: %v (reloaded %v)", err, *reloaded)
	}
	if !strings.Contains(tm.err.String(), "signed by key") {
		t.Errorf("the hub plan is not shown:\n%s", tm.err)
	}

	// In place of a directory install: the plan says so, the prompt asks,
	// and the result says what it replaced and where it came from.
	tm = newTerm("y\n", true)
	h = &fakeHub{plan: hubPlan(&store.Module{ID: "dave/hello", Version: "1.0.0", Digest: "sha256:old"}), res: done}
	h.res.Plan = &h.plan
	opts, reloaded = installOpts(tm, nil, h, "dave/hello@1.0.0")
	if err := installRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REPLACES dave/hello@1.0.0, which was not installed from https://hub.example", "Install dave/hello@1.0.0? [y/N]", "downloading and checking dave/hello@1.0.0"} {
		if !strings.Contains(tm.err.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, tm.err)
		}
	}
	if out := tm.out.String(); !strings.HasPrefix(out, "installed dave/hello@1.0.0 (sha256:abc) from https://hub.example in ") || !strings.HasSuffix(out, ", replacing 1.0.0\n") {
		t.Errorf("printed %q", out)
	}
	if !reflect.DeepEqual(*reloaded, []string{"dave/hello"}) {
		t.Errorf("reloaded %v", *reloaded)
	}

	tm = newTerm("", false)
	opts, _ = installOpts(tm, nil, h, "dave/hello@1.0.0")
	opts.Yes, opts.JSON = true, true
	if err := installRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil || r["hub"] != "https://hub.example" || r["key"] != "0000000000000001" ||
		r["source"].(map[string]any)["key_id"] != "0000000000000001" || r["source"].(map[string]any)["kind"] != "hub" || r["duration_ms"] == nil {
		t.Errorf("--json: %s (%v)", tm.out, err)
	}

	// Already installed: said, and nothing reloaded.
	tm = newTerm("", false)
	h = &fakeHub{res: hubsync.Result{ID: "dave/hello", Version: "1.0.0"}}
	opts, reloaded = installOpts(tm, nil, h, "dave/hello@1.0.0")
	opts.Yes = true
	if err := installRun(ctx, opts); err != nil || tm.out.String() != "dave/hello@1.0.0 is already installed\n" || len(*reloaded) != 0 {
		t.Errorf("already installed: %v, %q, reloaded %v", err, tm.out, *reloaded)
	}

	// A directory that is not there reads as OWNER/SLUG: without a hub
	// login the error says both, and the hint how to log in.
	opts, _ = installOpts(newTerm("", false), nil, nil, "examples/helo")
	opts.Hub = func(context.Context) (HubInstaller, error) { return nil, hubsync.ErrNotLoggedIn }
	opts.IsDir = func(string) bool { return false }
	if err := installRun(ctx, opts); !errors.Is(err, hubsync.ErrNotLoggedIn) || !strings.Contains(err.Error(), "install examples/helo: no such directory") ||
		!strings.Contains(cmdutil.Hint(err), "station hub login --url URL") {
		t.Errorf("a missing directory without a hub login: %v (hint %q)", err, cmdutil.Hint(err))
	}

	// The hub's error is the command's, with its hint in one place.
	h = &fakeHub{err: hub.Errorf(hub.CodeUnauthenticated, "token revoked")}
	opts, _ = installOpts(newTerm("", false), nil, h, "dave/hello@1.0.0")
	opts.Yes = true
	if err := installRun(ctx, opts); hub.CodeOf(err) != hub.CodeUnauthenticated || !strings.Contains(cmdutil.Hint(err), "station hub login") {
		t.Errorf("hub error: %v (hint %q)", err, cmdutil.Hint(err))
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	approved, _ := json.Marshal(helloPlan().Permissions)
	mods := []store.Module{
		{ID: "station/hello", Version: "1.0.0", Digest: "sha256:0123456789abcdef0123456789", Approved: approved, InstalledAt: at},
		{ID: "dave/broken", Version: "2.0.0", Digest: "sha256:1", Approved: []byte("{"), InstalledAt: at},
	}
	list := func(ms []store.Module, asJSON bool) (*term, error) {
		tm := newTerm("", false)
		return tm, listRun(ctx, &ListOptions{IO: &tm.f.IO, Modules: func(context.Context) ([]store.Module, error) { return ms, nil }, JSON: asJSON})
	}
	tm, err := list(mods, false)
	if err != nil {
		t.Fatal(err)
	}
	if out := tm.out.String(); !strings.Contains(out, "station/hello  1.0.0    sha256:0123456789ab  api.example.com") || !strings.Contains(out, "unreadable") {
		t.Errorf("list:\n%s", out)
	}
	tm, err = list(mods, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(tm.out.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("--json: %s (%v)", tm.out, err)
	}
	progs := got[0]["permissions"].(map[string]any)["programs"].([]any)
	if p := progs[0].(map[string]any); p["name"] != "git" || p["path"] != "/usr/bin/git" || p["digest"] != "sha256:00" || got[0]["installed_at"] != "2025-01-02T03:04:05Z" {
		t.Errorf("--json: programs are not snake_case: %s", tm.out)
	}
	if got[1]["permissions"] != nil {
		t.Errorf("an unreadable approval: %v", got[1]["permissions"])
	}

	tm, _ = list(nil, true)
	if strings.TrimSpace(tm.out.String()) != "[]" {
		t.Errorf("no modules, --json: %q", tm.out)
	}
	tm, _ = list(nil, false)
	if tm.out.Len() != 0 || !strings.Contains(tm.err.String(), "no modules installed") {
		t.Errorf("no modules: %q %q", tm.out, tm.err)
	}
}

func info(origin hubsync.Origin) *hubsync.ModuleInfo {
	p := helloPlan()
	return &hubsync.ModuleInfo{
		Module:   store.Module{ID: "station/hello", Version: "1.0.0", Digest: "sha256:abc", InstalledAt: time.Unix(0, 0)},
		Manifest: &manifest.Manifest{ID: "station/hello", Version: "1.0.0", Description: "Greets", Commands: []manifest.Command{{Name: "greet", Description: "says hello"}}},
		Approved: p.Permissions, Limits: station.Limits{MemoryBytes: 128 << 20, Timeout: "30s", Concurrency: 8}, Origin: origin,
		Usage: fsgate.Usage{Bytes: 3 << 20, Entries: 12},
	}
}

func TestShowLimitsOfFilesAndPrograms(t *testing.T) {
	in := info(hubsync.Origin{Kind: hubsync.FromUnknown})
	in.Limits.Files = &station.FileLimits{QuotaBytes: 1 << 30, UsedBytes: 3 << 20, Entries: 20000, UsedEntries: 12, OpenFiles: 256, OpenFilesPerInstance: 64}
	in.Limits.ProgramOutputBytes, in.Limits.FreshInstance = 1<<20, true
	var buf bytes.Buffer
	if err := newShowResult(in).Text(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a fresh instance per call", "files: quota 1 GiB (3 MiB used), 20000 files and directories (12 used), 256 open at once (64 per instance)", "programs: 1 MiB of stdout and of stderr each"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("show does not contain %q:\n%s", want, buf.String())
		}
	}
}

func TestShow(t *testing.T) {
	ctx := context.Background()
	show := func(in *hubsync.ModuleInfo, err error, asJSON bool) (*term, error) {
		tm := newTerm("", false)
		return tm, showRun(ctx, &ShowOptions{IO: &tm.f.IO, ID: "station/hello", JSON: asJSON,
			Describe: func(context.Context, string) (*hubsync.ModuleInfo, error) { return in, err }})
	}
	for _, c := range []struct {
		origin hubsync.Origin
		want   string
	}{
		{hubsync.Origin{Kind: hubsync.FromDirectory, Dir: "/src/hello"}, "from       directory /src/hello\n"},
		{hubsync.Origin{Kind: hubsync.FromHub, Hub: "https://hub.example", KeyID: "ABC"}, "from       hub https://hub.example, signed by key ABC\n"},
		{hubsync.Origin{Kind: hubsync.FromHub, Hub: "https://hub.example", KeyID: "ABC", Team: "acme"}, "from       hub https://hub.example, for team acme, signed by key ABC\n"},
		{hubsync.Origin{Kind: hubsync.FromUnknown}, "from       a directory not recorded"},
	} {
		tm, err := show(info(c.origin), nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{c.want, "station/hello 1.0.0\n  Greets\n", "digest     sha256:abc\n", "  greet                says hello\n",
			"may connect to api.example.com", "limits\n  memory 128 MiB, timeout 30s, 8 calls at once"} {
			if !strings.Contains(tm.out.String(), want) {
				t.Errorf("show does not contain %q:\n%s", want, tm.out)
			}
		}
	}
	tm, err := show(info(hubsync.Origin{Kind: hubsync.FromHub, Hub: "https://hub.example", KeyID: "ABC"}), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Source   map[string]string
		Commands []map[string]string
		Limits   map[string]any
	}
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil || r.Source["hub"] != "https://hub.example" || r.Source["key_id"] != "ABC" || r.Source["kind"] != "hub" ||
		r.Commands[0]["name"] != "greet" || r.Limits["memory_bytes"] != float64(128<<20) {
		t.Errorf("--json: %s (%v)", tm.out, err)
	}

	if _, err := show(nil, store.ErrNotFound, false); err == nil || !strings.Contains(err.Error(), "show station/hello: module is not installed") || cmdutil.Hint(err) != "station module list shows what is installed" {
		t.Errorf("not installed: %v", err)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	remove := func(stdin string, terminal, yes, asJSON bool) (*term, []string, error) {
		tm := newTerm(stdin, terminal)
		var removed []string
		err := removeRun(ctx, &RemoveOptions{IO: &tm.f.IO, ID: "station/hello", Yes: yes, JSON: asJSON, Confirm: tm.f.Confirm,
			Describe: func(context.Context, string) (*hubsync.ModuleInfo, error) {
				return info(hubsync.Origin{Kind: hubsync.FromDirectory, Dir: "/src/hello"}), nil
			},
			Remove: func(_ context.Context, id string) error { removed = append(removed, id); return nil },
			Reload: func(context.Context, string) {}})
		return tm, removed, err
	}
	// No terminal and no --yes: a usage error that says to rerun with --yes.
	_, removed, err := remove("", false, false, false)
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "rerun with --yes") || len(removed) != 0 {
		t.Errorf("remove without a terminal: %v, removed %v", err, removed)
	}
	// A terminal: what goes and what stays, then the question.
	tm, removed, err := remove("n\n", true, false, false)
	if cmdutil.ExitCode(err) != cmdutil.ExitDeclined || len(removed) != 0 {
		t.Errorf("declined: %v, removed %v", err, removed)
	}
	for _, want := range []string{"station/hello 1.0.0, installed from directory /src/hello", "goes:  its wasm and manifest, the permissions you approved",
		"stays: its audit log and the files it wrote (12 files and directories, 3 MiB)", "Remove station/hello? [y/N]"} {
		if !strings.Contains(tm.err.String(), want) {
			t.Errorf("the prompt does not contain %q:\n%s", want, tm.err)
		}
	}
	tm, removed, err = remove("y\n", true, false, false)
	if err != nil || !reflect.DeepEqual(removed, []string{"station/hello"}) || !strings.HasPrefix(tm.out.String(), "removed station/hello 1.0.0; its audit log") {
		t.Errorf("approved: %v, removed %v, printed %q", err, removed, tm.out)
	}
	// --yes: no question.
	tm, removed, err = remove("", false, true, true)
	if err != nil || len(removed) != 1 || tm.err.Len() != 0 {
		t.Fatalf("--yes: %v, removed %v, stderr %q", err, removed, tm.err)
	}
	var r map[string]any
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil || r["id"] != "station/hello" || r["kept_file_entries"] != float64(12) || r["source"].(map[string]any)["dir"] != "/src/hello" {
		t.Errorf("--json: %s (%v)", tm.out, err)
	}

	tm = newTerm("", false)
	err = removeRun(ctx, &RemoveOptions{IO: &tm.f.IO, ID: "a/b", Yes: true,
		Describe: func(context.Context, string) (*hubsync.ModuleInfo, error) { return nil, store.ErrNotFound }})
	if err == nil || !strings.Contains(err.Error(), "remove a/b: module is not installed") || cmdutil.Hint(err) != "station module list shows what is installed" {
		t.Errorf("not installed: %v", err)
	}
}

type fakePublisher struct {
	dir, key string
	err      error
}

func (f *fakePublisher) Publish(_ context.Context, dir, key string) (*hubsync.Published, error) {
	f.dir, f.key = dir, key
	if f.err != nil {
		return nil, f.err
	}
	return &hubsync.Published{Version: hub.Version{Module: "dave/hello", Version: "1.0.0", WasmDigest: "sha256:w", KeyID: "K1", PublishedAt: time.Unix(0, 0).UTC()}, Hub: "https://hub.example", Key: key}, nil
}

func TestPublish(t *testing.T) {
	ctx := context.Background()
	for _, asJSON := range []bool{false, true} {
		tm := newTerm("", false)
		p := &fakePublisher{}
		if err := publishRun(ctx, &PublishOptions{IO: &tm.f.IO, Publisher: func(context.Context) (Publisher, error) { return p, nil }, Dir: "d", Key: "k.pem", JSON: asJSON}); err != nil {
			t.Fatal(err)
		}
		if p.dir != "d" || p.key != "k.pem" {
			t.Errorf("published %s with %s", p.dir, p.key)
		}
		if !asJSON && tm.out.String() != "published dave/hello@1.0.0 (sha256:w, signed by K1) to https://hub.example\n" {
			t.Errorf("printed %q", tm.out)
		}
		var r map[string]any
		if asJSON && (json.Unmarshal(tm.out.Bytes(), &r) != nil || r["module"] != "dave/hello" || r["key_id"] != "K1" || r["hub"] != "https://hub.example") {
			t.Errorf("--json: %s", tm.out)
		}
	}
	err := publishRun(ctx, &PublishOptions{IO: &newTerm("", false).f.IO, Publisher: func(context.Context) (Publisher, error) {
		return &fakePublisher{err: hubsync.ErrNoSigningKey}, nil
	}})
	if !strings.Contains(cmdutil.Hint(err), "station hub key create") || !strings.Contains(cmdutil.Hint(err), "--key PATH") {
		t.Errorf("no key: %v (hint %q)", err, cmdutil.Hint(err))
	}
}

type fakeSearcher struct {
	o   hubclient.SearchOptions
	res hub.SearchResponse
}

func (f *fakeSearcher) Search(_ context.Context, o hubclient.SearchOptions) (hub.SearchResponse, error) {
	f.o = o
	return f.res, nil
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	s := &fakeSearcher{res: hub.SearchResponse{Modules: []hub.Module{{ID: "dave/a", Latest: "1.0.0", Description: "A"}, {ID: "dave/b", Description: "B"}}, Next: 2}}
	tm := newTerm("", false)
	opts := &SearchOptions{IO: &tm.f.IO, Searcher: func(context.Context) (Searcher, error) { return s, nil }, SearchOptions: hubclient.SearchOptions{Query: "x", Limit: 2}}
	if err := searchRun(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if s.o.Query != "x" || s.o.Limit != 2 {
		t.Errorf("searched %+v", s.o)
	}
	if out := tm.out.String(); !strings.Contains(out, "dave/a  1.0.0         A") || !strings.Contains(out, "dave/b  (all yanked)  B") || !strings.Contains(tm.err.String(), "more results: --offset 2") {
		t.Errorf("search:\n%s%s", out, tm.err)
	}
	s.res = hub.SearchResponse{}
	tm = newTerm("", false)
	opts.IO, opts.JSON = &tm.f.IO, true
	if err := searchRun(ctx, opts); err != nil || strings.TrimSpace(tm.out.String()) != "{\n  \"modules\": []\n}" {
		t.Errorf("nothing found, --json: %v %q", err, tm.out)
	}
	tm = newTerm("", false)
	opts.IO, opts.JSON = &tm.f.IO, false
	if err := searchRun(ctx, opts); err != nil || tm.out.Len() != 0 || !strings.Contains(tm.err.String(), "no modules found") {
		t.Errorf("nothing found: %v %q %q", err, tm.out, tm.err)
	}
}

type fakeUpgrader struct {
	refs    []string
	results []*hubsync.UpgradeResult
	plan    *hubsync.Plan
	err     error
}

func (f *fakeUpgrader) Upgrade(_ context.Context, refs []string, approve hubsync.Approver) ([]*hubsync.UpgradeResult, error) {
	f.refs = refs
	if f.plan != nil {
		if ok, err := approve(*f.plan); !ok || err != nil {
			f.results[len(f.results)-1].Status, f.results[len(f.results)-1].Err = hubsync.Declined, err
			return f.results, err
		}
	}
	return f.results, f.err
}

func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	upgrade := func(tm *term, u *fakeUpgrader, refs []string, asJSON bool) ([]string, error) {
		var reloaded []string
		err := upgradeRun(ctx, &UpgradeOptions{IO: &tm.f.IO, Refs: refs, JSON: asJSON, HubApprover: tm.f.HubApprover, StartProgress: tm.f.StartProgress,
			Upgrader: func(context.Context) (Upgrader, error) { return u, nil },
			Reload:   func(_ context.Context, id string) { reloaded = append(reloaded, id) }})
		return reloaded, err
	}
	u := &fakeUpgrader{results: []*hubsync.UpgradeResult{
		{Module: "dave/a", From: "1.0.0", To: "1.1.0", Status: hubsync.Upgraded},
		{Module: "dave/b", From: "2.0.0", To: "2.0.0", Status: hubsync.UpToDate},
	}}
	tm := newTerm("", false)
	reloaded, err := upgrade(tm, u, []string{"dave/a@1.1.0", "dave/b"}, false)
	if err != nil || !reflect.DeepEqual(u.refs, []string{"dave/a@1.1.0", "dave/b"}) || !reflect.DeepEqual(reloaded, []string{"dave/a"}) {
		t.Errorf("upgrade: %v, refs %v, reloaded %v", err, u.refs, reloaded)
	}
	if out := tm.out.String(); out != "upgraded dave/a 1.0.0 -> 1.1.0\ndave/b@2.0.0 is up to date\n" {
		t.Errorf("printed %q", out)
	}

	// To an older version: downgraded, in the text and in --json.
	u = &fakeUpgrader{results: []*hubsync.UpgradeResult{{Module: "dave/a", From: "1.2.0", To: "1.1.0", Status: hubsync.Upgraded}}}
	for _, asJSON := range []bool{false, true} {
		tm = newTerm("", false)
		if _, err := upgrade(tm, u, []string{"dave/a@1.1.0"}, asJSON); err != nil {
			t.Fatal(err)
		}
		var r []map[string]string
		if out := tm.out.String(); asJSON && (json.Unmarshal(tm.out.Bytes(), &r) != nil || len(r) != 1 || r[0]["status"] != "downgraded") ||
			!asJSON && out != "downgraded dave/a 1.2.0 -> 1.1.0\n" {
			t.Errorf("downgrade (json %v) printed %q", asJSON, out)
		}
	}

	// One that asks for more, without a terminal: declined with the
	// difference shown, exit 5; --json still prints every module.
	plan := hubPlan(&store.Module{ID: "dave/hello", Version: "0.9.0"})
	plan.OriginChange, plan.Escalations = false, []string{"may now connect to api.stripe.com"}
	u = &fakeUpgrader{plan: &plan, results: []*hubsync.UpgradeResult{{Module: "dave/hello", From: "0.9.0", To: "1.0.0"}}}
	tm = newTerm("", false)
	if _, err := upgrade(tm, u, nil, true); cmdutil.ExitCode(err) != cmdutil.ExitDeclined || !strings.Contains(err.Error(), "the installed version keeps running") {
		t.Errorf("declined upgrade: %v", err)
	}
	if !strings.Contains(tm.err.String(), "+ may now connect to api.stripe.com") {
		t.Errorf("the difference is not shown:\n%s", tm.err)
	}
	var r []map[string]string
	if err := json.Unmarshal(tm.out.Bytes(), &r); err != nil || len(r) != 1 || r[0]["status"] != "declined" || !strings.Contains(r[0]["error"], "not approved") {
		t.Errorf("--json: %s (%v)", tm.out, err)
	}

	// A module from a directory: the hint says how to replace it.
	u = &fakeUpgrader{results: []*hubsync.UpgradeResult{{Module: "dave/hello", Status: hubsync.Failed, Err: hubsync.ErrNotFromHub}}, err: hubsync.ErrNotFromHub}
	if _, err := upgrade(newTerm("", false), u, []string{"dave/hello"}, false); !strings.Contains(cmdutil.Hint(err), "station module install OWNER/SLUG@VERSION") {
		t.Errorf("not from the hub: %v (hint %q)", err, cmdutil.Hint(err))
	}
	tm = newTerm("", false)
	if _, err := upgrade(tm, &fakeUpgrader{}, nil, false); err != nil || !strings.Contains(tm.err.String(), "no modules installed from the hub") {
		t.Errorf("nothing to upgrade: %v %q", err, tm.err)
	}
}

func TestSchema(t *testing.T) {
	tm := newTerm("", false)
	if err := schemaRun(&SchemaOptions{IO: &tm.f.IO}); err != nil || !json.Valid(tm.out.Bytes()) || !strings.Contains(tm.out.String(), `"$schema"`) {
		t.Errorf("schema: %v %.80s", err, tm.out)
	}
}

// TestPrintersEscape feeds the hostile text through every field a module,
// a hub or a lockfile supplies to what these commands print: results as
// text and JSON, and the remove prompt.
func TestPrintersEscape(t *testing.T) {
	h := clitest.Hostile
	perms := station.Permissions{Network: []string{h}, FilesystemWrites: []string{h}, FilesystemReads: []string{h}, Env: []string{h}, Subprocess: map[string][]string{"allow": {h}},
		Programs: []execgate.Program{{Name: h, Path: h, Digest: h}}}
	src := Source{Kind: hubsync.FromHub, Hub: h, KeyID: h, Team: h}
	in := &hubsync.ModuleInfo{Module: store.Module{ID: h, Version: h, Digest: h}, Manifest: &manifest.Manifest{ID: h, Version: h, Description: h, Commands: []manifest.Command{{Name: h, Description: h}}},
		Approved: perms, Confinement: h, Origin: hubsync.Origin{Kind: hubsync.FromDirectory, Dir: h}}
	results := map[string]cmdutil.Texter{
		"build":   BuildResult{ID: h, Version: h, Wasm: h},
		"install": InstallResult{ID: h, Version: h, Changed: true, Digest: "sha256:x", Permissions: newPermissions(perms), Replaced: h, Source: src, Hub: h, Key: h},
		"list":    ListResult{{ID: h, Version: h, Digest: h, Permissions: newPermissions(perms)}},
		"show":    newShowResult(in),
		"remove":  RemoveResult{ID: h, Version: h, Source: src},
		"publish": PublishResult{Version: hub.Version{Module: h, Version: h, WasmDigest: h, KeyID: h, YankReason: h}, Hub: h},
		"search":  SearchResult{hub.SearchResponse{Modules: []hub.Module{{ID: h, Owner: h, Description: h, Latest: h}}}},
		"upgrade": UpgradeResult{{ID: h, From: h, To: h, Status: string(hubsync.Upgraded), Error: h}, {ID: h, To: h, Status: string(hubsync.UpToDate)}},
	}
	for name, r := range results {
		var buf bytes.Buffer
		if err := r.Text(&buf); err != nil {
			t.Fatal(err)
		}
		clitest.CheckPrinted(t, name, buf.String())
		buf.Reset()
		if err := cmdutil.WriteJSON(&buf, r); err != nil {
			t.Fatalf("%s --json: %v", name, err)
		}
		if c := clitest.RawControl(buf.String()); c != "" || !json.Valid(buf.Bytes()) {
			t.Errorf("%s --json: %s in %q", name, c, buf.String())
		}
	}
	for _, kind := range []string{hubsync.FromDirectory, hubsync.FromHub} {
		clitest.CheckPrinted(t, "source "+kind, Source{Kind: kind, Dir: h, Hub: h, KeyID: h, Team: h}.String())
	}

	// The remove prompt names the module and where it came from.
	tm := newTerm("n\n", true)
	removeRun(context.Background(), &RemoveOptions{IO: &tm.f.IO, ID: h, Confirm: tm.f.Confirm,
		Describe: func(context.Context, string) (*hubsync.ModuleInfo, error) { return in, nil }})
	clitest.CheckPrinted(t, "remove prompt", tm.err.String())
}
