package attack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/audit"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/store"
)

// openFDs is how many descriptors the test process (the station) holds.
func openFDs(t *testing.T) int {
	t.Helper()
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// descriptors is the station's descriptor level: openFDs once the test's
// own keep-alive connections (the station client's, to a fixture in this
// process) are closed, so that an idle connection the fixture dropped and
// the next check opened again does not count — and, for the same reason,
// the store's idle database connections (a second one opens when the audit
// writer and the advisory gate read at once).
func (w *world) descriptors(t *testing.T) int {
	w.client.CloseIdleConnections()
	w.st.Store.CloseIdle()
	return openFDs(t)
}

// settle is how long mustHold waits for descriptors to close and
// goroutines to end after an attack (a closing instance ends them
// asynchronously).
const settle = 5 * time.Second

// mustHold checks, after an attack, what the issue "No module can exhaust,
// blind or silently short-change the station" says must hold in the same
// station process: the other modules still run and reach their hosts, a
// module still installs and loads, the station's own client still
// connects, its descriptors are back to their level before the attack and
// its goroutines did not grow.
func mustHold(t *testing.T, w *world, fds, goroutines int, n *int) {
	t.Helper()
	w.alive(t)
	*n++
	id := fmt.Sprintf("atk/second%d", *n)
	if err := w.tryInstall(spec{id: id, allow: []string{"api.stripe.com"}}.manifest(), probe.Wasm(t)); err != nil {
		t.Errorf("a second module no longer installs: %v", err)
	} else if res, err := w.run(id, probe.HTTP("GET", "https://api.stripe.com/")); err != nil || len(res) != 1 || !res[0].OK {
		t.Errorf("a second module no longer runs: %v %+v", err, res)
	} else if err := w.st.Remove(context.Background(), id); err != nil {
		t.Errorf("remove %s: %v", id, err)
	}
	if !fixture.Poll(settle, func() bool { return w.descriptors(t) <= fds }) {
		var open []string
		names, _ := os.ReadDir("/proc/self/fd")
		for _, n := range names {
			target, _ := os.Readlink("/proc/self/fd/" + n.Name())
			open = append(open, n.Name()+"="+target)
		}
		t.Errorf("the station holds %d descriptors, %d before the attack: %s", w.descriptors(t), fds, strings.Join(open, " "))
	}
	if !fixture.Poll(settle, func() bool { return runtime.NumGoroutine() <= goroutines }) {
		buf := make([]byte, 1<<20)
		t.Errorf("the station runs %d goroutines, %d before the attack:\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
	}
}

// TestExhaustion runs the attacks of one module on the station's shared
// resources (descriptors, inodes) and checks, after each, that it harmed
// nothing but itself and that every refusal named it in the audit log.
func TestExhaustion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the probe")
	}
	w := newWorld(t, false)
	w.alive(t) // every module warm: what follows is the attack's doing
	var second int
	mustHold(t, w, 1<<30, 1<<30, &second)
	held := filepath.Join(w.d, "in", "data.txt")

	t.Run("descriptors", func(t *testing.T) {
		fds, goroutines := w.descriptors(t), runtime.NumGoroutine() // in the subtest's goroutine
		since := time.Now()
		// Concurrent calls each open files until refused and keep them:
		// each instance gets its own budget, together the module's.
		const calls = 6
		var wg sync.WaitGroup
		opened := make([]int, calls)
		msgs := make([]string, calls)
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := w.run(modFS, probe.Hold(held, 100000))
				if err != nil || len(res) != 1 {
					msgs[i] = fmt.Sprintf("call failed: %v", err)
					return
				}
				opened[i], _ = strconv.Atoi(res[0].Data)
				if res[0].OK || res[0].Error == nil {
					msgs[i] = "opened 100000 files"
				} else {
					msgs[i] = res[0].Error.Message
				}
			}()
		}
		wg.Wait()
		total := 0
		for i := range calls {
			total += opened[i]
			if opened[i] > fsgate.DefaultOpenFilesPerInstance {
				t.Errorf("call %d opened %d files, more than the %d of an instance", i, opened[i], fsgate.DefaultOpenFilesPerInstance)
			}
			if !strings.Contains(strings.ToLower(msgs[i]), "too many open files") {
				t.Errorf("call %d ended with %q, want EMFILE (too many open files)", i, msgs[i])
			}
		}
		if total == 0 {
			t.Error("the module opened no file")
		}
		// Its instances were not pooled with their files: a call now gets
		// the whole budget again.
		res, err := w.run(modFS, probe.Hold(held, fsgate.DefaultOpenFilesPerInstance), probe.Read(held))
		if err != nil || len(res) != 2 || !res[0].OK || res[1].OK {
			t.Errorf("a call after the attack: %v %+v, want %d opens and then a refusal", err, res, fsgate.DefaultOpenFilesPerInstance)
		}
		var refusals int
		for _, r := range w.deniedSince(t, since) {
			if r.Module == modFS && strings.Contains(r.Reason, "open files") && r.Capability == "filesystem" {
				refusals++
			}
		}
		if refusals < calls {
			t.Errorf("%d open-file refusals of %s in the audit log, want at least %d", refusals, modFS, calls)
		}
		mustHold(t, w, fds, goroutines, &second)
	})

	t.Run("audit flood", func(t *testing.T) {
		fds, goroutines := w.descriptors(t), runtime.NumGoroutine()
		since := time.Now()
		// 6,000 denied requests in two calls: the module's records stay
		// within the documented bound, the summaries say how many they
		// fold, and the station is as before.
		flood := make([]probe.Action, 3000)
		for i := range flood {
			flood[i] = probe.HTTP("GET", "https://evil.example/")
		}
		for range 2 {
			if _, err := w.run(modStripe, flood...); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.st.Audit.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		recs, err := w.st.Store.Audit(context.Background(), store.AuditFilter{Module: modStripe, Since: since, Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		folded := 0
		for _, r := range recs {
			folded += r.Folded
		}
		if len(recs) > audit.MaxPerWindow || len(recs) == 0 || folded == 0 {
			t.Errorf("%d audit records of the flooding module in under a minute (%d folded into summaries), want some, at most %d, and summaries", len(recs), folded, audit.MaxPerWindow)
		}
		mustHold(t, w, fds, goroutines, &second)
	})

	t.Run("entries", func(t *testing.T) {
		fds, goroutines := w.descriptors(t), runtime.NumGoroutine()
		since := time.Now()
		dir := filepath.Join(w.d, "out", "flood")
		if _, err := w.run(modFS, probe.Mkdir(dir)); err != nil {
			t.Fatal(err)
		}
		res, err := w.run(modFS, probe.CreateMany(dir, 1_000_000))
		if err != nil || len(res) != 1 {
			t.Fatalf("flood: %v %+v", err, res)
		}
		n, _ := strconv.Atoi(res[0].Data)
		if res[0].OK || !strings.Contains(strings.ToLower(res[0].Error.Message), "quota exceeded") {
			t.Errorf("creating a million files ended with %+v after %d, want EDQUOT (quota exceeded)", res[0].Error, n)
		}
		names, _ := os.ReadDir(dir)
		if len(names) != n || n == 0 || n >= entriesLimit {
			t.Errorf("%d files on disk, %d reported, want fewer than the limit of %d", len(names), n, entriesLimit)
		}
		var refusals int
		for _, r := range w.deniedSince(t, since) {
			if r.Module == modFS && strings.Contains(r.Reason, fmt.Sprintf("limit of %d files and directories", entriesLimit)) {
				refusals++
			}
		}
		if refusals != 1 {
			t.Errorf("%d entry refusals of %s in the audit log, want 1", refusals, modFS)
		}
		// Removing what it made gives the entries back.
		res, err = w.run(modFS, probe.Remove(filepath.Join(dir, "f0")), probe.Write(filepath.Join(dir, "again"), "x"))
		if err != nil || len(res) != 2 || !res[1].OK {
			t.Errorf("a write after removing a file: %v %+v", err, res)
		}
		mustHold(t, w, fds, goroutines, &second)
	})
}
