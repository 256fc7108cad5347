package hubserver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPostgresTakeToken: the shared buckets give each token once under
// concurrency (from two pools, as two nodes), refill at the rate, never
// mint tokens for a clock that went back, and forget only full buckets.
func TestPostgresTakeToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := openPostgres(t)
	b, err := OpenPostgres(ctx, a.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Unix(1_800_000_000, 0)
	const burst, perSecond = 10, 2.0

	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(st *Postgres) {
			defer wg.Done()
			took, wait, err := st.TakeToken(ctx, "addr:192.0.2.1", perSecond, burst, now)
			if err != nil {
				t.Error(err)
			}
			if took {
				ok.Add(1)
			} else if wait <= 0 || wait > time.Second/perSecond {
				t.Errorf("refused with a wait of %s, want (0, 500ms]", wait)
			}
		}([]*Postgres{a, b}[i%2])
	}
	wg.Wait()
	if ok.Load() != burst {
		t.Fatalf("%d of 40 concurrent requests took a token, want the burst of %d", ok.Load(), burst)
	}
	take := func(at time.Time) bool {
		t.Helper()
		took, _, err := a.TakeToken(ctx, "addr:192.0.2.1", perSecond, burst, at)
		if err != nil {
			t.Fatal(err)
		}
		return took
	}
	// A clock that went back (another node's) mints nothing.
	if take(now.Add(-time.Hour)) {
		t.Error("a request dated an hour earlier took a token from an empty bucket")
	}
	// 1.5 s later: 3 tokens.
	later := now.Add(1500 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if !take(later) {
			t.Fatalf("token %d of the 3 refilled in 1.5 s was refused", i+1)
		}
	}
	if take(later) {
		t.Error("a fourth token after 1.5 s at 2/s")
	}
	// Another key has a bucket of its own.
	if took, _, _ := a.TakeToken(ctx, "account:erin", perSecond, burst, later); !took {
		t.Error("another key's first request was refused")
	}

	// The sweep forgets buckets full again, and only those.
	if _, err := a.pool.Exec(ctx, `INSERT INTO rate_buckets (key, tokens, at) VALUES ('account:old', 0, $1)`, now.Add(-time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	a.lastSweep.Store(0)
	take(later.Add(time.Second))
	var keys []string
	rows, err := a.pool.Query(ctx, `SELECT key FROM rate_buckets ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		keys = append(keys, k)
	}
	if len(keys) != 2 || keys[0] != "account:erin" || keys[1] != "addr:192.0.2.1" {
		t.Errorf("after the sweep the buckets are %q, want the two in use", keys)
	}
}

// TestPostgresPingWithThePoolBusy: readiness answers while every
// connection of the pool is taken (a burst), and again after its own
// connection broke.
func TestPostgresPingWithThePoolBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := OpenPostgres(ctx, openPostgres(t).pool.Config().ConnString(), WithMaxConns(1))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	held, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	for i := range 2 {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := st.Ping(pctx)
		cancel()
		if err != nil {
			t.Fatalf("ping %d with the pool's one connection taken: %v", i+1, err)
		}
		st.pingConn.Close(ctx) // broken: the next ping opens another
	}
}
