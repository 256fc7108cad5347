package audit

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/internal/sandbox"
)

// The audit rate limit bounds what one module can write to the audit log: in
// any Window, at most MaxPerWindow records, whatever it does. Its allowed
// decisions and its denials each have an allowance of their own —
// RecordsPerWindow decisions stored one by one and SummariesPerWindow
// summary rows — so that a module cannot spend its allowance on allowed
// decisions to have a denial only counted. Past its allowance a decision is
// counted, not stored, and the counts are stored as summary rows whose
// Folded field says how many decisions each stands for: every decision is
// stored one by one or counted in exactly one summary. See RATIONALE.md,
// "Why is the audit log rate-limited per module, and how does it stay
// complete?" and "What bounds a module's audit records, and why these
// numbers?".
const (
	// Window is the span the bounds are counted over: any Window of the
	// rate limit's clock, sliding, not minutes of the wall clock.
	Window = time.Minute
	// RecordsPerWindow is the most decisions of one module stored one by
	// one in any Window: this many allowed decisions, and this many
	// denials.
	RecordsPerWindow = 250
	// SummariesPerWindow is the most summary rows of one module in any
	// Window: this many for its allowed decisions, and this many for its
	// denials. The last of them is kept for Close, so that what is counted
	// when the station stops is stored within the bound too.
	SummariesPerWindow = 50
	// MaxPerWindow is the most audit records of one module in any Window,
	// summary rows included: the documented bound.
	MaxPerWindow = 2 * (RecordsPerWindow + SummariesPerWindow) // 600
	// SummaryEvery is how long a counted decision waits, at most, before
	// its summary is due (the writer looks every tickEvery). A summary
	// that is due is stored unless the module has used its summary rows
	// of the last Window; then it waits until one is free, or Close.
	SummaryEvery = 10 * time.Second
	// tickEvery is how often the writer stores the summaries that are
	// due, so that counts do not wait for the module's next decision.
	tickEvery = time.Second
)

// limits are the numbers of a rate limit; tests use small ones.
type limits struct {
	window    time.Duration
	records   int // one-by-one records per window, per module and verdict
	summaries int // summary rows per window, per module and verdict; ≥ 1
	every     time.Duration
}

var defaultLimits = limits{window: Window, records: RecordsPerWindow, summaries: SummariesPerWindow, every: SummaryEvery}

// admission is what the rate limit made of a decision.
type admission int

const (
	stored  admission = iota // store it one by one
	counted                  // it is counted in a summary to come
	refused                  // the limiter is closed: neither (the writer logs it)
)

// rateLimiter decides which decisions are stored one by one, and makes the
// summaries of the others. It is safe for concurrent use; modules do not
// share a lock, so a flooding module slows no other module's admission.
type rateLimiter struct {
	lim     limits
	now     func() time.Time
	modules sync.Map // module id → *moduleLimit
	closed  atomic.Bool
}

func newRateLimiter(lim limits, now func() time.Time) *rateLimiter {
	if lim.summaries < 1 {
		panic("audit: a rate limit needs at least one summary row per window")
	}
	return &rateLimiter{lim: lim, now: now}
}

// moduleLimit is one module's state.
type moduleLimit struct {
	mu sync.Mutex
	// elapsed is the module's own clock: the time that has passed since
	// its first decision, by the limiter's clock, never going back. A
	// reading earlier than the last one counts as no time (time.Now's
	// readings carry the monotonic clock, so this only happens with an
	// injected clock); a later one counts as time that passed.
	// The clock is read under mu, so that readings are in order: a
	// reading taken before waiting for the lock would count time twice.
	elapsed time.Duration
	last    time.Time // the reading elapsed was last advanced to; zero before the first
	closed  bool      // the limiter's final summaries are taken
	// queuing counts admissions that returned something to store, until
	// the writer has queued it (done): Close waits for them.
	queuing int
	verdict [2]verdictLimit
}

// verdictLimit is one allowance of a module: its denials ([0]) or its
// allowed decisions ([1]).
type verdictLimit struct {
	records   ring // when decisions were stored one by one
	summaries ring // when summary rows were stored
	held      map[sandbox.Capability]*tally
	since     time.Duration // when the oldest held decision was counted
}

// tally is the count of held decisions of one capability.
type tally struct {
	n           int
	first, last time.Time // of the decisions' own times
	command     string    // "" once two decisions differ in it
	trace       string
}

