package fsgate

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/station-dev/station/internal/wasmbuild"
)

// guest is the test guest compiled in a runtime that links WASI either as
// the station does (InstantiateWASI) or as wazero has it.
type guest struct {
	r        wazero.Runtime
	compiled wazero.CompiledModule
}

func newGuest(t *testing.T, station bool) *guest {
	t.Helper()
	wasm := wasmbuild.ForTest(t, "internal/fsgate/testdata/guest")
	ctx := context.Background()
	// The cache every test shares (wasmbuild.CacheForTest): the guest is
	// compiled once.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(wasmbuild.CacheForTest()))
	t.Cleanup(func() { r.Close(ctx) })
	var err error
	if station {
		_, err = InstantiateWASI(ctx, r)
	} else {
		_, err = wasi_snapshot_preview1.Instantiate(ctx, r)
	}
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return &guest{r: r, compiled: compiled}
}

// run runs the guest in a fresh instance with fsc, one operation per
// argument, relative paths resolved from pwd (if not ""), and returns its
// output.
func (g *guest) run(t *testing.T, fsc wazero.FSConfig, pwd string, ops ...string) string {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithArgs(append([]string{"guest"}, ops...)...).
		WithStdout(&out).
		WithStderr(&out).
		WithFSConfig(fsc).
		WithStartFunctions("_initialize")
	if pwd != "" {
		cfg = cfg.WithEnv("PWD", pwd)
	}
	mod, err := g.r.InstantiateModule(ctx, g.compiled, cfg)
	if err != nil {
		t.Fatalf("instantiate: %v\n%s", err, out.String())
	}
	defer mod.Close(ctx)
	if _, err := mod.ExportedFunction("run").Call(ctx); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return out.String()
}

// gateConfig is how the station links e's gate into an instance: its file
// system is the only preopened directory, "/".
func gateConfig(t *testing.T, e *env) wazero.FSConfig {
	t.Helper()
	fsys, err := e.g.FS(e.hooks())
	if err != nil {
		t.Fatal(err)
	}
	return wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(fsys, "/")
}

// runGuest runs the test guest in a fresh wazero instance with e's gate
// linked as the station links it, one operation per argument, and returns
// its output with the base directory written as $T.
func runGuest(t *testing.T, e *env, ops ...string) string {
	t.Helper()
	for i, op := range ops {
		ops[i] = strings.ReplaceAll(op, "$T", e.base)
	}
	out := newGuest(t, true).run(t, gateConfig(t, e), "", ops...)
	return strings.ReplaceAll(out, e.base, "$T")
}

