package fsgate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// benchFS returns the file system of a gate with writes $T/m/out/** and
// reads $T/m/notes.txt, and the guest path of $T/m.
func benchFS(b *testing.B) (experimentalsys.FS, string) {
	base := b.TempDir()
	for _, d := range []string{"m/out/sub"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for n, v := range map[string]string{"m/notes.txt": "notes", "m/out/a.txt": "a"} {
		if err := os.WriteFile(filepath.Join(base, n), []byte(v), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	g, err := New(Options{Module: "bench", Writes: []string{base + "/m/out/**"}, Reads: []string{base + "/m/notes.txt"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	fsys, err := g.FS(Hooks{})
	if err != nil {
		b.Fatal(err)
	}
	return fsys, strings.TrimPrefix(base, "/") + "/m/"
}

// BenchmarkPathOps measures the gate's path operations on the hot path.
func BenchmarkPathOps(b *testing.B) {
	fsys, m := benchFS(b)
	a, notes, created := m+"out/a.txt", m+"notes.txt", m+"out/sub/new.txt"
	b.Run("stat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, e := fsys.Stat(a); e != 0 {
				b.Fatal(e)
			}
		}
	})
	b.Run("open-read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, e := fsys.OpenFile(notes, experimentalsys.O_RDONLY, 0)
			if e != 0 {
				b.Fatal(e)
			}
			f.Close()
		}
	})
	b.Run("create-unlink", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, e := fsys.OpenFile(created, experimentalsys.O_WRONLY|experimentalsys.O_CREAT|experimentalsys.O_TRUNC, 0o644)
			if e != 0 {
				b.Fatal(e)
			}
			f.Close()
			if e := fsys.Unlink(created); e != 0 {
				b.Fatal(e)
			}
		}
	})
}

// BenchmarkAccounting measures the budgets' own work, which the path
// operations and the host's warm call add to what they did before: an
// open's descriptor budgets and tracking, a creation's entry, and the
// host's per-call look at what an instance holds.
func BenchmarkAccounting(b *testing.B) {
	fsys, m := benchFS(b)
	r := fsys.(*rootFS)
	mnt := r.mounts[0]
	target := "/" + m + "out/a.txt"
	f := &file{m: mnt}
	b.Run("open-file", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if e := mnt.takeFD(target); e != 0 {
				b.Fatal(e)
			}
			mnt.inst.track(f)
			mnt.inst.untrack(f)
			mnt.putFD()
		}
	})
	b.Run("entry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if e := mnt.takeEntry(target); e != 0 {
				b.Fatal(e)
			}
			mnt.g.putEntry()
		}
	})
	b.Run("call-check", func(b *testing.B) {
		b.ReportAllocs()
		var n int64
		for b.Loop() {
			n += OpenIn(fsys)
		}
		if n != 0 {
			b.Fatal(n)
		}
	})
}
