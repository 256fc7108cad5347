package fsgate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
)

// openFDs counts the descriptors the test process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// budgetEnv is a gate over a tree with the given budgets.
func budgetEnv(t *testing.T, o Options) (*Gate, string, *fixture.Recorder) {
	t.Helper()
	base := t.TempDir()
	tree(t, base, map[string]string{"out/": "", "out/a.txt": "a", "out/b.txt": "b"})
	rec := &fixture.Recorder{}
	o.Module = "dave/hoarder"
	o.Writes = []string{base + "/out/**"}
	o.Recorder = rec
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, base, rec
}

// limitHooks are hooks that collect the refusals over a limit.
func limitHooks(mu *sync.Mutex, got *[]*sandbox.LimitError) Hooks {
	return Hooks{Limited: func(le *sandbox.LimitError) {
		mu.Lock()
		*got = append(*got, le)
		mu.Unlock()
	}}
}

// A module that opens files without closing them is refused past its
// instance's budget, then past its module's, then past what all modules
// share, each with EMFILE (ENFILE for the shared budget) as the guest sees
// it, an audited refusal naming the module, and the limit; closing gives
// the descriptors back, and the process's descriptors are where they were.
func TestOpenFileBudgets(t *testing.T) {
	shared := NewDescriptors(8)
	g, base, rec := budgetEnv(t, Options{OpenFilesPerInstance: 3, OpenFiles: 5, Descriptors: shared})
	other, otherBase, _ := budgetEnv(t, Options{Descriptors: shared})
	var mu sync.Mutex
	var limits []*sandbox.LimitError
	fsA, _ := g.FS(limitHooks(&mu, &limits))
	fsB, _ := g.FS(limitHooks(&mu, &limits))
	fsC, _ := other.FS(Hooks{})
	before := openFDs(t) // the mount roots are open now
	a := strings.TrimPrefix(base, "/") + "/out/a.txt"
	open := func(fsys experimentalsys.FS) (experimentalsys.File, errno) {
		if fsys == fsC {
			return fsys.OpenFile(strings.TrimPrefix(otherBase, "/")+"/out/a.txt", experimentalsys.O_RDONLY, 0)
		}
		return fsys.OpenFile(a, experimentalsys.O_RDONLY, 0)
	}
	var held []experimentalsys.File
	for i := range 3 {
		f, e := open(fsA)
		if e != 0 {
			t.Fatalf("open %d in instance A: errno %v", i, e)
		}
		held = append(held, f)
	}
	if _, e := open(fsA); e != errTooManyOpen {
		t.Fatalf("4th open in instance A: errno %v, want the open-file refusal", e)
	}
	if n, ok := fsA.(limiter).limitErrno(); !ok || n != wasiEMFILE {
		t.Errorf("instance A's pending errno %d, want EMFILE (%d)", n, wasiEMFILE)
	}
	for i := range 2 {
		f, e := open(fsB)
		if e != 0 {
			t.Fatalf("open %d in instance B: errno %v", i, e)
		}
		held = append(held, f)
	}
	if _, e := open(fsB); e != errTooManyOpen {
		t.Fatalf("6th open of the module: errno %v, want the open-file refusal", e)
	}
	for i := range 3 {
		f, e := open(fsC)
		if e != 0 {
			t.Fatalf("open %d of the other module: errno %v", i, e)
		}
		held = append(held, f)
	}
	if _, e := open(fsC); e != errTooManyOpen {
		t.Fatalf("9th open of the process: errno %v, want the shared budget's refusal", e)
	}
	if n, ok := fsC.(limiter).limitErrno(); !ok || n != wasiENFILE {
		t.Errorf("the other module's pending errno %d, want ENFILE (%d)", n, wasiENFILE)
	}
	if got := openFDs(t) - before; got != 8 {
		t.Errorf("%d descriptors more than before, want the 8 files held", got)
	}

	want := []string{
		"would exceed its limit of 3 open files per instance; close the files it no longer needs",
		"would exceed its limit of 5 open files over all its instances",
	}
	keys := []string{"filesystem.open_files_per_instance", "filesystem.open_files"}
	if len(limits) != 2 {
		t.Fatalf("%d refusals reported to the instances, want 2: %v", len(limits), limits)
	}
	for i, le := range limits {
		if le.Module != "dave/hoarder" || le.Capability != sandbox.Filesystem || le.Reason != want[i] || le.Target != base+"/out/a.txt" ||
			le.Key != keys[i] || le.KeyIn != sandbox.InConfig {
			t.Errorf("refusal %d: %+v", i, le)
		}
	}
	if le := limits[0]; le.Limit != 3 || le.Error() != `limit exceeded: module dave/hoarder: filesystem: "`+base+`/out/a.txt" `+want[0]+
		" (the operator can raise it with filesystem.open_files_per_instance in config.yaml)" {
		t.Errorf("refusal %q, limit %d", le.Error(), le.Limit)
	}
	var denied int
	for _, d := range rec.All() {
		if !d.Allowed {
			denied++
		}
	}
	if denied != 2 {
		t.Errorf("%d refusals in the audit, want 2:\n%s", denied, summary(rec, base))
	}

	// A file closed gives its descriptor back to every budget.
	held[0].Close()
	held[0].Close() // a second close gives nothing back twice
	f, e := open(fsC)
	if e != 0 {
		t.Fatalf("open after a close: errno %v", e)
	}
	held = append(held[1:], f)
	for _, f := range held {
		f.Close()
	}
	if g.OpenFiles() != 0 || other.OpenFiles() != 0 || shared.InUse() != 0 {
		t.Errorf("after closing all: module %d, other %d, shared %d in use", g.OpenFiles(), other.OpenFiles(), shared.InUse())
	}
	if got := openFDs(t); got != before {
		t.Errorf("%d descriptors open after closing all, %d before", got, before)
	}
}

