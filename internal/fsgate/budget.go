package fsgate

import (
	"sync"
	"sync/atomic"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// Lock order. The gate's locks are taken in this order, and released in
// the reverse:
//
//  1. Account.ns, the namespace lock of the module: shared by every
//     operation that adds or removes a name (open with O_CREAT, mkdir,
//     rmdir, unlink, link, symlink), exclusive for a rename;
//  2. Account.mu, the size lock: held from reading a size to changing it
//     (write, truncate, open with O_TRUNC, unlink, the file a rename
//     replaces) and by Usage and Add;
//  3. instanceState.mu, an instance's lock: its set of open files and its
//     one uncounted "/". Nothing is taken or called while it is held.
//
// Gate.mu (the mount roots: FS and Close) is never held with any of them.
// The budgets (open files, entries, the process's descriptors) are atomic
// counters and take no lock. The recorder and the hooks may be called with
// ns held, never with mu or an instance's lock: they may block, and the
// recorder must not call into the gate. Nothing takes ns while holding mu
// or an instance's lock, no goroutine takes ns twice (a second RLock would
// wait for a rename queued after the first), the gates of one module share
// one Account and those of two modules never nest, and CloseFiles lets go
// of the instance's lock before closing (Close takes it again): so no two
// operations can each hold what the other waits for. RATIONALE.md, "What
// is the fsgate lock order?"; lockorder_linux_test.go checks it.

// The budgets a gate enforces besides its policy and its byte quota. See
// docs/filesystem.md, "Limits".
const (
	// DefaultOpenFiles is how many files all the instances of one module
	// may hold open at once when Options.OpenFiles is zero.
	DefaultOpenFiles = 256
	// DefaultOpenFilesPerInstance is how many files one instance may hold
	// open at once when Options.OpenFilesPerInstance is zero.
	DefaultOpenFilesPerInstance = 64
	// DefaultEntries is how many names (files, directories, symbolic and
	// hard links) a module's operations may have created, net of the ones
	// it removed, when Options.Entries is zero.
	DefaultEntries = 20000
	// MinReserve is the least number of descriptors the station keeps for
	// its own I/O (clients, the store, the audit log, children's pipes):
	// modules' files together never hold more than the process limit less
	// the reserve.
	MinReserve = 512
)

// Usage is what a module's files take: the bytes its regular files grew
// by and the names it created, each net of what it removed. The station
// stores it with the module so that the quota holds across restarts.
type Usage struct {
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"`
}

// Descriptors is the budget of host descriptors that the open files of
// every module in a process share: the process's limit on open files less
// the reserve the station keeps for itself. Gates use ProcessDescriptors
// unless Options.Descriptors names another (tests do).
type Descriptors struct {
	budget
	limit   int64
	process int64 // the process limit it was computed from, 0 if none
}

// NewDescriptors returns a budget of limit descriptors.
func NewDescriptors(limit int64) *Descriptors { return &Descriptors{limit: max(limit, 1)} }

// Limit is how many descriptors the budget has.
func (d *Descriptors) Limit() int64 { return d.limit }

// ProcessLimit is the process's open-file limit the budget was computed
// from (0 for a budget from NewDescriptors).
func (d *Descriptors) ProcessLimit() int64 { return d.process }

// InUse is how many of them modules' files hold now.
func (d *Descriptors) InUse() int64 { return d.n.Load() }

// ProcessDescriptors raises the process's soft limit on open files to its
// hard limit (once) and returns the budget that modules share: that limit
// less Reserve of it. A process where the limit cannot be read gets the
// budget of a 1024-descriptor limit.
var ProcessDescriptors = sync.OnceValue(func() *Descriptors {
	limit := min(RaiseOpenFileLimit(), 1<<40)
	d := NewDescriptors(int64(limit) - Reserve(limit))
	d.process = int64(limit)
	return d
})

// RaiseOpenFileLimit raises the soft RLIMIT_NOFILE of the process to its
// hard limit and returns the soft limit in effect afterwards (1024 if it
// cannot be read). The Go runtime does the same at start on Linux; the
// station does it again so that the budget is computed from the limit
// really in effect, whatever started it.
func RaiseOpenFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}

// Reserve is how many of limit descriptors the station keeps for itself:
// a quarter, and at least MinReserve (or half of a limit smaller than
// twice that).
func Reserve(limit uint64) int64 {
	if limit > 1<<40 { // RLIM_INFINITY, or near it
		limit = 1 << 40
	}
	r := max(int64(limit)/4, MinReserve)
	if r > int64(limit)/2 {
		r = int64(limit) / 2
	}
	return r
}

// budget counts what is held against a limit.
type budget struct{ n atomic.Int64 }

// take holds one more if that stays within limit.
func (b *budget) take(limit int64) bool {
	if b.n.Add(1) > limit {
		b.n.Add(-1)
		return false
	}
	return true
}

func (b *budget) put() { b.n.Add(-1) }

