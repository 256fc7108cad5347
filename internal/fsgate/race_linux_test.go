package fsgate

import (
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// Each case exchanges an entry with a prepared one (renameat2
// RENAME_EXCHANGE, atomic) at the worst moment: after the gate decided on
// the path and before the system call that uses it. Nothing outside
// $T/m/out may change.
func TestRaceAfterDecision(t *testing.T) {
	for _, c := range []struct {
		name       string
		plant      map[string]string
		stage, rel string // when to swap
		swap       string // base-relative entry exchanged with swap+".swap"
		do         func(experimentalsys.FS) experimentalsys.Errno
		want       experimentalsys.Errno
	}{
		{name: "open for writing: file becomes a link out",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "->../../outside.txt"},
			stage: "open", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/f", wronly|trunc, "pwned") },
			want: experimentalsys.EPERM},
		{name: "open for writing: file becomes a link to a readable file",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "->../notes.txt"},
			stage: "open", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return put(f, "out/f", wronly|appnd, "pwned") },
			want: experimentalsys.EPERM},
		{name: "open for writing: file becomes a hard link to outside",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "=>outside.txt"},
			stage: "open", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/f", rdwr|trunc) },
			want: experimentalsys.EPERM},
		{name: "open for reading: file becomes a link to a hidden file",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "->../secret/key"},
			stage: "open", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/f", rdonly) },
			want: experimentalsys.EACCES},
		{name: "open: file becomes a FIFO",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "|"},
			stage: "open", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return open(f, "out/f", rdonly) },
			want: experimentalsys.EACCES},
		{name: "create: directory on the way becomes a link",
			plant: map[string]string{"m/out/d/": "", "m/out/d.swap": "->../out2"},
			stage: "resolve", rel: "out/d/b.txt", swap: "m/out/d",
			do: func(f experimentalsys.FS) experimentalsys.Errno {
				return put(f, "out/d/b.txt", wronly|creat|trunc, "pwned")
			},
			want: experimentalsys.EPERM},
		{name: "create: directory on the way becomes a link out",
			plant: map[string]string{"m/out/d/": "", "m/out/d.swap": "->../.."},
			stage: "resolve", rel: "out/d/outside.txt", swap: "m/out/d",
			do: func(f experimentalsys.FS) experimentalsys.Errno {
				return put(f, "out/d/outside.txt", wronly|trunc, "pwned")
			},
			want: experimentalsys.EPERM},
		{name: "create: directory becomes a link after it was opened",
			plant: map[string]string{"m/out/d/": "", "m/out/d.swap": "->../out2"},
			stage: "use", rel: "out/d/b.txt", swap: "m/out/d",
			do: func(f experimentalsys.FS) experimentalsys.Errno {
				return put(f, "out/d/b.txt", wronly|creat|trunc, "x")
			},
			want: 0}, // written into the directory that was checked, now out/d.swap
		{name: "mkdir: directory on the way becomes a link",
			plant: map[string]string{"m/out/d/": "", "m/out/d.swap": "->../out2"},
			stage: "resolve", rel: "out/d/x", swap: "m/out/d",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("out/d/x", 0o755) },
			want: experimentalsys.EPERM},
		{name: "chmod: file becomes a link out",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "->../../outside.txt"},
			stage: "use", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Chmod("out/f", 0o777) },
			want: experimentalsys.EPERM},
		{name: "set times: file becomes a link out",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "->../../outside.txt"},
			stage: "use", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Utimens("out/f", 1e9, 1e9) },
			want: experimentalsys.EPERM},
		{name: "set times: file becomes a hard link to outside",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "=>outside.txt"},
			stage: "use", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Utimens("out/f", 1e9, 1e9) },
			want: experimentalsys.EPERM},
		{name: "unlink: file becomes a link out (the link goes)",
			plant: map[string]string{"m/out/f": "f", "m/out/f.swap": "->../../outside.txt"},
			stage: "use", rel: "out/f", swap: "m/out/f",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("out/f") },
			want: 0},
		{name: "rename: destination directory becomes a link",
			plant: map[string]string{"m/out/a2": "a", "m/out/d/": "", "m/out/d.swap": "->../out2"},
			stage: "resolve", rel: "out/d/a", swap: "m/out/d",
			do:   func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("out/a2", "out/d/a") },
			want: experimentalsys.EPERM},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			tree(t, base, stdTree)
			plant(t, base, c.plant)
			e := newEnv(t, base, stdWrites, stdReads, 0)
			before := snapshot(t, base, "m/out")
			swapped := false
			testHookRace = func(stage, rel string) {
				if swapped || stage != c.stage || rel != c.rel {
					return
				}
				swapped = true
				p := base + "/" + c.swap
				if err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, p+".swap", unix.RENAME_EXCHANGE); err != nil {
					t.Fatal(err)
				}
			}
			defer func() { testHookRace = nil }()
			if got := c.do(e.mount("m")); got != c.want {
				t.Errorf("errno %v, want %v\n%s", got, c.want, summary(e.rec, base))
			}
			if !swapped {
				t.Errorf("the hook never ran at %s %s", c.stage, c.rel)
			}
			unchanged(t, base, before, "m/out")
		})
	}
}
