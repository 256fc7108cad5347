package hubserver

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"
)

// limiter is a set of token buckets, one per key: an account name, or the
// client address for requests without a valid token. A bucket holds up to
// burst tokens and refills at rate tokens per second; a request takes one.
//
// The table is bounded: idle buckets (full again) are swept once a minute,
// and when maxKeys buckets are live a new key is refused rather than let an
// attacker with many addresses grow the table without bound.
type limiter struct {
	rate    float64
	burst   float64
	maxKeys int
	now     func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: float64(burst), maxKeys: 100_000, now: now, buckets: map[string]*bucket{}}
}

// allow takes a token from key's bucket. When there is none it returns
// false and how long until there will be.
func (l *limiter) allow(key string) (bool, time.Duration) {
	now := l.now()
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
				return false, time.Second
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.refill(now, l.rate, l.burst)
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
		return false, wait
	}
	b.tokens--
	return true, 0
}

func (b *bucket) refill(now time.Time, rate, burst float64) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(burst, b.tokens+d.Seconds()*rate)
		b.last = now
	}
}

// sweep drops buckets that are full again: forgetting them changes nothing.
func (l *limiter) sweep(now time.Time) {
	l.lastSweep = now
	for k, b := range l.buckets {
		b.refill(now, l.rate, l.burst)
		if b.tokens >= l.burst {
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
