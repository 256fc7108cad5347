package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := Write(name, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(name, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "two" {
		t.Errorf("contents %q", b)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	// A link is replaced; the file it named is untouched.
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("mine"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(victim, link)
	if err := Write(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine" {
		t.Errorf("wrote through the link: %q", b)
	}
	if fi, _ := os.Lstat(link); !fi.Mode().IsRegular() {
		t.Errorf("the link was not replaced: %v", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("left %d entries behind, want 3", len(entries))
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir"), nil, 0o644); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
