package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/station-dev/station/internal/sandbox"
)

// The audit rate limit: each module may have DefaultBurst decisions stored
// one by one at once, refilled at DefaultRate per second, for its allowed
// decisions and again for its denials (so that a module cannot spend its
// allowance on allowed decisions to have a denial only counted). Past that, its
// decisions are counted, not stored, and the counts are stored as summary
// decisions — so a module looping on denied requests cannot fill the disk or
// bury other modules' records, and the log still says exactly how many
// decisions of each kind it made. See RATIONALE.md, "Why is the audit log
// rate-limited per module?".
const (
	DefaultRate  = 200  // decisions per second per module, sustained
	DefaultBurst = 2000 // decisions per module, at once
	// summaryEvery is how long suppressed counts wait, at most, before a
	// summary is stored even while the module is still over its rate.
	summaryEvery = 5 * time.Second
)

type suppressKey struct {
	capability sandbox.Capability
	allowed    bool
}

type suppressed struct {
	n           int
	first, last time.Time
	command     string
	trace       string
}

// bucketKey names an allowance: a module's allowed decisions, or its
// denials.
type bucketKey struct {
	module  string
	allowed bool
}

// bucket is one allowance of a module.
type bucket struct {
	tokens float64
	last   time.Time // when tokens was last refilled
	since  time.Time // when the oldest unsummarized suppression happened
	held   map[suppressKey]*suppressed
}

// rateLimiter decides which decisions are stored one by one. It is safe for
// concurrent use.
type rateLimiter struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	modules map[bucketKey]*bucket
}

func newRateLimiter(rate, burst float64, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: rate, burst: burst, now: now, modules: map[bucketKey]*bucket{}}
}

// admit reports whether d is to be stored, and returns the summaries that
// are due for d's module (to be stored before d).
func (r *rateLimiter) admit(d sandbox.Decision) (store bool, summaries []sandbox.Decision) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	key := bucketKey{d.Module, d.Allowed}
	b := r.modules[key]
	if b == nil {
		b = &bucket{tokens: r.burst, last: now}
		r.modules[key] = b
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(r.burst, b.tokens+dt*r.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, b.summaries(d.Module, now)
	}
	if b.held == nil {
		b.held = map[suppressKey]*suppressed{}
	}
	k := suppressKey{d.Capability, d.Allowed}
	s := b.held[k]
	if s == nil {
		s = &suppressed{first: d.Time, command: d.Command, trace: d.Trace}
		b.held[k] = s
	}
	if b.since.IsZero() {
		b.since = now
	}
	s.n++
	s.last = d.Time
	if s.command != d.Command {
		s.command = ""
	}
	if s.trace != d.Trace {
		s.trace = ""
	}
	if now.Sub(b.since) >= summaryEvery {
		return false, b.summaries(d.Module, now)
	}
	return false, nil
}

// flush returns the summaries of every module's suppressed decisions.
func (r *rateLimiter) flush() []sandbox.Decision {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sandbox.Decision
	for k, b := range r.modules {
		out = append(out, b.summaries(k.module, now)...)
	}
	return out
}

// summaries turns the held counts into decisions and clears them.
func (b *bucket) summaries(module string, now time.Time) []sandbox.Decision {
	if len(b.held) == 0 {
		return nil
	}
	var out []sandbox.Decision
	for k, s := range b.held {
		verdict := "denied"
		if k.allowed {
			verdict = "allowed"
		}
		out = append(out, sandbox.Decision{
			Time:       now,
			Module:     module,
			Command:    s.command,
			Trace:      s.trace,
			Capability: k.capability,
			Target:     fmt.Sprintf("(%d decisions)", s.n),
			Allowed:    k.allowed,
			Reason: fmt.Sprintf("audit rate limit: %d more %s %s decisions from %s to %s were counted, not recorded one by one",
				s.n, verdict, k.capability, s.first.UTC().Format(time.RFC3339Nano), s.last.UTC().Format(time.RFC3339Nano)),
		})
	}
	// Map order is random; store summaries in a stable order.
	slices.SortFunc(out, func(a, b sandbox.Decision) int {
		if c := strings.Compare(string(a.Capability), string(b.Capability)); c != 0 {
			return c
		}
		return cmp.Compare(btoi(a.Allowed), btoi(b.Allowed))
	})
	clear(b.held)
	b.since = time.Time{}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
