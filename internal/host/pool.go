package host

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// pool keeps the warm instances of one module. It is sharded so that
// concurrent callers on different cores rarely meet on the same lock: get and
// put start at a rotating shard and only try-lock, moving on when a shard is
// busy. See RATIONALE.md, "Why is the instance pool sharded?".
type pool struct {
	shards []poolShard
	next   atomic.Uint32
}

type poolShard struct {
	mu   sync.Mutex
	free []*instance
	_    [40]byte // keep shards on separate cache lines
}

func newPool() *pool {
	n := runtime.GOMAXPROCS(0)
	if n < 1 {
		n = 1
	}
	return &pool{shards: make([]poolShard, n)}
}

// get returns a warm instance, or nil when none is idle.
func (p *pool) get() *instance {
	n := uint32(len(p.shards))
	start := p.next.Add(1)
	for i := uint32(0); i < n; i++ {
		s := &p.shards[(start+i)%n]
		if !s.mu.TryLock() {
			continue
		}
		if k := len(s.free); k > 0 {
			inst := s.free[k-1]
			s.free[k-1] = nil
			s.free = s.free[:k-1]
			s.mu.Unlock()
			return inst
		}
		s.mu.Unlock()
	}
	// Every shard was busy or empty: look once more, waiting for locks, so
	// an idle instance is not missed under contention.
	for i := uint32(0); i < n; i++ {
		s := &p.shards[(start+i)%n]
		s.mu.Lock()
		if k := len(s.free); k > 0 {
			inst := s.free[k-1]
			s.free[k-1] = nil
			s.free = s.free[:k-1]
			s.mu.Unlock()
			return inst
		}
		s.mu.Unlock()
	}
	return nil
}

// put returns an idle instance to the pool.
func (p *pool) put(inst *instance) {
	n := uint32(len(p.shards))
	start := p.next.Add(1)
	for i := uint32(0); i < n; i++ {
		s := &p.shards[(start+i)%n]
		if s.mu.TryLock() {
			s.free = append(s.free, inst)
			s.mu.Unlock()
			return
		}
	}
	s := &p.shards[start%n]
	s.mu.Lock()
	s.free = append(s.free, inst)
	s.mu.Unlock()
}

// drain removes and returns every idle instance.
func (p *pool) drain() []*instance {
	var all []*instance
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		all = append(all, s.free...)
		s.free = nil
		s.mu.Unlock()
	}
	return all
}
