package execgate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// defaultSearchPath is the search path when Operator.SearchPath is empty.
var defaultSearchPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// Operator holds the operator's subprocess settings from the station config.
// They are not the module's to choose: the manifest only names programs.
type Operator struct {
	// SearchPath is where program names are looked up, in order, and the
	// PATH every child gets; empty means /usr/local/bin, /usr/bin, /bin.
	// Entries must be absolute, clean and free of ':'; an entry inside an
	// Excluded tree (also after resolving symlinks) is a configuration
	// error.
	SearchPath []string
	// Excluded lists the trees nothing may run from: every module-writable
	// root and the station home. A program whose path, or whose path after
	// resolving symlinks, is inside one of them is refused.
	Excluded []string
	// GrantAny accepts `subprocess: true`: the module may run any program
	// on the search path (still resolved there, still without a shell,
	// still with a scrubbed environment).
	GrantAny bool
	// GrantPrograms lists allow entries, exactly as a manifest writes them
	// ("sh", "/usr/bin/python3"), that may name a shell, an interpreter,
	// a program-running wrapper or the station binary, all of which are
	// otherwise refused.
	GrantPrograms []string
	// AllowNetwork lets children run with the host's network when this
	// platform cannot give them a network namespace of their own. Without
	// it such a gate is refused (New fails): the station fails closed.
	AllowNetwork bool
	// AllowUnconfinedFiles lets children run although this machine cannot
	// confine them to the module's files (no Landlock, or Landlock that
	// cannot be applied): they can then read and change any file the
	// station's user can. Without it such a gate starts no child: every
	// run is refused with the reason. The station fails closed.
	AllowUnconfinedFiles bool
	// ConfigFile is the station configuration these settings come from
	// (config.Path of the station home), named in the refusals that a
	// setting there would lift; "" says "the station's config.yaml".
	ConfigFile string
}

// grantHint says how the operator grants entry by name: the key and the
// file it goes in.
func (op Operator) grantHint(entry string) string {
	return fmt.Sprintf("add %q to subprocess.grant_programs in %s", entry, op.configFile())
}

// configFile names the station configuration for a message.
func (op Operator) configFile() string {
	if op.ConfigFile == "" {
		return "the station's config.yaml"
	}
	return op.ConfigFile
}

// Program is one allow entry as resolved at install. The station stores it
// with the module; New takes it back.
type Program struct {
	Name   string // the allow entry: a bare name ("git") or an absolute path
	Path   string // absolute path of the file that runs, symlinks resolved
	Digest string // "sha256:" and the hex digest of that file at install
}

// Bounds of names and paths.
const (
	maxNameLen  = 255
	maxPathLen  = 4096
	maxPrograms = 64
)

// settings is an Operator validated and put in the forms the gate uses.
type settings struct {
	searchPath []string // cleaned, in order, as given
	searchReal []string // each entry with symlinks resolved (missing: as given)
	excluded   []string // cleaned and resolved forms of every excluded tree
	grants     map[string]bool
	any        bool
	network    bool
	files      bool // AllowUnconfinedFiles
	op         Operator
}

func (op Operator) settings() (*settings, error) {
	s := &settings{grants: map[string]bool{}, any: op.GrantAny, network: op.AllowNetwork, files: op.AllowUnconfinedFiles, op: op}
	for _, e := range op.Excluded {
		if e == "" || !filepath.IsAbs(e) || strings.IndexByte(e, 0) >= 0 {
			return nil, fmt.Errorf("excluded tree %q: want an absolute path", e)
		}
		e = filepath.Clean(e)
		s.excluded = appendUnique(s.excluded, e, realish(e))
	}
	sp := op.SearchPath
	if len(sp) == 0 {
		sp = defaultSearchPath
	}
	for _, d := range sp {
		if d == "" || !filepath.IsAbs(d) || filepath.Clean(d) != d || strings.ContainsAny(d, ":\x00") {
			return nil, fmt.Errorf("search path entry %q: want an absolute, clean path without ':'", d)
		}
		r := realish(d)
		if root, ok := s.inExcluded(d, r); ok {
			return nil, fmt.Errorf("search path entry %s is inside the excluded tree %s (module-writable or station state)", d, root)
		}
		if slices.Contains(s.searchPath, d) {
			continue
		}
		s.searchPath = append(s.searchPath, d)
		s.searchReal = append(s.searchReal, r)
	}
	for _, g := range op.GrantPrograms {
		if err := checkEntry(g); err != nil {
			return nil, fmt.Errorf("granted program %q: %v", g, err)
		}
		s.grants[g] = true
	}
	return s, nil
}

