package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/internal/fsgate"
)

// UsageStore keeps what each module's files take (fsgate.Usage) across
// restarts, so that its disk quota and its entry limit hold over the
// module's whole life, not one process's. The host loads a module's usage
// when it first loads the module and saves it, at most once per
// usageSaveEvery while it changes, and when the module is unloaded.
type UsageStore interface {
	LoadUsage(ctx context.Context, module string) (fsgate.Usage, error)
	SaveUsage(ctx context.Context, module string, u fsgate.Usage) error
}

// usageSaveEvery is how often, at most, a changing usage is saved: a crash
// loses at most this much of a module's counting.
const usageSaveEvery = time.Second

// account is the usage of one module id, shared by its loaded versions.
type account struct {
	id    string
	acct  *fsgate.Account
	refs  int           // loaded versions using it (h.accMu)
	saved atomic.Uint64 // the generation last saved
	dirty atomic.Bool   // queued for the saver
	mu    sync.Mutex    // serializes saves
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
	a := &account{id: id, acct: fsgate.NewAccount(u), refs: 1}
	a.saved.Store(a.acct.Generation())
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

// changed queues a for the saver if its usage changed since it was saved.
// It is called after every call of a module with files: one atomic load
// when nothing changed.
func (h *Host) changed(a *account) {
	if h.opts.Usage == nil || a.acct.Generation() == a.saved.Load() || a.dirty.Swap(true) {
		return
	}
	select {
	case h.dirty <- a:
	default:
		a.dirty.Store(false) // the queue is full: a later call queues it again
	}
}

// saver saves the queued accounts, then waits usageSaveEvery before it
// saves again, so that a module that keeps changing its files costs one
// write per interval; it returns when the host closes (closing modules
// saves their accounts themselves).
func (h *Host) saver() {
	defer close(h.saverDone)
	for {
		select {
		case a := <-h.dirty:
			for a != nil {
				a.dirty.Store(false)
				h.save(a)
				select {
				case a = <-h.dirty:
				default:
					a = nil
				}
			}
		case <-h.stop:
			return
		}
		select {
		case <-time.After(usageSaveEvery):
		case <-h.stop:
			return
		}
	}
}

// save stores a's usage if it changed since it was last saved.
func (h *Host) save(a *account) {
	if h.opts.Usage == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	gen := a.acct.Generation()
	if gen == a.saved.Load() {
		return
	}
	u := a.acct.Usage()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.opts.Usage.SaveUsage(ctx, a.id, u); err != nil {
		h.log.Warn(fmt.Sprintf("module %s: could not store the usage of its files (%d bytes, %d entries): %v", a.id, u.Bytes, u.Entries, err))
		return
	}
	a.saved.Store(gen)
}