// instanceState is what the file systems of one instance share: its open
// files, and the WASI error number its last refusal over a limit is to
// reach the guest as (wazero's error set has neither EMFILE nor EDQUOT).
type instanceState struct {
	open    budget
	pending atomic.Uint32

	mu       sync.Mutex
	files    map[experimentalsys.File]struct{} // open files and directories, for CloseFiles
	rootFree bool                              // the one uncounted directory "/" is open (see takeAbove)
}

// track adds f to the instance's open files.
func (s *instanceState) track(f experimentalsys.File) {
	s.mu.Lock()
	if s.files == nil {
		s.files = map[experimentalsys.File]struct{}{}
	}
	s.files[f] = struct{}{}
	s.mu.Unlock()
}

// untrack removes f from the instance's open files.
func (s *instanceState) untrack(f experimentalsys.File) {
	s.mu.Lock()
	delete(s.files, f)
	s.mu.Unlock()
}

// CloseFiles closes every file the instance whose file system is fsys
// (from Gate.FS) still holds, giving back its budgets. The host calls it
// when it discards an instance: wazero does not close an instance's files
// when a deadline closed the instance and the guest then trapped or
// exited, so the gate does not rely on it. It is safe to call more than
// once, and a file closed here is not closed again by wazero.
func CloseFiles(fsys experimentalsys.FS) {
	r, ok := fsys.(interface{ state() *instanceState })
	if !ok {
		return
	}
	s := r.state()
	s.mu.Lock()
	files := make([]experimentalsys.File, 0, len(s.files))
	for f := range s.files {
		files = append(files, f)
	}
	s.mu.Unlock()
	for _, f := range files {
		f.Close()
	}
}

// Error numbers of a refusal over a limit, as the gate's operations return
// them. wazero turns an error number it does not know into EIO; the WASI
// wrapper (see InstantiateWASI) then answers the WASI number the instance
// has pending instead.
const (
	errTooManyOpen errno = 0x7f01 // EMFILE
	errQuota       errno = 0x7f02 // EDQUOT
)

// WASI preview 1 error numbers.
const (
	wasiEIO    = 29
	wasiEDQUOT = 19
	wasiEMFILE = 33
	wasiENFILE = 41
	wasiEBADF  = 8
)

// putEntry gives back a name: one taken by takeEntry for an operation that
// did not create it, or one the module removed. The count never goes below
// zero.
func (g *Gate) putEntry() {
	for {
		n := g.acct.entries.Load()
		if n <= 0 || g.acct.entries.CompareAndSwap(n, n-1) {
			g.acct.gen.Add(1)
			return
		}
	}
}

// Account counts what a module's files take: the bytes its regular files
// grew by and the names it created. It is safe for concurrent use.
type Account struct {
	// ns is held exclusively by a rename from its checks to the rename, and
	// shared by every other operation that adds or removes names, so that
	// the type of what a rename moves cannot change in between, and so
	// that the names it replaces are counted once. It is the account's, not
	// a gate's, so that it holds across the gates of a module's versions.
	ns sync.RWMutex
	// mu guards used and serializes the operations that change file sizes.
	mu      sync.Mutex
	used    int64
	entries atomic.Int64
	gen     atomic.Uint64 // changes with used and entries (see Generation)
}

// NewAccount returns an account that starts at u (negative counts are
// taken as zero).
func NewAccount(u Usage) *Account {
	a := &Account{used: max(u.Bytes, 0)}
	a.entries.Store(max(u.Entries, 0))
	return a
}

// Add adds d to the account (never below zero): what another station
// process on the same store counted.
func (a *Account) Add(d Usage) {
	if d == (Usage{}) {
		return
	}
	a.mu.Lock()
	a.used = max(0, a.used+d.Bytes)
	a.mu.Unlock()
	for {
		n := a.entries.Load()
		if a.entries.CompareAndSwap(n, max(0, n+d.Entries)) {
			break
		}
	}
	a.gen.Add(1)
}

// Usage returns what the module's files take now.
func (a *Account) Usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Usage{Bytes: a.used, Entries: a.entries.Load()}
}

// Generation changes whenever Usage may have: a caller that stores the
// usage compares it with the generation it stored.
func (a *Account) Generation() uint64 { return a.gen.Load() }

// Usage returns what the module's files take now.
func (g *Gate) Usage() Usage { return g.acct.Usage() }

// OpenFiles returns how many files the module's instances hold open.
func (g *Gate) OpenFiles() int64 { return g.open.n.Load() }

// Limits describes the budgets the gate enforces.
func (g *Gate) Limits() Limits {
	return Limits{QuotaBytes: g.quota, Entries: g.maxEntries, OpenFiles: g.openFiles, OpenFilesPerInstance: g.openPerInstance}
}

// Limits are a gate's budgets, as enforced.
type Limits struct {
	QuotaBytes           int64 `json:"quota_bytes"`
	Entries              int64 `json:"entries"`
	OpenFiles            int64 `json:"open_files"`
	OpenFilesPerInstance int64 `json:"open_files_per_instance"`
}

// OpenIn returns how many files the instance whose file system is fsys (from
// Gate.FS) holds open; 0 for any other file system.
func OpenIn(fsys experimentalsys.FS) int64 {
	if r, ok := fsys.(interface{ held() int64 }); ok {
		return r.held()
	}
	return 0
}
