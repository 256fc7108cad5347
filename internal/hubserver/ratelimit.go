package hubserver

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// limiter is a set of token buckets (golang.org/x/time/rate), one per key:
// an account name, or the client address for requests without a valid
// token. A bucket holds up to burst tokens and refills at rate tokens per
// second; a request takes one.
//
// The table is bounded: idle buckets (full again) are swept once a minute,
// and when maxKeys buckets are live a new key is refused rather than let an
// attacker with many addresses grow the table without bound. Every reading
// of the clock is l.now's, so tests drive the buckets with a fake clock.
type limiter struct {
	rate    rate.Limit
	burst   int
	maxKeys int
	now     func() time.Time

	// shared, when set, keeps the buckets every hub process shares (the
	// PostgreSQL store): a limit then holds across the nodes behind one
	// URL. When it fails, this process's own buckets decide (a request is
	// still limited, per node) and the failure is logged.
	shared SharedLimits
	log    *slog.Logger
	// fellBack, if set, counts a request decided without shared because
	// it failed (the metrics).
	fellBack func()
	warned   atomic.Int64 // when the failure of shared was last logged, Unix nanoseconds

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// SharedLimits is a Store that keeps rate-limit buckets for every hub
// process that shares it. TakeToken takes a token from key's bucket (up to
// burst tokens, refilled at perSecond) as of now; without one it returns
// false and how long until there will be.
type SharedLimits interface {
	TakeToken(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (ok bool, wait time.Duration, err error)
}

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	return &limiter{rate: rate.Limit(perSecond), burst: burst, maxKeys: 100_000, now: now, buckets: map[string]*rate.Limiter{}}
}

// allow takes a token from key's bucket. When there is none it returns
// false and how long until there will be (the Retry-After of the refusal).
//
// With shared buckets, this process's own bucket is asked first: it counts
// a subset of what the shared one counts (a token the shared bucket refused
// is given back), with the same rate and burst, so it never refuses what
// the shared one would allow — and a flood it refuses costs the database
// nothing.
func (l *limiter) allow(ctx context.Context, key string) (bool, time.Duration) {
	now := l.now()
	r, wait := l.allowLocal(key, now)
	if r == nil || l.shared == nil {
		return r != nil, wait
	}
	ok, wait, err := l.shared.TakeToken(ctx, key, float64(l.rate), l.burst, now)
	switch {
	case err == nil && ok:
		return true, 0
	case err == nil:
		// Refused by the shared bucket: this node's gives its token back,
		// so it keeps counting only what was served.
		l.mu.Lock()
		r.CancelAt(now)
		l.mu.Unlock()
		return false, wait
	case ctx.Err() != nil: // the client went away
		return false, time.Second
	}
	if l.fellBack != nil {
		l.fellBack()
	}
	// Once per minute at most: while the database is down every request
	// gets here, and the requests' own failures are logged already.
	if last := l.warned.Load(); now.UnixNano()-last > int64(time.Minute) && l.warned.CompareAndSwap(last, now.UnixNano()) {
		l.log.Warn("rate limit: the shared buckets failed; this node's own decide (logged once a minute while it lasts)", "err", err)
	}
	return true, 0
}

// allowLocal takes a token from this process's bucket of key and returns
// its reservation, or nil and how long until there will be one.
func (l *limiter) allowLocal(key string, now time.Time) (*rate.Reservation, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.maxKeys {
			l.sweep(now)
			if len(l.buckets) >= l.maxKeys {
				return nil, time.Second
			}
		}
		b = rate.NewLimiter(l.rate, l.burst) // full
		l.buckets[key] = b
	}
	// A reservation says when the token would be there; a request that
	// would have to wait is refused, and its reservation given back.
	r := b.ReserveN(now, 1)
	if !r.OK() { // a burst below one token: never
		return nil, time.Second
	}
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return nil, wait
	}
	return r, 0
}

// sweep drops buckets that are full again: forgetting them changes nothing.
func (l *limiter) sweep(now time.Time) {
	l.lastSweep = now
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
}

// clientKey returns the rate-limit key of a client address: the IPv4
// address, or the /64 of an IPv6 address (one subscriber usually holds a
// whole /64, so per-address buckets would be free to multiply).
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "addr:" + host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return "addr:" + p.String()
	}
	return "addr:" + ip.String()
}
