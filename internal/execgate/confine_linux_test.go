package execgate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCover(t *testing.T) {
	root := realPath(t, t.TempDir())
	for _, d := range []string{"a", "b/c/d", "b/e", "f"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "b/file"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "b/c"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	j := func(p ...string) []string {
		for i := range p {
			p[i] = filepath.Join(root, p[i])
		}
		return p
	}
	cases := []struct {
		name  string
		avoid []string
		want  []string
	}{
		{"nothing to avoid", nil, j(".")},
		{"avoid elsewhere", []string{"/nonexistent"}, j(".")},
		{"root inside avoided", j("."), nil},
		{"one nested tree", j("b/c"), j("a", "b/e", "b/file", "f")},
		{"two trees", j("b/c/d", "f"), j("a", "b/e", "b/file")},
	}
	for _, c := range cases {
		got := cover(root, c.avoid, 0)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: cover = %q, want %q", c.name, got, c.want)
		}
	}
}
