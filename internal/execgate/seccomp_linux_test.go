package execgate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/abi"
)

// TestRunMetadataConfined: Landlock does not cover metadata, the seccomp
// filter does. A granted touch, chown or chmod leaves a file outside the work
// dirs as it was: touch and chown fail, chmod returns success and does nothing.
func TestRunMetadataConfined(t *testing.T) {
	wd := t.TempDir()
	outside := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	g := systemGate(t, nil, []string{"touch", "chmod", "chown"}, Options{WorkDirs: []string{wd}})
	if !strings.Contains(g.Confinement(), "metadata: no chmod/chown/utimes (seccomp)") {
		t.Errorf("Confinement() = %q, want the seccomp filter named", g.Confinement())
	}
	run := func(argv ...string) *abi.ProcessResponse {
		t.Helper()
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: argv, Dir: wd})
		if err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		return resp
	}
	check := func(what string) {
		t.Helper()
		fi, err := os.Stat(outside)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o600 {
			t.Errorf("after %s: mtime %v mode %v, want %v and -rw-------", what, fi.ModTime(), fi.Mode().Perm(), old)
		}
	}
	for _, argv := range [][]string{
		{"touch", outside},
		{"touch", "-d", "2020-01-01", outside},
		{"chown", "1:1", outside},
	} {
		if resp := run(argv...); resp.ExitCode == 0 {
			t.Errorf("%v: exit 0, want non-zero", argv)
		}
		check(strings.Join(argv, " "))
	}
	run("chmod", "0777", outside)
	check("chmod 0777")

	// Inside the work dir too: creating files works, changing their metadata does not.
	if resp := run("touch", "created"); resp.ExitCode != 0 {
		t.Fatalf("touch created: exit %d (stderr %q), want 0", resp.ExitCode, resp.Stderr)
	}
	run("chmod", "0700", "created")
	if fi, err := os.Stat(filepath.Join(wd, "created")); err != nil || fi.Mode().Perm()&0o100 != 0 {
		t.Errorf("chmod in the work dir: %v %v, want the mode it was created with", fi.Mode(), err)
	}
}