// The attack as a guest makes it, through wazero's WASI: path_open in a
// loop on the preopen without closing. It gets EMFILE past its budget, and
// closing the instance (as the host does when it discards one) closes what
// it held and gives the budget back.
func TestOpenLoopThroughWASI(t *testing.T) {
	ctx := context.Background()
	g, base, _ := budgetEnv(t, Options{OpenFilesPerInstance: 10, OpenFiles: 10, Descriptors: NewDescriptors(1000)})
	before := openFDs(t)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := InstantiateWASI(ctx, r); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, base: base, g: g, rec: &fixture.Recorder{}}
	mod, err := r.InstantiateWithConfig(ctx, openerWasm(), wazero.NewModuleConfig().WithFSConfig(gateConfig(t, e)))
	if err != nil {
		t.Fatal(err)
	}
	p := strings.TrimPrefix(base, "/") + "/out/a.txt"
	mod.Memory().Write(64, []byte(p))
	var errnos []uint32
	for range 12 {
		res, err := mod.ExportedFunction("open").Call(ctx, 3, 0, 64, uint64(len(p)), 0, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		errnos = append(errnos, uint32(res[0]))
	}
	if got := fmt.Sprint(errnos); got != "[0 0 0 0 0 0 0 0 0 0 33 33]" {
		t.Errorf("path_open in a loop answered %s, want ten opens then EMFILE (33)", got)
	}
	if got := g.OpenFiles(); got != 10 {
		t.Errorf("%d files open, want 10", got)
	}
	mod.Close(ctx)
	if got := g.OpenFiles(); got != 0 {
		t.Errorf("%d files open after the instance closed, want 0", got)
	}
	if got := openFDs(t); got > before+1 { // the gate's mount root stays open
		t.Errorf("%d descriptors open after the instance closed, %d before", got, before)
	}
}

