package fsgate

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/station-dev/station/internal/sandbox"
)

// DefaultQuotaBytes is the disk quota of a module when Options.QuotaBytes is
// zero.
const DefaultQuotaBytes = 256 << 20

// errno is wazero's error number; zero is success.
type errno = experimentalsys.Errno

// kind is what an operation needs of a path.
type kind int

const (
	kindSee   kind = iota // stat: the path is visible
	kindList              // open read-only: readable, or a visible directory
	kindRead              // read a link: readable
	kindWrite             // any change: writable
)

// denied is the errno a denial of k returns to the guest.
func (k kind) denied() errno {
	if k == kindWrite {
		return experimentalsys.EPERM
	}
	return experimentalsys.EACCES
}

// Options configures a gate. Everything in it is validated and copied by New
// and stays fixed for the gate's life.
type Options struct {
	// Module is the id of the module the gate serves; every decision and
	// violation names it.
	Module string
	// Writes are the absolute host path globs (doublestar syntax) the
	// module may create, change or delete; "~/" must already be expanded.
	Writes []string
	// Reads are the absolute host path globs the module may read, in
	// addition to everything it may write.
	Reads []string
	// Protected are host directories that must never be mounted or
	// writable, such as the station's home and its module store. New
	// refuses a glob whose mount root is, contains or is inside one of them.
	Protected []string
	// Recorder receives every decision; nil discards them.
	Recorder sandbox.Recorder
	// QuotaBytes bounds how many bytes the module's files may grow by, in
	// total over all its instances; 0 means DefaultQuotaBytes.
	QuotaBytes int64
	// Entries bounds how many names its operations may have created, net
	// of the ones they removed; 0 means DefaultEntries.
	Entries int64
	// OpenFiles bounds the files all its instances hold open at once, and
	// OpenFilesPerInstance those of one instance; 0 means DefaultOpenFiles
	// and DefaultOpenFilesPerInstance.
	OpenFiles, OpenFilesPerInstance int64
	// Account counts what the module's files take; the host shares one
	// between the gates of a module's versions and stores it, so that the
	// quota and the entry limit hold across upgrades and restarts. Nil
	// means a new account, starting at zero.
	Account *Account
	// Descriptors is the budget every module's open files share; nil means
	// ProcessDescriptors().
	Descriptors *Descriptors
}

// Hooks connect one wazero instance's filesystem to the call it serves.
// Both functions may be nil.
type Hooks struct {
	// Call returns the call in progress, used only to attribute decisions
	// (nil outside a call).
	Call func() *sandbox.Call
	// Denied is called with every denial made while serving the instance,
	// so that the host can report it if the call fails.
	Denied func(*sandbox.Violation)
	// Limited is called with every refusal over a limit (open files,
	// entries) made while serving the instance, as Denied is.
	Limited func(*sandbox.LimitError)
	// Blocked reports whether every file operation is refused right now:
	// the host refuses them while the module's start function runs, before
	// any call (and so before an install is approved).
	Blocked func() bool
}

// Gate is the filesystem gate of one module. It is safe for concurrent use;
// the file systems FS returns share its root directories, its policy and
// its quota.
type Gate struct {
	module    string
	pol       *policy
	rec       sandbox.Recorder
	quota     int64
	roots     []root // the mount roots, sorted, none inside another
	writeGlob []string
	// above holds, for "/" and every other directory above a mount root,
	// the names below it on the way to the roots: the only entries of the
	// host outside the mounts that the module sees.
	above map[string][]aboveEntry

	mu     sync.Mutex
	opened []*openRoot // nil until the first FS
	closed bool

	// acct counts what the module's files take, shared with the gates of
	// its other versions still loaded; its lock serializes the operations
	// that change file sizes, so that the quota counts exactly what this
	// module's instances did.
	acct       *Account
	maxEntries int64

	open            budget // files open over all instances
	openFiles       int64
	openPerInstance int64
	fds             *Descriptors
}

