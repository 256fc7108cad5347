package host

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The limiter never lets more than max callers in, and every waiter gets in
// eventually: a hammer under -race.
func TestLimiterHammer(t *testing.T) {
	for _, max := range []int{1, 2, 7} {
		l := newLimiter(max)
		var in, peak atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					if err := l.acquire(context.Background()); err != nil {
						t.Error(err)
						return
					}
					n := in.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					in.Add(-1)
					l.release()
				}
			}()
		}
		wg.Wait()
		if got := peak.Load(); got > int64(max) {
			t.Errorf("max %d: peak concurrency %d", max, got)
		}
		if got := l.n.Load(); got != 0 {
			t.Errorf("max %d: %d slots still held", max, got)
		}
		if got := l.nwait.Load(); got != 0 {
			t.Errorf("max %d: %d waiters left", max, got)
		}
	}
}

// A waiter whose context ends leaves the queue and passes on nothing it did
// not get.
func TestLimiterCanceledWaiter(t *testing.T) {
	l := newLimiter(1)
	if err := l.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := l.acquire(ctx); err == nil {
		t.Fatal("acquire at the cap succeeded; want the context's error")
	}
	got := make(chan error, 1)
	go func() { got <- l.acquire(context.Background()) }()
	l.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := l.n.Load(); n != 1 {
		t.Fatalf("slots held: got %d, want 1", n)
	}
}

func TestPoolGetPut(t *testing.T) {
	p := newPool()
	if got := p.get(); got != nil {
		t.Fatalf("empty pool: got %v, want nil", got)
	}
	insts := make([]*instance, 10)
	for i := range insts {
		insts[i] = &instance{}
		p.put(insts[i])
	}
	seen := map[*instance]bool{}
	for range insts {
		inst := p.get()
		if inst == nil || seen[inst] {
			t.Fatalf("got %p (seen %v)", inst, seen[inst])
		}
		seen[inst] = true
	}
	if got := p.get(); got != nil {
		t.Fatalf("drained pool: got %v, want nil", got)
	}
}

// Under concurrent use an instance is never handed to two callers at once.
func TestPoolHammer(t *testing.T) {
	p := newPool()
	const n = 4
	for i := 0; i < n; i++ {
		p.put(&instance{})
	}
	var busy sync.Map
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				inst := p.get()
				if inst == nil {
					continue
				}
				if _, dup := busy.LoadOrStore(inst, true); dup {
					t.Error("instance handed out twice")
					return
				}
				busy.Delete(inst)
				p.put(inst)
			}
		}()
	}
	wg.Wait()
	if got := len(p.drain()); got != n {
		t.Errorf("pool holds %d instances after the hammer, want %d", got, n)
	}
}