// Creating names counts against the entry limit — files, directories,
// symbolic and hard links — net of the names removed; opening an existing
// file with O_CREAT creates nothing; the refusal is EDQUOT, audited, and
// names the limit; the count starts from what the station stored.
func TestEntryLimit(t *testing.T) {
	g, base, rec := budgetEnv(t, Options{Entries: 5, Account: NewAccount(Usage{Entries: 1, Bytes: 3})})
	var mu sync.Mutex
	var limits []*sandbox.LimitError
	fsys, _ := g.FS(limitHooks(&mu, &limits))
	out := strings.TrimPrefix(base, "/") + "/out/"
	create := func(name string) errno {
		f, e := fsys.OpenFile(out+name, experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o644)
		if e == 0 {
			f.Close()
		}
		return e
	}
	if e := create("a.txt"); e != 0 { // exists: no entry
		t.Fatalf("O_CREAT of an existing file: errno %v", e)
	}
	steps := []struct {
		name string
		op   func() errno
	}{
		{"create", func() errno { return create("n1") }},
		{"mkdir", func() errno { return fsys.Mkdir(out+"d", 0o755) }},
		{"symlink", func() errno { return fsys.Symlink("a.txt", out+"l") }},
		{"link", func() errno { return fsys.Link(out+"n1", out+"h") }},
	}
	for _, s := range steps {
		if e := s.op(); e != 0 {
			t.Fatalf("%s: errno %v", s.name, e)
		}
	}
	if u := g.Usage(); u.Entries != 5 || u.Bytes != 3 {
		t.Errorf("usage %+v, want 5 entries (1 stored + 4) and the 3 stored bytes", u)
	}
	for _, s := range []struct {
		name string
		op   func() errno
	}{
		{"create", func() errno { return create("n2") }},
		{"create exclusive", func() errno {
			_, e := fsys.OpenFile(out+"n3", experimentalsys.O_WRONLY|experimentalsys.O_CREAT|experimentalsys.O_EXCL, 0o644)
			return e
		}},
		{"mkdir", func() errno { return fsys.Mkdir(out+"d2", 0o755) }},
		{"symlink", func() errno { return fsys.Symlink("a.txt", out+"l2") }},
		{"link", func() errno { return fsys.Link(out+"a.txt", out+"h2") }},
	} {
		if e := s.op(); e != errQuota {
			t.Errorf("%s over the limit: errno %v, want the entry refusal", s.name, e)
		}
		if n, _ := fsys.(limiter).limitErrno(); n != wasiEDQUOT {
			t.Errorf("%s over the limit: pending errno %d, want EDQUOT (%d)", s.name, n, wasiEDQUOT)
		}
	}
	for _, n := range []string{"n2", "n3", "d2", "l2", "h2"} {
		if _, err := os.Lstat(filepath.Join(base, "out", n)); err == nil {
			t.Errorf("%s was created over the limit", n)
		}
	}
	if len(limits) != 5 || limits[0].Reason != "would exceed its limit of 5 files and directories (5 in use)" || limits[0].Limit != 5 ||
		limits[0].Key != "filesystem.entries" || limits[0].KeyIn != sandbox.InConfig {
		t.Errorf("refusals: %v", limits)
	}
	if n := strings.Count(summary(rec, base), "deny "); n != 5 {
		t.Errorf("%d refusals audited, want 5:\n%s", n, summary(rec, base))
	}

	// Removing names makes room; a failed creation takes nothing.
	if e := fsys.Unlink(out + "h"); e != 0 {
		t.Fatal(e)
	}
	if e := fsys.Rmdir(out + "d"); e != 0 {
		t.Fatal(e)
	}
	if e := fsys.Mkdir(out+"n1", 0o755); e != experimentalsys.EEXIST {
		t.Fatalf("mkdir over a file: errno %v", e)
	}
	if u := g.Usage(); u.Entries != 3 {
		t.Errorf("after two removals and a failed mkdir: %d entries, want 3", u.Entries)
	}
	// A rename over an existing name removes one.
	if e := fsys.Rename(out+"n1", out+"b.txt"); e != 0 {
		t.Fatal(e)
	}
	if u := g.Usage(); u.Entries != 2 {
		t.Errorf("after a rename over a name: %d entries, want 2", u.Entries)
	}
	gen := g.acct.Generation()
	if e := create("n4"); e != 0 {
		t.Fatal(e)
	}
	if g.acct.Generation() == gen {
		t.Error("the generation did not change with the usage")
	}
}

// The gates of two versions of a module share one account: what either
// creates counts against the same limit.
func TestAccountShared(t *testing.T) {
	acct := NewAccount(Usage{})
	g1, base, _ := budgetEnv(t, Options{Entries: 2, Account: acct})
	g2, err := New(Options{Module: "dave/hoarder", Writes: []string{base + "/out/**"}, Entries: 2, Account: acct})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	out := strings.TrimPrefix(base, "/") + "/out/"
	fs1, _ := g1.FS(Hooks{})
	fs2, _ := g2.FS(Hooks{})
	if e := fs1.Mkdir(out+"x", 0o755); e != 0 {
		t.Fatal(e)
	}
	if e := fs2.Mkdir(out+"y", 0o755); e != 0 {
		t.Fatal(e)
	}
	if e := fs2.Mkdir(out+"z", 0o755); e != errQuota {
		t.Errorf("third name over both versions: errno %v, want the entry refusal", e)
	}
	if u := acct.Usage(); u.Entries != 2 {
		t.Errorf("the account holds %d entries, want 2", u.Entries)
	}
}