// ring holds the times of the newest entries of a sliding window, oldest
// first from next once it is full. Times are added in order.
//
// It is a window, not a token bucket (golang.org/x/time/rate, which the hub
// uses): a bucket of max tokens refilled at max per span lets through max
// and then its refill, up to twice max in one span, and cannot say how many
// summary rows a span has left. The bounds here hold in any span.
type ring struct {
	at   []time.Duration
	next int
}

// full reports whether max entries are within span of now.
func (r *ring) full(now, span time.Duration, max int) bool {
	return len(r.at) >= max && now-r.at[r.next] < span
}

// room is how many entries may be added at now with at most max within any
// span.
func (r *ring) room(now, span time.Duration, max int) int {
	n := 0
	for _, t := range r.at {
		if now-t < span {
			n++
		}
	}
	return max - n
}

// add records an entry at now, forgetting the oldest if there are max.
func (r *ring) add(now time.Duration, max int) {
	if len(r.at) < max {
		r.at = append(r.at, now)
		return
	}
	r.at[r.next] = now
	r.next = (r.next + 1) % max
}

// module returns id's state, creating it.
func (r *rateLimiter) module(id string) *moduleLimit {
	if m, ok := r.modules.Load(id); ok {
		return m.(*moduleLimit)
	}
	m, _ := r.modules.LoadOrStore(id, &moduleLimit{})
	return m.(*moduleLimit)
}

// advance reads the clock, moves the module's clock to the reading and
// returns both. m.mu is held.
func (m *moduleLimit) advance(clock func() time.Time) (time.Duration, time.Time) {
	now := clock()
	if d := now.Sub(m.last); d > 0 && !m.last.IsZero() {
		m.elapsed += d
	}
	m.last = now
	return m.elapsed, now
}

// admit decides on d, and returns the summaries of d's module and verdict
// that are due (to be stored before d). If it returns stored or summaries,
// the caller calls done(d.Module) once it has queued them.
func (r *rateLimiter) admit(d sandbox.Decision) (admission, []sandbox.Decision) {
	m := r.module(d.Module)
	m.mu.Lock()
	defer m.mu.Unlock()
	// closed is set before Close takes the final summaries, and each
	// module's are taken under m.mu: a decision either sees it, or is
	// held before they are taken.
	if m.closed || r.closed.Load() {
		return refused, nil
	}
	el, now := m.advance(r.now)
	v := &m.verdict[btoi(d.Allowed)]
	a := stored
	if v.records.full(el, r.lim.window, r.lim.records) {
		v.count(d, el)
		a = counted
	} else {
		v.records.add(el, r.lim.records)
	}
	var out []sandbox.Decision
	if v.due(el, r.lim) {
		out = v.summarize(d.Module, d.Allowed, el, now, r.lim, 1)
	}
	if a == stored || len(out) > 0 {
		m.queuing++
	}
	return a, out
}

// done says that what admit returned for module's decision is queued.
func (r *rateLimiter) done(module string) {
	m := r.module(module)
	m.mu.Lock()
	m.queuing--
	m.mu.Unlock()
}

// settled reports whether everything admit returned has been queued.
// After final, once it is true it stays true.
func (r *rateLimiter) settled() bool {
	ok := true
	r.modules.Range(func(_, val any) bool {
		m := val.(*moduleLimit)
		m.mu.Lock()
		ok = m.queuing == 0
		m.mu.Unlock()
		return ok
	})
	return ok
}

// due returns the summaries that are due, of every module: those whose
// oldest count is SummaryEvery old.
func (r *rateLimiter) due() []sandbox.Decision {
	return r.each(func(v *verdictLimit, el time.Duration) bool { return v.due(el, r.lim) }, 1, false)
}

// flush returns the summaries of every count held, as far as each module's
// summary rows allow.
func (r *rateLimiter) flush() []sandbox.Decision {
	return r.each(func(*verdictLimit, time.Duration) bool { return true }, 1, false)
}

// final closes the limiter and returns the summaries of every count held:
// Close's, which may use the last summary row of a window. Decisions
// admitted after it are refused.
func (r *rateLimiter) final() []sandbox.Decision {
	r.closed.Store(true)
	return r.each(func(*verdictLimit, time.Duration) bool { return true }, 0, true)
}

