package fsgate

import (
	"fmt"

	"github.com/station-dev/station/internal/sandbox"
)

// limited records a refusal over a limit for the instance with hooks h, sets
// the WASI error number it reaches the guest as, and returns e. key is the
// key of config.yaml that sets the limit ("" for the process's share).
func (g *Gate) limited(h Hooks, inst *instanceState, target, reason string, limit int64, key string, wasi uint32, e errno) errno {
	le := sandbox.Exceed(g.module, sandbox.Filesystem, target, reason, limit, nil)
	if key != "" {
		le.Key, le.KeyIn = key, sandbox.InConfig
	}
	g.rec.Record(le.Decision(h.call()))
	if h.Limited != nil {
		h.Limited(le)
	}
	if inst != nil {
		inst.pending.Store(wasi)
	}
	return e
}

// takeOpen holds one open file of the instance with state s and hooks h:
// within its own budget and its module's. It returns a non-zero error
// number, after recording the refusal, if one of them is spent.
func (g *Gate) takeOpen(h Hooks, s *instanceState, target string) errno {
	if !s.open.take(g.openPerInstance) {
		return g.limited(h, s, target, fmt.Sprintf("would exceed its limit of %d open files per instance; close the files it no longer needs", g.openPerInstance), g.openPerInstance, "filesystem.open_files_per_instance", wasiEMFILE, errTooManyOpen)
	}
	if !g.open.take(g.openFiles) {
		s.open.put()
		return g.limited(h, s, target, fmt.Sprintf("would exceed its limit of %d open files over all its instances", g.openFiles), g.openFiles, "filesystem.open_files", wasiEMFILE, errTooManyOpen)
	}
	return 0
}

// putOpen gives back what takeOpen took.
func (g *Gate) putOpen(s *instanceState) {
	g.open.put()
	s.open.put()
}

// takeFD holds a descriptor for a file the instance is about to open: an
// open file (takeOpen) and one of the process's share.
func (m *mountFS) takeFD(target string) errno {
	g := m.g
	if e := g.takeOpen(m.hooks, m.inst, target); e != 0 {
		return e
	}
	if d := g.fds; !d.take(d.limit) {
		g.putOpen(m.inst)
		return g.limited(m.hooks, m.inst, target, fmt.Sprintf("would exceed the %d descriptors all modules share (the process limit less the station's reserve)", d.limit), d.limit, "", wasiENFILE, errTooManyOpen)
	}
	return 0
}

// putFD returns a descriptor taken by takeFD.
func (m *mountFS) putFD() {
	m.g.fds.put()
	m.g.putOpen(m.inst)
}

// takeEntry holds one more name for an operation about to create one,
// within the module's limit; it returns a non-zero error number, after
// recording the refusal, if the limit is reached.
func (m *mountFS) takeEntry(target string) errno {
	g := m.g
	for {
		n := g.acct.entries.Load()
		if n >= g.maxEntries {
			return g.limited(m.hooks, m.inst, target, fmt.Sprintf("would exceed its limit of %d files and directories (%d in use)", g.maxEntries, n), g.maxEntries, "filesystem.entries", wasiEDQUOT, errQuota)
		}
		if g.acct.entries.CompareAndSwap(n, n+1) {
			g.acct.gen.Add(1)
			return 0
		}
	}
}

// takeAbove holds the budgets for d, a directory above the mount roots the
// instance opens. It uses no host descriptor, so the process's share is
// not touched, but it takes memory, so the instance's and the module's
// budgets count it — except one "/" at a time, which wazero opens for the
// preopen and keeps for the instance's life.
func (r *rootFS) takeAbove(d *aboveDir) errno {
	s, g := r.inst, r.g
	if d.abs == "/" {
		s.mu.Lock()
		free := !s.rootFree
		s.rootFree = true
		s.mu.Unlock()
		if free {
			d.free = true
			return 0
		}
	}
	return g.takeOpen(r.hooks, s, d.abs)
}

// putAbove gives back what takeAbove took for d.
func (d *aboveDir) putAbove() {
	if d.free {
		d.inst.mu.Lock()
		d.inst.rootFree = false
		d.inst.mu.Unlock()
		return
	}
	d.g.putOpen(d.inst)
}