// Concurrent creations never pass the limit.
func TestEntryLimitConcurrent(t *testing.T) {
	g, base, _ := budgetEnv(t, Options{Entries: 50})
	out := strings.TrimPrefix(base, "/") + "/out/"
	var wg sync.WaitGroup
	for w := range 8 {
		fsys, _ := g.FS(Hooks{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if f, e := fsys.OpenFile(fmt.Sprintf("%sw%d-%d", out, w, i), experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o644); e == 0 {
					f.Close()
				}
			}
		}()
	}
	wg.Wait()
	names, _ := os.ReadDir(filepath.Join(base, "out"))
	if created := len(names) - 2; created != 50 || g.Usage().Entries != 50 {
		t.Errorf("%d files created, %d counted; want 50 and 50", created, g.Usage().Entries)
	}
}

func TestReserve(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int64
	}{{1024, 512}, {20000, 5000}, {1 << 20, 1 << 18}, {256, 128}, {1<<63 - 1, 1 << 38}} {
		if got := Reserve(c.limit); got != c.want {
			t.Errorf("Reserve(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
	var want uint64
	if d := ProcessDescriptors(); d.Limit() <= 0 {
		t.Errorf("the process budget is %d", d.Limit())
	}
	want = RaiseOpenFileLimit()
	var lim [2]uint64
	b, _ := os.ReadFile("/proc/self/limits")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			fmt.Sscan(strings.TrimSpace(strings.TrimPrefix(l, "Max open files")), &lim[0], &lim[1])
		}
	}
	if lim[0] != want || (lim[1] != 0 && lim[0] != lim[1]) {
		t.Errorf("soft limit %d (hard %d), RaiseOpenFileLimit says %d: the soft limit is not the hard one", lim[0], lim[1], want)
	}
	if d := ProcessDescriptors(); uint64(d.ProcessLimit()) != min(want, 1<<40) || d.Limit() != d.ProcessLimit()-Reserve(want) {
		t.Errorf("the process budget is %d of %d, want the limit %d less its reserve %d", d.Limit(), d.ProcessLimit(), want, Reserve(want))
	}
}

// A module may not take more than a quarter of a small process share.
func TestOpenFilesCappedByShare(t *testing.T) {
	g, _, _ := budgetEnv(t, Options{Descriptors: NewDescriptors(200)})
	if l := g.Limits(); l.OpenFiles != 50 || l.OpenFilesPerInstance != 50 {
		t.Errorf("limits %+v under a share of 200, want 50 open files, 50 per instance", l)
	}
}

// Directories above the mount roots use no host descriptor but memory:
// they count against the instance's and the module's budgets, except the
// one "/" wazero keeps for the preopen.
func TestAboveDirsCounted(t *testing.T) {
	g, _, _ := budgetEnv(t, Options{OpenFilesPerInstance: 3, Descriptors: NewDescriptors(1000)})
	fsys, _ := g.FS(Hooks{})
	var held []experimentalsys.File
	for i := range 4 {
		d, e := fsys.OpenFile("/", experimentalsys.O_RDONLY, 0)
		if e != 0 {
			t.Fatalf("open / #%d: errno %v", i, e)
		}
		held = append(held, d)
	}
	if _, e := fsys.OpenFile("/", experimentalsys.O_RDONLY, 0); e != errTooManyOpen {
		t.Errorf("5th open of /: errno %v, want the open-file refusal", e)
	}
	if OpenIn(fsys) != 3 {
		t.Errorf("OpenIn = %d, want 3 (the first / is free)", OpenIn(fsys))
	}
	for _, d := range held {
		d.Close()
	}
	if OpenIn(fsys) != 0 || g.OpenFiles() != 0 {
		t.Errorf("after closing: OpenIn %d, module %d", OpenIn(fsys), g.OpenFiles())
	}
}