// TestGuest runs the attacks through wazero from a Go guest using the os
// package, as a module would.
func TestGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	base := t.TempDir()
	tree(t, base, stdTree)
	tree(t, base, map[string]string{"w/": "", "w2/": ""})
	e := newEnv(t, base, []string{"$T/m/out/**", "$T/w/**"}, stdReads, 0)
	e.command = "e2e"
	before := snapshot(t, base, "m/out", "w")
	got := runGuest(t, e,
		"write|$T/m/out/new.txt|hello",
		"read|$T/m/out/new.txt",
		"read|$T/m/notes.txt",
		"ls|$T/m",
		"ls|$T/m/out",
		"stat|$T/m/out/new.txt",
		"write|$T/m/notes.txt|x",
		"write|$T/m/out2/b.txt|x",
		"write|$T/m/out.bak|x",
		"read|$T/m/secret/key",
		"stat|$T/m/out2",
		"ls|$T/m/secret",
		"read|$T/outside.txt",
		"write|$T/m/out/../../outside.txt|x",
		"write|$T/station/state.db|x",
		"truncopen|$T/m/notes.txt",
		"ftruncate|$T/m/notes.txt",
		"truncate|$T/m/notes.txt|0",
		"chtimes|$T/m/notes.txt",
		"chtimes|$T/m/out/new.txt",
		"symlink|$T/m/out/s|../../outside.txt",
		"symlink|$T/m/out/s|/etc/passwd",
		"symlink|$T/m/out/s|../out2/b.txt",
		"write|$T/m/out/s|x",
		"readlink|$T/m/out/s",
		"symlink|$T/m/out/s2|a.txt",
		"read|$T/m/out/s2",
		"link|$T/m/out/n|$T/m/notes.txt",
		"link|$T/m/out/a2|$T/m/out/a.txt",
		"rename|$T/m/out/a.txt|$T/m/out2/a.txt",
		"rename|$T/m/notes.txt|$T/m/out/notes.txt",
		"mkdirall|$T/m/out/x/y/z",
		"rm|$T/m/out/x/y/z",
		"mkdir|$T/m/out3",
		"rm|$T/m/out.bak",
		"openat|$T/m/out|sub/../a2",
		"openat|$T/m/out/sub|../../notes.txt", // wazero's WASI layer refuses "..": the gate does
		"openat|$T/m/out/sub|../../../outside.txt",
		"chdir|$T/m/out/x",
		"write|rel.txt|r",
		"write|../../notes.txt|x",
		"write|$T/w2/x|x",
		"append|$T/w/log|1",
		"ls|$T/w",
		"readlink|$T/m/out/s2",
	)
	want := `write $T/m/out/new.txt: ok
read $T/m/out/new.txt: ok "hello"
read $T/m/notes.txt: ok "notes"
ls $T/m: ok notes.txt,out
ls $T/m/out: ok a.txt,new.txt,sub
stat $T/m/out/new.txt: ok ---------- 5
write $T/m/notes.txt: open $T/m/notes.txt: Operation not permitted
write $T/m/out2/b.txt: open $T/m/out2/b.txt: Operation not permitted
write $T/m/out.bak: open $T/m/out.bak: Operation not permitted
read $T/m/secret/key: open $T/m/secret/key: Permission denied
stat $T/m/out2: stat $T/m/out2: Permission denied
ls $T/m/secret: open $T/m/secret: Permission denied
read $T/outside.txt: open $T/outside.txt: Permission denied
write $T/m/out/../../outside.txt: open $T/m/out/../../outside.txt: Operation not permitted
write $T/station/state.db: open $T/station/state.db: Operation not permitted
truncopen $T/m/notes.txt: open $T/m/notes.txt: Operation not permitted
ftruncate $T/m/notes.txt: truncate $T/m/notes.txt: Bad file number
truncate $T/m/notes.txt: truncate $T/m/notes.txt: Operation not permitted
chtimes $T/m/notes.txt: chtimes $T/m/notes.txt: Operation not permitted
chtimes $T/m/out/new.txt: ok
symlink $T/m/out/s: symlink ../../outside.txt $T/m/out/s: Operation not permitted
symlink $T/m/out/s: symlink /etc/passwd $T/m/out/s: Operation not permitted
symlink $T/m/out/s: ok
write $T/m/out/s: open $T/m/out/s: Operation not permitted
readlink $T/m/out/s: readlink $T/m/out/s: Permission denied
symlink $T/m/out/s2: ok
read $T/m/out/s2: ok "a"
link $T/m/out/n: link $T/m/notes.txt $T/m/out/n: Operation not permitted
link $T/m/out/a2: ok
rename $T/m/out/a.txt: rename $T/m/out/a.txt $T/m/out2/a.txt: Operation not permitted
rename $T/m/notes.txt: rename $T/m/notes.txt $T/m/out/notes.txt: Operation not permitted
mkdirall $T/m/out/x/y/z: ok
rm $T/m/out/x/y/z: ok
mkdir $T/m/out3: mkdir $T/m/out3: Operation not permitted
rm $T/m/out.bak: remove $T/m/out.bak: Operation not permitted
openat $T/m/out: ok
openat $T/m/out/sub: Permission denied
openat $T/m/out/sub: Permission denied
chdir $T/m/out/x: ok
write rel.txt: ok
write ../../notes.txt: open ../../notes.txt: Operation not permitted
write $T/w2/x: open $T/w2/x: Operation not permitted
append $T/w/log: ok
ls $T/w: ok log
readlink $T/m/out/s2: ok a.txt
`
	if got != want {
		t.Errorf("guest output:\n%s\nwant:\n%s", got, want)
	}
	for _, want := range []string{
		"allow $T/m/out/new.txt: open for writing (create, truncate) (allowed by $T/m/out/**)\n",
		"deny $T/m/out2/b.txt: is not in its write allowlist ($T/m/out/**, $T/w/**) (resolved from $T/m/out/s)\n",
		"deny $T/m/out/s: is a symlink whose target (../../outside.txt) leaves the mount\n",
		"allow $T/m/out/x/rel.txt: open for writing (create, truncate) (allowed by $T/m/out/**)\n",
		"deny $T/outside.txt: is not in its read allowlist ($T/m/out/**, $T/w/**, $T/m/notes.txt)\n",
		"deny $T/station/state.db: is not in its write allowlist ($T/m/out/**, $T/w/**)\n",
		"deny $T/w2/x: is not in its write allowlist ($T/m/out/**, $T/w/**)\n",
		"deny $T/m/out/sub/../../notes.txt: leads out of its directory descriptor with \"..\"\n",
		"deny $T/m/out/s: is a symlink whose target is not in its read allowlist ($T/m/out/**, $T/w/**, $T/m/notes.txt)\n",
	} {
		if !strings.Contains(summary(e.rec, base), want) {
			t.Errorf("no decision %q in\n%s", want, summary(e.rec, base))
		}
	}
	for _, d := range e.rec.All() {
		if d.Command != "e2e" || d.Module != "dave/probe" {
			t.Errorf("decision %+v: wrong attribution", d)
		}
	}
	unchanged(t, base, before, "m/out", "w")
	if _, err := os.Stat(base + "/w2/x"); err == nil {
		t.Error("the guest wrote $T/w2/x")
	}
}
