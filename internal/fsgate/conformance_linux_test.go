package fsgate

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// conformanceTree is the tree every conformance case starts from. All of
// it is writable under the gate (its root is granted "**"), so the gate
// must behave exactly as the plain runtime.
var conformanceTree = map[string]string{
	"dir/":     "",
	"dir/in":   "in",
	"file":     "file",
	"lnk":      "->dir",
	"flnk":     "->file",
	"dangling": "->nowhere",
	"loop":     "->loop",
}

// conformance are path cases in the manner of the WASI test suites
// (wasmtime's preview1_* programs, wasi-testsuite): trailing slashes,
// links and unlink. Operations are the test guest's, on paths relative to
// the tree: "rm" is os.Remove, "unlink", "rmdir" and "srename" are single
// system calls, "link|new|old" and "symlink|link|target".
var conformance = []struct {
	name string
	ops  []string
}{
	{"unlink_file_trailing_slashes", []string{
		"unlink|dir", "unlink|dir/", "unlink|file/", "unlink|lnk/", "unlink|flnk/", "unlink|dangling/", "unlink|nothing/",
		"unlink|flnk", "unlink|file"}},
	{"remove_file_trailing_slash", []string{"rm|file/", "rm|flnk/", "rm|lnk/", "rm|file"}},
	{"remove_directory_trailing_slashes", []string{
		"rmdir|file/", "rmdir|file", "rmdir|lnk/", "rmdir|dangling/", "rm|dir/in/", "rm|dir/in", "rmdir|dir/"}},
	{"path_rename_file_trailing_slashes", []string{
		"srename|file/|target", "srename|file|target/", "srename|file/|target/", "srename|flnk/|target",
		"srename|lnk/|target", "rename|file|target/", "srename|file|target"}},
	{"path_rename_dir_trailing_slashes", []string{
		"srename|dir/|target", "srename|target|dir/", "srename|dir/|target/", "srename|target|dir",
		"srename|dir|file/", "srename|dir/|file"}},
	{"path_symlink_trailing_slashes", []string{
		"symlink|target/|source", "symlink|target|source", "symlink|dir/|source", "symlink|file/|source",
		"symlink|dangling/|source"}},
	{"path_link_trailing_slashes", []string{
		"link|link/|file", "link|link|file/", "link|link|dir", "link|link|dir/", "link|file|dir/", "link|link/|dir/",
		"link|link|lnk/", "link|link|flnk/", "link|link|dangling/", "link|link2|dangling", "link|link3|file"}},
	{"path_filestat_trailing_slashes", []string{
		"stat|file/", "stat|dir/", "stat|lnk/", "stat|flnk/", "stat|dangling/",
		"lstat|file/", "lstat|dir/", "lstat|lnk/", "lstat|flnk/", "lstat|dangling/", "lstat|lnk", "lstat|loop/"}},
	{"path_open_trailing_slashes", []string{
		"open|file/", "open|dir/", "open|lnk/", "open|flnk/", "opennf|lnk/", "opennf|flnk/", "opennf|lnk", "opennf|dir/",
		"create|new/", "create|file/", "create|dir/", "create|dangling/", "write|file/|x", "append|file/|x", "truncopen|file/"}},
	{"dangling_symlink", []string{"open|dangling", "opennf|dangling", "create|dangling", "read|nowhere"}},
	{"symlink_loop", []string{"open|loop", "open|loop/", "opennf|loop", "stat|loop", "create|loop"}},
	{"path_create_directory_trailing_slashes", []string{"mkdir|new/", "mkdir|file/", "mkdir|lnk/", "mkdir|dangling/", "mkdir|dir/"}},
	{"readlink_trailing_slashes", []string{"readlink|lnk", "readlink|lnk/", "readlink|flnk/", "readlink|file/", "readlink|dir/", "readlink|file"}},
	{"path_filestat_set_times_trailing_slashes", []string{"chtimes|file/", "chtimes|dir/", "chtimes|lnk/", "chtimes|flnk/", "chtimes|file"}},
	{"truncate_trailing_slash", []string{"truncate|file/|0", "truncate|flnk/|0", "truncate|file|1"}},
}

// TestPathConformance runs each case's guest operations twice, on plain
// wazero over its own directory file system and through the gate as the
// station links it, and requires the same result for every operation and
// the same tree afterwards.
func TestPathConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	plain, gated := newGuest(t, false), newGuest(t, true)
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) {
			pd := filepath.Join(t.TempDir(), "w")
			tree(t, pd, conformanceTree)
			want := plain.run(t, wazero.NewFSConfig().WithDirMount(pd, pd), pd, c.ops...)

			base := t.TempDir()
			tree(t, base+"/w", conformanceTree)
			e := newEnv(t, base, []string{"$T/w/**"}, nil, 0)
			got := gated.run(t, gateConfig(t, e), base+"/w", c.ops...)

			if got != want {
				t.Errorf("through the gate:\n%s\nplain wazero:\n%s", got, want)
			}
			if g, w := listing(t, base+"/w"), listing(t, pd); g != w {
				t.Errorf("tree through the gate:\n%s\nplain wazero:\n%s", g, w)
			}
			for _, d := range e.rec.All() {
				if !d.Allowed {
					t.Errorf("denial %s: %s", d.Target, d.Reason)
				}
			}
		})
	}
}

// listing describes the tree under dir, one entry a line: a directory,
// a file and its content, or a link and its target.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.WriteString(rel + " -> " + target + "\n")
		case d.IsDir():
			b.WriteString(rel + "/\n")
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(rel + " " + string(data) + "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
