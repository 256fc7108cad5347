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

// runGuest runs the test guest in a fresh wazero instance with e's gate
// mounted, one operation per argument, and returns its output with the
// base directory written as $T.
func runGuest(t *testing.T, e *env, ops ...string) string {
	t.Helper()
	wasm := wasmbuild.ForTest(t, "internal/fsgate/testdata/guest")
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := e.g.Mounts(e.hooks())
	if err != nil {
		t.Fatal(err)
	}
	fsc := wazero.NewFSConfig()
	for _, m := range ms {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(m.FS, m.Path)
	}
	var out bytes.Buffer
	args := []string{"guest"}
	for _, op := range ops {
		args = append(args, strings.ReplaceAll(op, "$T", e.base))
	}
	cfg := wazero.NewModuleConfig().
		WithArgs(args...).
		WithStdout(&out).
		WithStderr(&out).
		WithFSConfig(fsc).
		WithStartFunctions("_initialize")
	mod, err := r.InstantiateModule(ctx, compiled, cfg)
	if err != nil {
		t.Fatalf("instantiate: %v\n%s", err, out.String())
	}
	if _, err := mod.ExportedFunction("run").Call(ctx); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return strings.ReplaceAll(out.String(), e.base, "$T")
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
		"openat|$T/m/out/sub|../../notes.txt", // wazero refuses ".." itself
		"openat|$T/m/out/sub|../../../outside.txt",
		"chdir|$T/m/out/x",
		"write|rel.txt|r",
		"write|../../notes.txt|x",
		"write|$T/w2/x|x",
		"append|$T/w/log|1",
		"ls|$T/w",
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
read $T/outside.txt: open $T/outside.txt: Bad file number
write $T/m/out/../../outside.txt: open $T/m/out/../../outside.txt: Bad file number
write $T/station/state.db: open $T/station/state.db: Bad file number
truncopen $T/m/notes.txt: open $T/m/notes.txt: Operation not permitted
ftruncate $T/m/notes.txt: truncate $T/m/notes.txt: Bad file number
truncate $T/m/notes.txt: truncate $T/m/notes.txt: Operation not permitted
chtimes $T/m/notes.txt: chtimes $T/m/notes.txt: Operation not permitted
chtimes $T/m/out/new.txt: ok
symlink $T/m/out/s: symlink ../../outside.txt $T/m/out/s: Operation not permitted
symlink $T/m/out/s: symlink /etc/passwd $T/m/out/s: Operation not permitted
symlink $T/m/out/s: ok
write $T/m/out/s: open $T/m/out/s: Operation not permitted
readlink $T/m/out/s: ok ../out2/b.txt
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
openat $T/m/out/sub: Operation not permitted
openat $T/m/out/sub: Operation not permitted
chdir $T/m/out/x: ok
write rel.txt: ok
write ../../notes.txt: open ../../notes.txt: Operation not permitted
write $T/w2/x: open $T/w2/x: No such file or directory
append $T/w/log: ok
ls $T/w: ok log
`
	if got != want {
		t.Errorf("guest output:\n%s\nwant:\n%s", got, want)
	}
	for _, want := range []string{
		"allow $T/m/out/new.txt: open for writing (create, truncate) (allowed by $T/m/out/**)\n",
		"deny $T/m/out2/b.txt: is not in its write allowlist ($T/m/out/**, $T/w/**) (resolved from $T/m/out/s)\n",
		"deny $T/m/out/s: is a symlink whose target (../../outside.txt) leaves the mount\n",
		"allow $T/m/out/x/rel.txt: open for writing (create, truncate) (allowed by $T/m/out/**)\n",
	} {
		if !strings.Contains(e.rec.summary(base), want) {
			t.Errorf("no decision %q in\n%s", want, e.rec.summary(base))
		}
	}
	for _, d := range e.rec.all() {
		if d.Command != "e2e" || d.Module != "dave/probe" {
			t.Errorf("decision %+v: wrong attribution", d)
		}
	}
	unchanged(t, base, before, "m/out", "w")
	if _, err := os.Stat(base + "/w2/x"); err == nil {
		t.Error("the guest wrote $T/w2/x")
	}
}
