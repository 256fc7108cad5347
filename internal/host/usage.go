package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/station-dev/station/internal/fsgate"
)

// UsageStore keeps what each module's files take (fsgate.Usage) across
// restarts, so that its disk quota and its entry limit hold over the
// module's whole life, not one process's. The host loads a module's usage
// when it first loads the module and adds what changed, at most once per
// usageSaveEvery while it changes and when the module is unloaded.
type UsageStore interface {
	LoadUsage(ctx context.Context, module string) (fsgate.Usage, error)
	// AddUsage adds d to the stored usage of module (never below zero)
	// and returns the total stored now, which includes what other station
	// processes on the same store added.
	AddUsage(ctx context.Context, module string, d fsgate.Usage) (fsgate.Usage, error)
}

// usageSaveEvery is how often the saver looks for changed usage: a crash
// loses at most this much of a module's counting, calls in flight
// included.
const usageSaveEvery = time.Second

// account is the usage of one module id, shared by its loaded versions.
type account struct {
	id   string
	acct *fsgate.Account
	refs int // loaded versions using it (h.accMu)

	mu    sync.Mutex   // serializes saves; guards the fields below
	gen   uint64       // the generation last saved
	saved fsgate.Usage // the usage that corresponds to the stored total
}

// account returns the account of module id, loading its stored usage the
// first time; release gives it back.
func (h *Host) account(ctx context.Context, id string) (*account, error) {
	h.accMu.Lock()
	defer h.accMu.Unlock()
	if a := h.accounts[id]; a != nil {
		a.refs++
		return a, nil
	}
	var u fsgate.Usage
	if h.opts.Usage != nil {
		var err error
		if u, err = h.opts.Usage.LoadUsage(ctx, id); err != nil {
			return nil, fmt.Errorf("load the usage of its files: %w", err)
		}
	}
	a := &account{id: id, acct: fsgate.NewAccount(u), refs: 1, saved: u}
	a.gen = a.acct.Generation()
	h.accounts[id] = a
	return a, nil
}

// release gives back an account taken with account, saving it if it
// changed; the last version to release it drops it.
func (h *Host) release(a *account) {
	h.save(a)
	h.accMu.Lock()
	defer h.accMu.Unlock()
	if a.refs--; a.refs == 0 {
		delete(h.accounts, a.id)
	}
}

// saver saves, every usageSaveEvery, the accounts whose usage changed —
// during calls too, not only after them — until the host closes (closing
// modules saves their accounts themselves). A warm call pays nothing for
// it.
func (h *Host) saver() {
	defer close(h.saverDone)
	t := time.NewTicker(usageSaveEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.stop:
			return
		}
		h.accMu.Lock()
		all := make([]*account, 0, len(h.accounts))
		for _, a := range h.accounts {
			all = append(all, a)
		}
		h.accMu.Unlock()
		for _, a := range all {
			h.save(a)
		}
	}
}

// save adds to the store what a's usage changed by since it was last
// saved, and takes in what other processes added meanwhile.
func (h *Host) save(a *account) {
	if h.opts.Usage == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	gen := a.acct.Generation() // before the usage: a change in between is saved next time
	if gen == a.gen {
		return
	}
	u := a.acct.Usage()
	d := fsgate.Usage{Bytes: u.Bytes - a.saved.Bytes, Entries: u.Entries - a.saved.Entries}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	total, err := h.opts.Usage.AddUsage(ctx, a.id, d)
	if err != nil {
		h.log.Warn(fmt.Sprintf("module %s: could not store the usage of its files (%d bytes, %d entries): %v", a.id, u.Bytes, u.Entries, err))
		return
	}
	// What the store holds beyond what this process counted was added by
	// another process on the same store: count it here too.
	a.acct.Add(fsgate.Usage{Bytes: total.Bytes - u.Bytes, Entries: total.Entries - u.Entries})
	a.saved = total
	a.gen = gen
}
