package station_test

// Filesystem-write gate regression tests (issue 3, "Must hold" 2–5), through
// the probe: ordinary Go os calls over WASI, into the station's gate.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// fileState is what "byte-for-byte unchanged" means for one path.
type fileState struct {
	data  string
	mode  fs.FileMode
	mtime time.Time
	nlink uint64
	link  string
}

// snapshot records every path under dir except those under skip.
func snapshot(t *testing.T, dir string, skip ...string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s || strings.HasPrefix(p, s+"/") {
				return filepath.SkipDir
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		st := fileState{mode: fi.Mode(), mtime: fi.ModTime(), nlink: uint64(fi.Sys().(*syscall.Stat_t).Nlink)}
		if fi.Mode().Type() == fs.ModeSymlink {
			st.link, _ = os.Readlink(p)
		} else if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			st.data = string(b)
		}
		out[p] = st
		return nil
	})
	return out
}

func sameTree(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		if !ok {
			t.Errorf("%s was removed", p)
			continue
		}
		if a != b {
			t.Errorf("%s changed: before %+v, after %+v", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
}

// fsTree builds the directory the attacks run against:
//
//	d/secret.txt  d/out/keep.txt  d/out2/x.txt  d/out.bak  d/in/data.txt
//	d/out/planted -> ../secret.txt (planted before the module runs)
func fsTree(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, dir := range []string{"out", "out2", "in"} {
		os.Mkdir(filepath.Join(d, dir), 0o755)
	}
	for name, data := range map[string]string{"secret.txt": "secret", "out/keep.txt": "keep", "out2/x.txt": "x", "out.bak": "bak", "in/data.txt": "data"} {
		os.WriteFile(filepath.Join(d, name), []byte(data), 0o644)
	}
	os.Symlink("../secret.txt", filepath.Join(d, "out", "planted"))
	os.Symlink("../in", filepath.Join(d, "out", "planted-dir"))
	return d
}

type fsSpec struct {
	writes, reads []string
}

func (e *env) installFS(id string, spec fsSpec) {
	e.t.Helper()
	e.installWith(moduleSpec{id: id, allow: nil, extra: fmt.Sprintf("  filesystem_reads: [%s]\n", quoteAll(spec.reads)), writes: spec.writes}, probe.Wasm(e.t, probe.NoNetworkTag))
}

// attacks are the mutations a module must not be able to make outside its
// write grant, by any route.
func attacks(d string) []probe.Action {
	j := func(p string) string { return filepath.Join(d, p) }
	return []probe.Action{
		probe.Write(j("secret.txt"), "owned"),
		probe.Write(j("out/../secret.txt"), "owned"),
		probe.Write(j("out2/x.txt"), "owned"),
		probe.Write(j("out2/new.txt"), "owned"),
		probe.Write(j("out.bak"), "owned"),
		probe.Append(j("in/data.txt"), "owned"),
		probe.Truncate(j("in/data.txt"), 0),
		probe.Write(j("out/planted"), "owned"),          // planted symlink to d/secret.txt
		probe.Write(j("out/planted-dir/data.txt"), "x"), // planted symlink to d/in
		probe.Remove(j("secret.txt")),
		probe.Remove(j("in/data.txt")),
		probe.Rename(j("in/data.txt"), j("out/stolen.txt")),
		probe.Rename(j("out/keep.txt"), j("out2/keep.txt")),
		probe.Mkdir(j("out2/dir")),
		probe.Rmdir(j("out2")),
		probe.Symlink("/etc/passwd", j("out/escape")),
		probe.Link(j("secret.txt"), j("out/hard")),
		probe.Link(j("out/keep.txt"), j("out2/hard")),
		probe.Chtimes(j("in/data.txt")),
		probe.Chtimes(j("out/planted")),
		probe.Write(j("out/"+strings.Repeat("n", 300)), "long"),
		probe.Write(j("out/nul\x00.txt"), "nul"),
	}
}

// 2. A module with filesystem_writes: [] cannot create, change, rename or
// delete anything, by any route.
func TestNoWritesMeansNoWrites(t *testing.T) {
	t.Parallel()
	d := fsTree(t)
	e := newEnv(t, envOpts{})
	for _, spec := range []fsSpec{{}, {reads: []string{d + "/**"}}} {
		id := "test/nowrites-" + map[bool]string{true: "reads", false: "none"}[len(spec.reads) > 0]
		e.installFS(id, spec)
		before := snapshot(t, d)
		acts := append(attacks(d), probe.Write(filepath.Join(d, "out/new.txt"), "x"), probe.Mkdir(filepath.Join(d, "out/newdir")))
		res := e.mustProbe(id, acts...)
		for i, r := range res {
			if r.OK {
				t.Errorf("%s: action %d (%s %s) succeeded", id, i, acts[i].Op, acts[i].Path)
			}
		}
		sameTree(t, before, snapshot(t, d))
	}
}

// 3 and 4. A module with filesystem_writes: ["<d>/out/**"] can write exactly
// under out/ and nowhere else; every denial names the module, the
// capability, the path and the reason, and is in the audit log; files
// outside are unchanged.
func TestWritesExactlyUnderOut(t *testing.T) {
	t.Parallel()
	d := fsTree(t)
	e := newEnv(t, envOpts{})
	const id = "test/writer"
	// Reads of the whole tree put out2/, out.bak and the parent inside the
	// mount, so the gate itself (not a missing mount) must refuse them.
	e.installFS(id, fsSpec{writes: []string{d + "/out/**"}, reads: []string{d + "/**"}})
	before := snapshot(t, d, filepath.Join(d, "out"))
	acts := attacks(d)
	res := e.mustProbe(id, acts...)
	for i, r := range res {
		if r.OK {
			t.Errorf("action %d (%s %s -> %s) succeeded", i, acts[i].Op, acts[i].Path, acts[i].To)
		}
	}
	sameTree(t, before, snapshot(t, d, filepath.Join(d, "out")))
	if got, _ := os.ReadFile(filepath.Join(d, "out/keep.txt")); string(got) != "keep" {
		t.Errorf("out/keep.txt = %q after the attacks", got)
	}

	ok := e.mustProbe(id,
		probe.Write(filepath.Join(d, "out/new.txt"), "new"),
		probe.Mkdir(filepath.Join(d, "out/sub")),
		probe.Write(filepath.Join(d, "out/sub/deep.txt"), "deep"),
		probe.Append(filepath.Join(d, "out/new.txt"), "+"),
		probe.Rename(filepath.Join(d, "out/new.txt"), filepath.Join(d, "out/sub/moved.txt")),
		probe.Read(filepath.Join(d, "in/data.txt")),
		probe.Remove(filepath.Join(d, "out/sub/deep.txt")),
	)
	for i, r := range ok {
		if !r.OK {
			t.Errorf("allowed action %d: %+v", i, r.Error)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(d, "out/sub/moved.txt")); string(got) != "new+" {
		t.Errorf("out/sub/moved.txt = %q, want new+", got)
	}

	denied := e.audit(store.AuditFilter{Module: id, DeniedOnly: true})
	if len(denied) == 0 {
		t.Fatal("no denials in the audit log")
	}
	for _, r := range denied {
		if r.Capability != sandbox.Filesystem || r.Command != probe.Command || r.Reason == "" || !strings.Contains(r.Target, d) {
			t.Errorf("denial %+v: want capability filesystem, command run, a reason and the path", r)
		}
	}
	// The guest saw a permission error, and a failed command reports the violation.
	if e := res[0].Error; e == nil || !strings.Contains(strings.ToLower(e.Message), "not permitted") {
		t.Errorf("write of secret.txt: guest error %+v, want a permission error", res[0].Error)
	}
}

// 5. The gate lines at load match what is enforced.
func TestFilesystemGateLogLine(t *testing.T) {
	t.Parallel()
	d := fsTree(t)
	e := newEnv(t, envOpts{})
	e.installFS("test/logline", fsSpec{writes: []string{d + "/out/**"}})
	e.mustProbe("test/logline") // loads it
	log := e.gateLog("test/logline")
	if !strings.Contains(log, "filesystem-write gate active — allow: "+d+"/out/**") || !strings.Contains(log, "subprocess gate CLOSED") {
		t.Errorf("gate log:\n%s", log)
	}
}

// Install refuses over-broad globs unless the operator grants them in
// config.yaml, exactly as written.
func TestBroadGlobNeedsOperatorGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	dir := e.moduleDir(moduleSpec{id: "test/broad", writes: []string{"/var/lib/station-test/**"}}, probe.Wasm(t, probe.NoNetworkTag))
	err := e.tryInstall(dir)
	if err == nil || !strings.Contains(err.Error(), "/var") || !strings.Contains(err.Error(), "operator") {
		t.Fatalf("install with /var/lib/...: got %v, want a refusal naming the entry and the operator grant", err)
	}
	cfg, _ := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	cfg = append(cfg, "filesystem:\n  grant: [\"/var/lib/station-test/**\"]\n"...)
	os.WriteFile(filepath.Join(e.home, "config.yaml"), cfg, 0o600)
	e.reopen()
	err = e.tryInstall(dir)
	// With the grant, the manifest is accepted; the gate then needs the
	// directory to exist.
	if err != nil && !strings.Contains(err.Error(), "station-test") {
		t.Fatalf("install with the operator's grant: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "operator grant") {
		t.Fatalf("the grant was not applied: %v", err)
	}
}

// What a module's files take is stored with the station: its entry limit
// and its quota hold across a restart, not only within one process.
func TestUsageOutlivesRestart(t *testing.T) {
	t.Parallel()
	d := fsTree(t)
	e := newEnv(t, envOpts{})
	cfg, _ := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	cfg = append(cfg, "filesystem:\n  entries: 10\n  quota: 1MiB\n"...)
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	const id = "test/hoarder"
	e.installFS(id, fsSpec{writes: []string{d + "/out/**"}})
	dir := filepath.Join(d, "out", "many")
	res := e.mustProbe(id, probe.Mkdir(dir), probe.Write(filepath.Join(dir, "big"), strings.Repeat("x", 1000)), probe.CreateMany(dir, 100))
	if !res[0].OK || !res[1].OK || res[2].OK || res[2].Data != "8" {
		t.Fatalf("first process: %+v, want the directory, the file and 8 more files", res)
	}
	if e := res[2].Error; e == nil || !strings.Contains(strings.ToLower(e.Message), "quota exceeded") {
		t.Errorf("the creation over the limit failed with %+v, want EDQUOT", e)
	}
	e.reopen()
	u, err := e.st.Store.LoadUsage(context.Background(), id)
	if err != nil || u.Entries != 10 || u.Bytes != 1000 {
		t.Errorf("stored usage %+v (%v), want 10 entries and 1000 bytes", u, err)
	}
	res = e.mustProbe(id, probe.CreateMany(filepath.Join(d, "out"), 1))
	if res[0].OK {
		t.Error("after a restart the module created a file past its entry limit")
	}
	// Removing a file gives its entry and its bytes back, and that is
	// stored too.
	res = e.mustProbe(id, probe.Remove(filepath.Join(dir, "big")), probe.CreateMany(filepath.Join(d, "out"), 2))
	if !res[0].OK || res[1].Data != "1" {
		t.Errorf("after a removal: %+v, want one file created", res)
	}
	e.reopen()
	if u, _ := e.st.Store.LoadUsage(context.Background(), id); u.Entries != 10 || u.Bytes != 0 {
		t.Errorf("stored usage %+v after the removal, want 10 entries and 0 bytes", u)
	}
}

// Two station processes on one home (the daemon and a `station run
// --no-daemon`) add to one stored usage instead of overwriting each
// other's, and each takes in what the other added within a second.
func TestUsageTwoProcesses(t *testing.T) {
	t.Parallel()
	d := fsTree(t)
	e := newEnv(t, envOpts{})
	cfg, _ := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), append(cfg, "filesystem:\n  entries: 10\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	const id = "test/twice"
	e.installFS(id, fsSpec{writes: []string{d + "/out/**"}})
	first, second := e.st, func() *station.Station {
		st, err := station.Open(context.Background(), e.home, station.Options{Cache: testCache(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close(context.Background()) })
		return st
	}()
	run := func(st *station.Station, acts ...probe.Action) []probe.Result {
		t.Helper()
		out, err := st.Run(context.Background(), id, probe.Command, probe.Run(acts...))
		if err != nil {
			t.Fatal(err)
		}
		res, err := probe.Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	os.Mkdir(filepath.Join(d, "out", "a"), 0o755)
	os.Mkdir(filepath.Join(d, "out", "b"), 0o755)
	run(first, probe.List(filepath.Join(d, "out"))) // both load the module, and its usage (none)
	run(second, probe.List(filepath.Join(d, "out")))
	if res := run(first, probe.CreateMany(filepath.Join(d, "out", "a"), 5)); res[0].Data != "5" {
		t.Fatalf("first: %+v", res)
	}
	if err := first.Close(context.Background()); err != nil { // saves
		t.Fatal(err)
	}
	if res := run(second, probe.CreateMany(filepath.Join(d, "out", "b"), 3)); res[0].Data != "3" {
		t.Fatalf("second: %+v", res)
	}
	time.Sleep(1500 * time.Millisecond) // the saver adds the second's 3 and takes in the first's 5
	res := run(second, probe.Mkdir(filepath.Join(d, "out", "c")), probe.CreateMany(filepath.Join(d, "out", "c"), 10))
	if !res[0].OK || res[1].Data != "1" {
		t.Errorf("second, after taking in the first's count: %+v, want the directory and one file (10 names)", res)
	}
	u, err := second.Store.LoadUsage(context.Background(), id)
	if err != nil || u.Entries < 8 {
		t.Errorf("stored usage %+v (%v), want both processes' names", u, err)
	}
}