// path is the PATH value children get.
func (s *settings) path() string { return strings.Join(s.searchPath, ":") }

// inExcluded reports the excluded tree that holds any of paths.
func (s *settings) inExcluded(paths ...string) (string, bool) {
	for _, p := range paths {
		for _, e := range s.excluded {
			if within(p, e) {
				return e, true
			}
		}
	}
	return "", false
}

// Resolve resolves a manifest's `subprocess.allow` entries at install. Each
// bare name is looked up on the operator's search path (the first directory
// holding an executable regular file of that name wins); an entry with a '/'
// must be an absolute, clean path. The file that would run — symlinks
// resolved — must lie outside every excluded tree, and must not be a shell,
// an interpreter, a program-running wrapper (env, xargs, sudo, timeout, ...),
// a dynamic loader, the station binary, or the same file or a byte-identical
// copy of any of those, unless the operator grants the entry by name
// (Operator.GrantPrograms). The result records the resolved path and its
// sha256 digest; every error names the entry.
func Resolve(allow []string, op Operator) ([]Program, error) {
	s, err := op.settings()
	if err != nil {
		return nil, fmt.Errorf("subprocess settings: %w", err)
	}
	if len(allow) == 0 {
		return nil, errors.New("subprocess allow: no programs listed")
	}
	if len(allow) > maxPrograms {
		return nil, fmt.Errorf("subprocess allow: %d entries exceed %d", len(allow), maxPrograms)
	}
	known := s.knownPrograms()
	out := make([]Program, 0, len(allow))
	seen := map[string]bool{}
	for _, entry := range allow {
		if seen[entry] {
			return nil, fmt.Errorf("allow entry %q: listed twice", entry)
		}
		seen[entry] = true
		p, err := s.resolve(entry, known)
		if err != nil {
			return nil, fmt.Errorf("allow entry %q: %w", entry, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// resolve finds entry, checks it and digests it.
func (s *settings) resolve(entry string, known *knownSet) (Program, error) {
	if err := checkEntry(entry); err != nil {
		return Program{}, err
	}
	found, real, err := s.find(entry)
	if err != nil {
		return Program{}, err
	}
	f, fi, err := openProgram(real)
	if err != nil {
		return Program{}, err
	}
	defer f.Close()
	digest, err := digestOf(f)
	if err != nil {
		return Program{}, fmt.Errorf("digest %s: %w", real, err)
	}
	if err := s.vet(entry, found, real, fi, digest, known); err != nil {
		return Program{}, err
	}
	return Program{Name: entry, Path: real, Digest: digest}, nil
}

// find locates entry: an absolute path as is, a bare name on the search
// path. It returns the path found and that path with symlinks resolved, and
// refuses either inside an excluded tree.
func (s *settings) find(entry string) (found, real string, err error) {
	if strings.Contains(entry, "/") {
		found = entry
	} else {
		for _, dir := range s.searchPath {
			c := dir + "/" + entry
			if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				found = c
				break
			}
		}
		if found == "" {
			return "", "", fmt.Errorf("not found on the search path (%s)", s.path())
		}
	}
	if root, ok := s.inExcluded(found); ok {
		return "", "", fmt.Errorf("%s is inside the excluded tree %s (module-writable or station state); nothing there may run", found, root)
	}
	real, err = filepath.EvalSymlinks(found)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("%s does not exist", found)
		}
		return "", "", err
	}
	if root, ok := s.inExcluded(real); ok {
		return "", "", fmt.Errorf("%s resolves to %s, inside the excluded tree %s (module-writable or station state); nothing there may run", found, real, root)
	}
	return found, real, nil
}

// vet refuses shells, interpreters, wrappers, loaders and the station binary
// unless the operator granted the entry by name.
func (s *settings) vet(entry, found, real string, fi os.FileInfo, digest string, known *knownSet) error {
	if s.grants[entry] {
		return nil
	}
	unless := "; refused unless the operator grants it by name: " + s.op.grantHint(entry)
	if kind := programKind(filepath.Base(found)); kind != "" {
		return fmt.Errorf("%s is %s%s", found, kind, unless)
	}
	if kind := programKind(filepath.Base(real)); kind != "" {
		return fmt.Errorf("%s resolves to %s, %s%s", found, real, kind, unless)
	}
	if what := known.match(fi, digest); what != "" {
		if found != real {
			found += " (" + real + ")"
		}
		return fmt.Errorf("%s is %s%s", found, what, unless)
	}
	return nil
}

// openProgram opens a resolved program for digesting and checks that it is
// an executable regular file. The final component must not be a symlink:
// real paths have none, so one appearing there means the file was replaced.
// O_NONBLOCK keeps a FIFO in its place from blocking the open.
func openProgram(real string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file", real)
	}
	if fi.Mode()&0o111 == 0 {
		f.Close()
		return nil, nil, fmt.Errorf("%s is not executable", real)
	}
	return f, fi, nil
}

func digestOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}

// checkEntry checks the syntax of an allow entry: a bare program name, or an
// absolute clean path.
func checkEntry(e string) error {
	if strings.Contains(e, "/") {
		if len(e) > maxPathLen {
			return fmt.Errorf("path longer than %d bytes", maxPathLen)
		}
		if !filepath.IsAbs(e) || filepath.Clean(e) != e || e == "/" {
			return errors.New("a name with '/' must be an absolute, clean path to a file")
		}
		for i := 0; i < len(e); i++ {
			if e[i] < 0x20 || e[i] == 0x7f {
				return errors.New("control byte in path")
			}
		}
		return nil
	}
	if !validName(e) {
		return errors.New("not a program name (letters, digits, '.', '_', '+', '-'; not starting with '.' or '-')")
	}
	return nil
}

// validName reports whether s is a bare program name the gate accepts.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// realish resolves the symlinks in p, or in its longest existing prefix
// when p does not exist yet.
func realish(p string) string {
	rest := ""
	for q := p; ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(r, rest)
		}
		if q == "/" || q == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}

// within reports whether path p is root or below it. Both are clean.
func within(p, root string) bool {
	return root == "/" || p == root || strings.HasPrefix(p, root) && p[len(root)] == '/'
}

func appendUnique(s []string, v ...string) []string {
	for _, x := range v {
		if !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	return s
}

// knownSet is the set of files that must not run under another name: the
// shells, interpreters, wrappers and loaders found on the search path and in
// the usual loader locations, and the station binary. A candidate matches
// when it is the same file (a symlink or hard link) or a byte-identical
// copy (same size and digest; digests of known files are computed lazily,
// only when a candidate's size matches).
type knownSet struct {
	mu    sync.Mutex
	files []knownFile
}

type knownFile struct {
	path   string
	what   string
	fi     os.FileInfo
	digest string // "" until needed
}

// loaderGlobs find dynamic loaders, which run any program given as their
// first argument.
var loaderGlobs = []string{"/lib/ld-*.so*", "/lib64/ld-*.so*", "/lib/*/ld-*.so*", "/usr/lib/ld-*.so*", "/usr/lib64/ld-*.so*", "/usr/lib/*/ld-*.so*"}

func (s *settings) knownPrograms() *knownSet {
	k := &knownSet{}
	seen := map[string]bool{}
	add := func(path, what string) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil || seen[real] {
			return
		}
		fi, err := os.Stat(real)
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		seen[real] = true
		k.files = append(k.files, knownFile{path: real, what: what, fi: fi})
	}
	if exe, err := os.Executable(); err == nil {
		add(exe, "the station binary")
	}
	for _, dir := range s.searchPath {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if kind := programKind(e.Name()); kind != "" {
				add(filepath.Join(dir, e.Name()), fmt.Sprintf("the same program as %s, %s", filepath.Join(dir, e.Name()), kind))
			}
		}
	}
	for _, g := range loaderGlobs {
		m, _ := filepath.Glob(g)
		for _, p := range m {
			add(p, fmt.Sprintf("the same program as %s, a dynamic loader", p))
		}
	}
	return k
}

// sizeMatches reports whether any known file has fi's size, so a
// candidate's digest is worth computing.
func (k *knownSet) sizeMatches(fi os.FileInfo) bool {
	if k == nil {
		return false
	}
	for i := range k.files {
		if k.files[i].fi.Size() == fi.Size() {
			return true
		}
	}
	return false
}

// match describes the known program that fi (a file whose content has
// digest) is, or returns "".
func (k *knownSet) match(fi os.FileInfo, digest string) string {
	if k == nil {
		return ""
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.files {
		f := &k.files[i]
		if os.SameFile(fi, f.fi) {
			return f.what
		}
	}
	for i := range k.files {
		f := &k.files[i]
		if f.fi.Size() != fi.Size() {
			continue
		}
		if f.digest == "" {
			r, err := os.Open(f.path)
			if err != nil {
				continue
			}
			f.digest, _ = digestOf(r)
			r.Close()
		}
		if f.digest == digest {
			return f.what
		}
	}
	return ""
}