// CloseFiles closes what an instance still holds (wazero does not, when a
// deadline closed the instance and the guest then trapped), and a later
// close by wazero gives nothing back twice.
func TestCloseFiles(t *testing.T) {
	shared := NewDescriptors(1000)
	g, base, _ := budgetEnv(t, Options{Descriptors: shared})
	fsys, _ := g.FS(Hooks{})
	before := openFDs(t)
	a := strings.TrimPrefix(base, "/") + "/out/a.txt"
	var held []experimentalsys.File
	for range 5 {
		f, e := fsys.OpenFile(a, experimentalsys.O_RDONLY, 0)
		if e != 0 {
			t.Fatal(e)
		}
		held = append(held, f)
	}
	d, _ := fsys.OpenFile("/", experimentalsys.O_RDONLY, 0)
	d2, _ := fsys.OpenFile("/", experimentalsys.O_RDONLY, 0)
	held = append(held, d, d2)
	CloseFiles(fsys)
	CloseFiles(fsys)
	if g.OpenFiles() != 0 || shared.InUse() != 0 || OpenIn(fsys) != 0 {
		t.Errorf("after CloseFiles: module %d, shared %d, instance %d", g.OpenFiles(), shared.InUse(), OpenIn(fsys))
	}
	if got := openFDs(t); got != before {
		t.Errorf("%d descriptors open after CloseFiles, %d before the files", got, before)
	}
	for _, f := range held {
		f.Close()
	}
	if g.OpenFiles() != 0 || shared.InUse() != 0 {
		t.Errorf("a second close gave back twice: module %d, shared %d", g.OpenFiles(), shared.InUse())
	}
}

// An O_CREAT open of a name another instance keeps removing and creating
// never creates a name it does not count.
func TestEntryCountUnderCreateUnlinkRace(t *testing.T) {
	g, base, _ := budgetEnv(t, Options{Entries: 100000})
	out := strings.TrimPrefix(base, "/") + "/out/"
	fs1, _ := g.FS(Hooks{})
	fs2, _ := g.FS(Hooks{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 2000 {
			if f, e := fs1.OpenFile(out+"x", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o644); e == 0 {
				f.Close()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 2000 {
			fs2.Unlink(out + "x")
		}
	}()
	wg.Wait()
	names, _ := os.ReadDir(filepath.Join(base, "out"))
	if want := int64(len(names) - 2); g.Usage().Entries != want {
		t.Errorf("%d entries counted, %d names created on disk", g.Usage().Entries, want)
	}
}

// fd_renumber to a huge descriptor number is refused (EBADF) instead of
// growing wazero's table in host memory.
func TestRenumberBounded(t *testing.T) {
	ctx := context.Background()
	typ := []byte{0x60, 2, 0x7f, 0x7f, 1, 0x7f}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	section := func(id byte, content []byte) []byte { return append([]byte{id, byte(len(content))}, content...) }
	var imp, exp []byte
	imp = append(append(append([]byte{1}, name("wasi_snapshot_preview1")...), name("fd_renumber")...), 0, 0)
	exp = append(append([]byte{1}, name("renumber")...), 0, 1)
	body := []byte{0, 0x20, 0, 0x20, 1, 0x10, 0, 0x0b}
	var wasm []byte
	wasm = append(wasm, "\x00asm\x01\x00\x00\x00"...)
	wasm = append(wasm, section(1, append([]byte{1}, typ...))...)
	wasm = append(wasm, section(2, imp)...)
	wasm = append(wasm, section(3, []byte{1, 0})...)
	wasm = append(wasm, section(7, exp)...)
	wasm = append(wasm, section(10, append([]byte{1, byte(len(body))}, body...))...)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := InstantiateWASI(ctx, r); err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction("renumber").Call(ctx, 1, 1<<26)
	if err != nil || res[0] != wasiEBADF {
		t.Errorf("fd_renumber(1, 1<<26) = %v, %v; want EBADF (%d)", res, err, wasiEBADF)
	}
	// A small target reaches wazero's own fd_renumber (which does not
	// renumber stdout: ENOTSUP).
	res, err = mod.ExportedFunction("renumber").Call(ctx, 1, 9)
	if err != nil || res[0] == wasiEBADF {
		t.Errorf("fd_renumber(1, 9) = %v, %v; want wazero's own answer", res, err)
	}
}