// each summarizes, for every module and verdict for which want is true,
// keeping reserve summary rows of the window unused; close marks the
// modules closed.
func (r *rateLimiter) each(want func(*verdictLimit, time.Duration) bool, reserve int, close bool) []sandbox.Decision {
	var out []sandbox.Decision
	r.modules.Range(func(k, val any) bool {
		id, m := k.(string), val.(*moduleLimit)
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed {
			return true
		}
		el, now := m.advance(r.now)
		for i := range m.verdict {
			if v := &m.verdict[i]; want(v, el) {
				out = append(out, v.summarize(id, i == 1, el, now, r.lim, reserve)...)
			}
		}
		if close {
			m.closed = true
		}
		return true
	})
	return out
}

// count holds d in its capability's tally.
func (v *verdictLimit) count(d sandbox.Decision, el time.Duration) {
	if v.held == nil {
		v.held = map[sandbox.Capability]*tally{}
	}
	if len(v.held) == 0 {
		v.since = el
	}
	t := v.held[d.Capability]
	if t == nil {
		t = &tally{first: d.Time, last: d.Time, command: d.Command, trace: d.Trace}
		v.held[d.Capability] = t
	}
	t.n++
	if d.Time.Before(t.first) {
		t.first = d.Time
	}
	if d.Time.After(t.last) {
		t.last = d.Time
	}
	if t.command != d.Command {
		t.command = ""
	}
	if t.trace != d.Trace {
		t.trace = ""
	}
}

// due reports whether v's oldest count has waited SummaryEvery.
func (v *verdictLimit) due(el time.Duration, lim limits) bool {
	return len(v.held) > 0 && el-v.since >= lim.every
}

// summarize turns v's held counts into summary rows stamped now, at most as
// many as the window has summary rows left (less reserve), and clears them.
// One row per capability, the largest counts first; if there are more
// capabilities than rows, the last row folds the rest together (with no
// capability). With no row left, the counts stay held.
func (v *verdictLimit) summarize(module string, allowed bool, el time.Duration, now time.Time, lim limits, reserve int) []sandbox.Decision {
	if len(v.held) == 0 {
		return nil
	}
	rows := v.summaries.room(el, lim.window, lim.summaries) - reserve
	if rows <= 0 {
		if reserve > 0 {
			return nil
		}
		// Close always has its row (the others keep one free); should it
		// not, a row over the bound is better than a count lost.
		rows = 1
	}
	caps := make([]sandbox.Capability, 0, len(v.held))
	for c := range v.held {
		caps = append(caps, c)
	}
	slices.SortFunc(caps, func(a, b sandbox.Capability) int {
		if c := cmp.Compare(v.held[b].n, v.held[a].n); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var out []sandbox.Decision
	one := caps
	if len(caps) > rows {
		one = caps[:rows-1]
	}
	for _, c := range one {
		out = append(out, summary(module, allowed, c, 1, v.held[c], now))
	}
	if rest := caps[len(one):]; len(rest) > 0 {
		t := *v.held[rest[0]]
		for _, c := range rest[1:] {
			u := v.held[c]
			t.n += u.n
			t.first, t.last = minTime(t.first, u.first), maxTime(t.last, u.last)
			if t.command != u.command {
				t.command = ""
			}
			if t.trace != u.trace {
				t.trace = ""
			}
		}
		out = append(out, summary(module, allowed, "", len(rest), &t, now))
	}
	for range out {
		v.summaries.add(el, lim.summaries)
	}
	clear(v.held)
	return out
}

// summary is the row for t: the decisions of capability c, or of ncaps
// capabilities when c is "".
func summary(module string, allowed bool, c sandbox.Capability, ncaps int, t *tally, now time.Time) sandbox.Decision {
	verdict := "denied"
	if allowed {
		verdict = "allowed"
	}
	what, target := string(c)+" decisions", fmt.Sprintf("(%d decisions)", t.n)
	if c == "" {
		what = fmt.Sprintf("decisions of %d capabilities", ncaps)
		target = fmt.Sprintf("(%d decisions of %d capabilities)", t.n, ncaps)
	}
	return sandbox.Decision{
		Time:       now,
		Module:     module,
		Command:    t.command,
		Trace:      t.trace,
		Capability: c,
		Target:     target,
		Allowed:    allowed,
		Folded:     t.n,
		Reason: fmt.Sprintf("audit rate limit: %d more %s %s from %s to %s were counted, not recorded one by one",
			t.n, verdict, what, t.first.UTC().Format(time.RFC3339Nano), t.last.UTC().Format(time.RFC3339Nano)),
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