// root is one mount root as computed by New.
type root struct {
	path     string // declared, absolute, clean: the guest path too
	dev, ino uint64 // identity when New checked it
}

// aboveEntry is a name in a directory above a mount root: the next
// directory on the way to a root, or the root itself.
type aboveEntry struct {
	name string
	ino  uint64 // the root's inode, or a made-up one (see aboveIno)
}

// New validates o and computes the mounts. It checks that each mount root
// exists, is a directory, and is neither a protected directory, nor inside
// one, nor above one (comparing both the declared paths and the paths with
// symbolic links resolved). A root that does not exist is an error: the
// operator creates it, the gate never does. Errors name the glob.
func New(o Options) (*Gate, error) {
	if o.Module == "" {
		return nil, errors.New("fsgate: a module id is required")
	}
	fail := func(err error) error { return fmt.Errorf("fsgate: module %s: %w", o.Module, err) }
	for _, n := range []struct {
		name string
		v    int64
	}{{"quota", o.QuotaBytes}, {"entry limit", o.Entries}, {"open-file limit", o.OpenFiles}, {"per-instance open-file limit", o.OpenFilesPerInstance}} {
		if n.v < 0 {
			return nil, fail(fmt.Errorf("%s %d is negative", n.name, n.v))
		}
	}
	pol, err := compilePolicy(o.Writes, o.Reads)
	if err != nil {
		return nil, fail(err)
	}
	g := &Gate{
		module:    o.Module,
		pol:       pol,
		rec:       o.Recorder,
		quota:     cmp.Or(o.QuotaBytes, DefaultQuotaBytes),
		writeGlob: slices.Clone(o.Writes),
		acct:      o.Account,

		maxEntries:      cmp.Or(o.Entries, DefaultEntries),
		openFiles:       cmp.Or(o.OpenFiles, DefaultOpenFiles),
		openPerInstance: cmp.Or(o.OpenFilesPerInstance, DefaultOpenFilesPerInstance),
		fds:             o.Descriptors,
	}
	if g.acct == nil {
		g.acct = NewAccount(Usage{})
	}
	if g.fds == nil {
		g.fds = ProcessDescriptors()
	}
	// Where the process limit is small, no module may take more than a
	// quarter of what all modules share, nor an instance more than its
	// module.
	g.openFiles = min(g.openFiles, max(g.fds.limit/4, 16))
	g.openPerInstance = min(g.openPerInstance, g.openFiles)
	if g.rec == nil {
		g.rec = sandbox.Discard
	}

	type protected struct{ declared, real string }
	var prot []protected
	for _, p := range o.Protected {
		if !filepath.IsAbs(p) {
			return nil, fail(fmt.Errorf("protected directory %q is not absolute", p))
		}
		p = filepath.Clean(p)
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p // it may not exist yet; compare the declared form
		}
		prot = append(prot, protected{p, real})
	}

	var all []grant
	all = append(append(all, pol.writes...), pol.reads...)
	kind := func(gr grant) string {
		if slices.ContainsFunc(pol.writes, func(w grant) bool { return w.glob == gr.glob }) {
			return "write"
		}
		return "read"
	}

	// No root may be, contain or be inside a protected directory, compared
	// as declared and with symbolic links resolved. (A glob's own root may
	// not exist yet when it is inside another mount; the gate never
	// follows a link out of a mount, so its declared form is enough.)
	for _, gr := range all {
		roots := []string{gr.root}
		if real, err := filepath.EvalSymlinks(gr.root); err == nil {
			roots = append(roots, real)
		}
		for _, p := range prot {
			for _, r := range roots {
				for _, q := range []string{p.declared, p.real} {
					switch {
					case within(q, r):
						return nil, fail(fmt.Errorf("%s glob %q: mount root %s contains the protected directory %s", kind(gr), gr.glob, gr.root, p.declared))
					case within(r, q):
						return nil, fail(fmt.Errorf("%s glob %q: mount root %s is inside the protected directory %s", kind(gr), gr.glob, gr.root, p.declared))
					}
				}
			}
		}
	}

	// Collapse nested roots into the outermost; only those are mounted.
	byLen := slices.Clone(all)
	slices.SortStableFunc(byLen, func(a, b grant) int { return len(a.root) - len(b.root) })
	var outer []grant
	for _, gr := range byLen {
		if !slices.ContainsFunc(outer, func(o grant) bool { return within(gr.root, o.root) }) {
			outer = append(outer, gr)
		}
	}
	for _, gr := range outer {
		if _, err := os.Lstat(gr.root); errors.Is(err, os.ErrNotExist) {
			return nil, fail(fmt.Errorf("%s glob %q: mount root %s does not exist (the operator creates it)", kind(gr), gr.glob, gr.root))
		}
		dev, ino, isDir, err := identify(gr.root)
		if err != nil {
			return nil, fail(fmt.Errorf("%s glob %q: mount root %s: %w", kind(gr), gr.glob, gr.root, err))
		}
		if !isDir {
			return nil, fail(fmt.Errorf("%s glob %q: mount root %s is not a directory", kind(gr), gr.glob, gr.root))
		}
		g.roots = append(g.roots, root{path: gr.root, dev: dev, ino: ino})
	}
	slices.SortFunc(g.roots, func(a, b root) int { return strings.Compare(a.path, b.path) })
	g.above = aboveRoots(g.roots)
	return g, nil
}

