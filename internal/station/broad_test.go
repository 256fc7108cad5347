package station_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
)

// TestBroadGrantsNeedTheOperator (issue 11, defect 7): a wildcard under a
// shared-tenant domain and a glob in a dot-directory of the home directory —
// also written as an absolute path — are refused at install with the reason
// and the setting that grants them; with the operator's grant they install,
// and the approval shows why they are broad.
func TestBroadGrantsNeedTheOperator(t *testing.T) {
	wasm := probeBeforeHome(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, d := range []string{".config/git", ".kube"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, envOpts{})
	kube := filepath.Join(home, ".kube") + "/**"
	mods := []struct {
		spec   moduleSpec
		reason string // in the refusal and the approval
		grant  string // the setting to name
	}{
		{moduleSpec{id: "test/aws", allow: []string{"*.amazonaws.com"}}, "whoever holds one receives what the module sends", "network.grant"},
		{moduleSpec{id: "test/git", writes: []string{"~/.config/git/**"}}, "~/.config is a dot-directory of the home directory", "filesystem.grant"},
		{moduleSpec{id: "test/kube", writes: []string{kube}}, filepath.Join(home, ".kube") + " is a dot-directory", "filesystem.grant"},
	}
	dirs := make([]string, len(mods))
	for i, m := range mods {
		dirs[i] = e.moduleDir(m.spec, wasm)
		err := e.tryInstall(dirs[i])
		if err == nil || !strings.Contains(err.Error(), m.reason) || !strings.Contains(err.Error(), m.grant) {
			t.Errorf("install %s without a grant: %v, want a refusal with %q and %q", m.spec.id, err, m.reason, m.grant)
		}
	}

	cfg, err := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, "  grant: [\"*.amazonaws.com\"]\nfilesystem:\n  grant: [\"~/.config/git/**\", \""+kube+"\"]\n"...)
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	for i, m := range mods {
		var lines []string
		_, err := e.st.Install(t.Context(), dirs[i], func(p station.Plan) (bool, error) {
			lines = p.Permissions.Describe("")
			return true, nil
		})
		if err != nil {
			t.Errorf("install %s with the operator's grant: %v", m.spec.id, err)
			continue
		}
		want := "  BROAD, OPERATOR GRANT (" + m.grant + "): "
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, want) && strings.Contains(l, m.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("approval of %s:\n%s\nwant a line %q with %q", m.spec.id, strings.Join(lines, "\n"), want, m.reason)
		}
	}
}

// TestWriteRootThroughASymbolicLink: a write root that is a symbolic link
// into the home's dot-directories needs the grant the directory it leads to
// needs — at install, and again at load if the link is planted afterwards.
func TestWriteRootThroughASymbolicLink(t *testing.T) {
	wasm := probeBeforeHome(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	link := filepath.Join(elsewhere, "keys")
	if err := os.Symlink(filepath.Join(home, ".ssh"), link); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{})
	dir := e.moduleDir(moduleSpec{id: "test/keys", writes: []string{link + "/**"}}, wasm)
	if err := e.tryInstall(dir); err == nil || !strings.Contains(err.Error(), "leads through a symbolic link to "+filepath.Join(home, ".ssh")) {
		t.Fatalf("install with a write root linked to ~/.ssh: %v, want a refusal naming where it leads", err)
	}

	// Installed while it was a plain directory, refused once it is a link.
	plain := filepath.Join(elsewhere, "out")
	if err := os.Mkdir(plain, 0o700); err != nil {
		t.Fatal(err)
	}
	dir = e.moduleDir(moduleSpec{id: "test/out", writes: []string{plain + "/**"}}, wasm)
	if err := e.tryInstall(dir); err != nil {
		t.Fatalf("install with a plain write root: %v", err)
	}
	e.reopen()
	if err := os.Remove(plain); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), plain); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Run(t.Context(), "test/out", probe.Command, probe.Run(probe.Write(plain+"/authorized_keys", "ssh-ed25519 AAAA evil"))); err == nil || !strings.Contains(err.Error(), "leads through a symbolic link") {
		t.Fatalf("run after the write root became a link into ~/.ssh: %v, want a refusal at load", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".ssh", "authorized_keys")); err == nil {
		t.Fatal("the module wrote ~/.ssh/authorized_keys")
	}
}

// probeBeforeHome builds the probe and opens the shared compilation cache
// before a test moves HOME: the go command they run keeps its caches under
// the real home (with another HOME it would build the probe from nothing,
// and CacheForTest might not get wazero's version from it).
func probeBeforeHome(t *testing.T) []byte {
	t.Helper()
	testCache(t)
	return probe.Wasm(t)
}
