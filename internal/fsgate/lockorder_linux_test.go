package fsgate

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/station-dev/station/internal/sandbox"
)

// lockTest is a module with two gates (two versions loaded at once) that
// share one account, and two instances of each: what the lock order of
// gate.go is about.
type lockTest struct {
	base  string
	acct  *Account
	gates []*Gate
	fs    []experimentalsys.FS
	inst  []*instanceState
}

func newLockTest(t *testing.T, rec sandbox.Recorder, o Options) *lockTest {
	t.Helper()
	base := t.TempDir()
	tree(t, base, map[string]string{"m/out/": "", "m/out/d/": "", "m/notes.txt": "notes"})
	lt := &lockTest{base: base, acct: NewAccount(Usage{})}
	for range 2 {
		o.Module, o.Writes, o.Reads = "dave/locks", []string{base + "/m/out/**"}, []string{base + "/m/notes.txt"}
		o.Recorder, o.Account = rec, lt.acct
		g, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		lt.gates = append(lt.gates, g)
		for range 2 {
			fsys, err := g.FS(Hooks{Call: func() *sandbox.Call { return &sandbox.Call{Command: "run"} }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { CloseFiles(fsys) })
			lt.fs = append(lt.fs, under(fsys, filepath.Join(base, "m")))
			lt.inst = append(lt.inst, fsys.(interface{ state() *instanceState }).state())
		}
	}
	return lt
}

// ops is one of everything a guest can do to names, sizes and open files:
// allowed, denied and over the limits.
func ops(fsys experimentalsys.FS, i int) {
	n := fmt.Sprintf("out/f%d", i%7)
	put(fsys, n, wronly|creat|trunc, "0123456789")
	put(fsys, n, wronly|appnd, "more")
	if f, e := fsys.OpenFile(n, rdwr, 0); e == 0 {
		f.Truncate(int64(i % 3 * 100))
		f.Close()
	}
	fsys.Rename(n, fmt.Sprintf("out/d/f%d", i%5))
	fsys.Rename("out/d", "out/e")
	fsys.Rename("out/e", "out/d")
	fsys.Mkdir(fmt.Sprintf("out/dir%d", i%4), 0o755)
	fsys.Rmdir(fmt.Sprintf("out/dir%d", (i+1)%4))
	fsys.Link(fmt.Sprintf("out/d/f%d", i%5), fmt.Sprintf("out/l%d", i%3))
	fsys.Symlink("d", fmt.Sprintf("out/s%d", i%3))
	fsys.Unlink(fmt.Sprintf("out/l%d", (i+1)%3))
	fsys.Unlink(fmt.Sprintf("out/s%d", (i+2)%3))
	fsys.Unlink(fmt.Sprintf("out/d/f%d", (i+3)%5))
	put(fsys, "notes.txt", wronly, "denied")                             // a denial
	fsys.Rename("notes.txt", "out/stolen")                               // a denial under the exclusive lock
	put(fsys, "out/big", wronly|creat|trunc, string(make([]byte, 4096))) // over the quota
	var held []experimentalsys.File
	for range 4 { // over the open-file budgets
		if f, e := fsys.OpenFile("notes.txt", rdonly, 0); e == 0 {
			held = append(held, f)
		}
	}
	for _, f := range held {
		f.Close()
	}
	fsys.Stat("out/d")
}

var lockOpts = Options{QuotaBytes: 2048, Entries: 6, OpenFiles: 5, OpenFilesPerInstance: 3, Descriptors: NewDescriptors(1000)}

// The recorder and the hooks are never called with the account's size lock
// or an instance's lock held (they may block, and they may be anything the
// host wires in): on one goroutine, every decision finds both free. The
// namespace lock may be held; the recorder must not call into the gate.
func TestRecorderRunsOutsideTheInnerLocks(t *testing.T) {
	var lt *lockTest
	decisions := 0
	seen := map[string]bool{}
	rec := sandbox.RecorderFunc(func(d sandbox.Decision) {
		decisions++
		for _, what := range []string{"disk quota", "open files per instance", "open files over all", "files and directories", "not in its write allowlist", "rename"} {
			if strings.Contains(d.Reason, what) {
				seen[what] = true
			}
		}
		if !lt.acct.mu.TryLock() {
			t.Errorf("recorded %q %q with Account.mu held", d.Target, d.Reason)
		} else {
			lt.acct.mu.Unlock()
		}
		for i, s := range lt.inst {
			if !s.mu.TryLock() {
				t.Errorf("recorded %q %q with instance %d's lock held", d.Target, d.Reason, i)
			} else {
				s.mu.Unlock()
			}
		}
	})
	lt = newLockTest(t, rec, lockOpts)
	for i := range 20 {
		ops(lt.fs[i%len(lt.fs)], i)
	}
	// Over the module's budget: files held by one instance, opened by another.
	var held []experimentalsys.File
	for _, fsys := range lt.fs[:2] {
		for range 3 {
			if f, e := fsys.OpenFile("notes.txt", rdonly, 0); e == 0 {
				held = append(held, f)
			}
		}
	}
	for _, f := range held {
		f.Close()
	}
	if decisions < 100 || len(seen) != 6 {
		t.Fatalf("%d decisions, of kinds %v: the operations did not all run", decisions, seen)
	}
}

// Every operation of two versions' instances at once, with the host reading
// and adding to the account, finishes: the locks are always taken in the
// order gate.go states, so no two operations wait for each other. (Under
// the race detector this is also the test of what the locks guard.)
func TestLockOrderDoesNotDeadlock(t *testing.T) {
	lt := newLockTest(t, nil, lockOpts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for _, fsys := range lt.fs { // an instance runs one guest operation at a time
			wg.Go(func() {
				for i := range 50 {
					ops(fsys, i)
				}
			})
		}
		wg.Go(func() { // the host's saver
			for range 200 {
				lt.acct.Add(Usage{Bytes: 1})
				lt.acct.Usage()
				lt.acct.Generation()
			}
		})
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the operations did not finish: a deadlock")
	}
	for _, s := range lt.inst {
		if n := s.open.n.Load(); n != 0 {
			t.Errorf("%d files still counted open in an instance after every file was closed", n)
		}
	}
	if n := lt.gates[0].open.n.Load() + lt.gates[1].open.n.Load(); n != 0 {
		t.Errorf("%d files still counted open in the module", n)
	}
}