// aboveRoots lists the directories above the mount roots ("/" included, if
// there is a root) and, in each, the names on the way to the roots, sorted.
func aboveRoots(roots []root) map[string][]aboveEntry {
	above := map[string][]aboveEntry{}
	for _, r := range roots {
		for p := r.path; p != "/"; p = path.Dir(p) {
			dir, name := path.Dir(p), path.Base(p)
			e := aboveEntry{name: name, ino: aboveIno(p)}
			if p == r.path {
				e.ino = r.ino
			}
			if !slices.Contains(above[dir], e) {
				above[dir] = append(above[dir], e)
			}
		}
	}
	for _, es := range above {
		slices.SortFunc(es, func(a, b aboveEntry) int { return strings.Compare(a.name, b.name) })
	}
	return above
}

// aboveIno is the inode number the guest sees for a directory above the
// mount roots: a hash of its path, so that it is stable and tells nothing
// about the host's directory.
func aboveIno(p string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p))
	return h.Sum64() | 1
}

// Roots returns the mount roots: the directories the module's globs, read
// and write, begin at.
func (g *Gate) Roots() []string {
	out := make([]string, len(g.roots))
	for i, r := range g.roots {
		out[i] = r.path
	}
	return out
}

// WriteGlobs returns a copy of the module's write globs.
func (g *Gate) WriteGlobs() []string { return slices.Clone(g.writeGlob) }

// String describes the gate for the station's log line, e.g.
//
//	allow: /home/u/out/** (reads: /data/*.csv)
//	allow: (none)
func (g *Gate) String() string {
	var b strings.Builder
	b.WriteString("allow: ")
	if len(g.pol.writes) == 0 {
		b.WriteString("(none)")
	}
	for i, w := range g.pol.writes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(w.glob)
	}
	if len(g.pol.reads) > 0 {
		b.WriteString(" (reads: ")
		for i, r := range g.pol.reads {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.glob)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Close closes the gate's root directories. File systems already handed to
// instances fail every later path operation with EBADF; files they opened
// stay usable until the instance closes them. Close the gate after the
// module's instances.
func (g *Gate) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	var errs []error
	for _, r := range g.opened {
		errs = append(errs, r.close())
	}
	g.opened = nil
	return errors.Join(errs...)
}

// hostPath joins a mount root and a clean relative path.
func hostPath(root, rel string) string {
	if rel == "." {
		return root
	}
	return path.Join(root, rel)
}
