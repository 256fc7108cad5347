package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
)

// clock is a fake time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// account splits stored decisions into those stored one by one and the
// decisions summaries fold in, per module, and checks each summary's
// fields against its reason.
func account(t *testing.T, ds []sandbox.Decision) (single, folded map[string]int) {
	t.Helper()
	single, folded = map[string]int{}, map[string]int{}
	for _, d := range ds {
		if d.Folded == 0 {
			single[d.Module]++
			continue
		}
		checkSummary(t, d)
		folded[d.Module] += d.Folded
	}
	return single, folded
}

// checkSummary checks that a summary row's reason says what its fields do.
func checkSummary(t *testing.T, d sandbox.Decision) {
	t.Helper()
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	what := string(d.Capability) + " decisions"
	if d.Capability == "" {
		what = "decisions of "
	}
	if want := fmt.Sprintf("audit rate limit: %d more %s %s", d.Folded, verdict, what); d.Folded < 1 || !strings.HasPrefix(d.Reason, want) {
		t.Errorf("summary %+v: reason does not start %q", d, want)
	}
}

// testLimits are small numbers, for tests that count by hand.
var testLimits = limits{window: Window, records: 100, summaries: 5, every: SummaryEvery}

// TestRateLimitAccountsForEveryDecision: a module over its rate has its
// decisions counted, and the counts — stored as summaries — plus the
// decisions stored one by one add up to exactly what it did; another module
// is not affected.
func TestRateLimitAccountsForEveryDecision(t *testing.T) {
	fs := &fakeStore{}
	clk := &clock{t: epoch}
	w := newWriter(fs, nil, newRateLimiter(testLimits, clk.now))
	deny := func(module string) sandbox.Decision {
		return sandbox.Decision{Time: clk.now(), Module: module, Command: "loop", Capability: sandbox.Network, Target: "evil.example:443", Reason: "not in its allowlist"}
	}

	for range 1000 {
		w.Record(deny("atk/flood"))
	}
	w.Record(deny("atk/quiet"))
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	single, folded := account(t, fs.stored())
	if single["atk/flood"] != 100 || folded["atk/flood"] != 900 {
		t.Errorf("flood: %d stored one by one, %d folded; want 100 and 900", single["atk/flood"], folded["atk/flood"])
	}
	if single["atk/quiet"] != 1 || folded["atk/quiet"] != 0 {
		t.Errorf("quiet module: %d stored, %d folded; want 1 and 0", single["atk/quiet"], folded["atk/quiet"])
	}

	// Half a window later no record has left the window: nothing more is
	// stored one by one. A window after the first records, all of them
	// have.
	clk.advance(Window / 2)
	for range 25 {
		w.Record(deny("atk/flood"))
	}
	clk.advance(Window / 2)
	for range 125 {
		w.Record(deny("atk/flood"))
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	single, folded = account(t, fs.stored())
	if single["atk/flood"] != 200 || folded["atk/flood"] != 950 {
		t.Errorf("flood a window later: %d stored one by one, %d folded; want 200 and 950", single["atk/flood"], folded["atk/flood"])
	}
}

// TestRateLimitAllowedFloodDoesNotHideADenial: a module cannot spend its
// allowance on decisions it is allowed (reading its own files in a loop)
// so that the denial it then provokes is only counted, its target never
// recorded: denials have an allowance of their own.
func TestRateLimitAllowedFloodDoesNotHideADenial(t *testing.T) {
	fs := &fakeStore{}
	clk := &clock{t: epoch}
	w := newWriter(fs, nil, newRateLimiter(testLimits, clk.now))
	for range 1000 {
		w.Record(sandbox.Decision{Time: clk.now(), Module: "atk/noisy", Capability: sandbox.Filesystem, Target: "/data/own.txt", Allowed: true, Reason: "matches /data/**"})
	}
	w.Record(sandbox.Decision{Time: clk.now(), Module: "atk/noisy", Capability: sandbox.Network, Target: "exfil.example:443", Reason: "not in its allowlist"})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range fs.stored() {
		found = found || (!d.Allowed && d.Target == "exfil.example:443" && d.Folded == 0)
	}
	if !found {
		t.Error("the denial of exfil.example:443 was not recorded one by one")
	}
	single, folded := account(t, fs.stored())
	if single["atk/noisy"]+folded["atk/noisy"] != 1001 {
		t.Errorf("%d stored one by one, %d folded; want 1001 in all", single["atk/noisy"], folded["atk/noisy"])
	}
}

// TestRateLimitSummaryIsNotHeldForever: a module that stays over its rate
// gets a summary stored SummaryEvery after its first counted decision, at
// its next decision, without a Flush; and a module that stops gets its
// summary from the writer's ticker.
func TestRateLimitSummaryIsNotHeldForever(t *testing.T) {
	fs := &fakeStore{}
	clk := &clock{t: epoch}
	w := newWriter(fs, nil, newRateLimiter(limits{window: Window, records: 1, summaries: 5, every: SummaryEvery}, clk.now))
	t.Cleanup(func() { w.Close(context.Background()) })
	d := sandbox.Decision{Module: "atk/flood", Capability: sandbox.Filesystem, Target: "/etc/passwd"}
	w.Record(d) // the one record of the window
	for range 50 {
		w.Record(d)
		clk.advance(time.Millisecond)
	}
	clk.advance(SummaryEvery)
	w.Record(d) // still over the rate, and a summary is due
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		_, folded := account(t, fs.stored())
		return folded["atk/flood"] == 51
	}, "the summary at the next decision")

	for range 7 {
		w.Record(d)
	}
	clk.advance(SummaryEvery) // and no decision comes
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		_, folded := account(t, fs.stored())
		return folded["atk/flood"] == 58
	}, "the summary from the ticker")
}

// sim drives a rate limiter the way the writer does — admit for every
// decision, due every second, flush when an operator reads the log, final
// at Close — with an injected clock, and keeps every row the limiter lets
// through with the time that really passed when it did. A backward step of
// the clock is a correction: no time passes. (A forward jump is
// indistinguishable from time passing, and is that here: the production
// clock is monotonic and makes neither.)
type sim struct {
	t       *testing.T
	r       *rateLimiter
	wall    time.Time     // what the injected clock reads
	elapsed time.Duration // the time that really passed
	nextDue time.Duration // when the writer's ticker next looks
	rows    []simRow
	made    map[string]map[bool]int // decisions made, by module and verdict
	refused int                     // decisions admitted after final
}

type simRow struct {
	at time.Duration
	d  sandbox.Decision
}

func newSim(t *testing.T, lim limits) *sim {
	s := &sim{t: t, wall: epoch, made: map[string]map[bool]int{}}
	s.r = newRateLimiter(lim, func() time.Time { return s.wall })
	return s
}

// advance lets d pass, running the ticker as the writer would.
func (s *sim) advance(d time.Duration) {
	end := s.elapsed + d
	for s.nextDue <= end {
		s.wall = s.wall.Add(s.nextDue - s.elapsed)
		s.elapsed = s.nextDue
		s.keep(s.r.due())
		s.nextDue += tickEvery
	}
	s.wall = s.wall.Add(end - s.elapsed)
	s.elapsed = end
}

// stepBack sets the clock back by d; no time passes.
func (s *sim) stepBack(d time.Duration) { s.wall = s.wall.Add(-d) }

func (s *sim) keep(ds []sandbox.Decision) {
	for _, d := range ds {
		s.rows = append(s.rows, simRow{s.elapsed, d})
	}
}

func (s *sim) record(module string, allowed bool, c sandbox.Capability, command, trace string) {
	d := sandbox.Decision{Time: s.wall, Module: module, Command: command, Trace: trace, Capability: c, Target: "t", Allowed: allowed}
	a, sums := s.r.admit(d)
	s.keep(sums)
	switch a {
	case stored:
		s.keep([]sandbox.Decision{d})
	case refused:
		s.refused++
		return
	}
	if s.made[module] == nil {
		s.made[module] = map[bool]int{}
	}
	s.made[module][allowed]++
}

func (s *sim) flush() { s.keep(s.r.flush()) }

// close is the writer's Close: it takes the final summaries, and a decision
// after it is refused.
func (s *sim) close() {
	s.keep(s.r.final())
	s.record("atk/late", false, sandbox.Network, "", "")
	if s.refused != 1 {
		s.t.Errorf("a decision after final was not refused")
	}
}

// check asserts the bound over every sliding window, for every module and
// for each of its verdicts, and that every decision made is stored one by
// one or folded in exactly one summary.
func (s *sim) check(lim limits) {
	s.t.Helper()
	byModule := map[string][]simRow{}
	for _, r := range s.rows {
		byModule[r.d.Module] = append(byModule[r.d.Module], r)
		if r.d.Folded > 0 {
			checkSummary(s.t, r.d)
		}
	}
	for module, made := range s.made {
		rows := byModule[module]
		total := 2 * (lim.records + lim.summaries)
		if n, at := maxInWindow(rows, lim.window, func(simRow) bool { return true }); n > total {
			s.t.Errorf("%s: %d records in the window from %v, want at most %d", module, n, at, total)
		}
		for _, allowed := range []bool{false, true} {
			for _, kind := range []struct {
				name   string
				folded bool
				max    int
			}{{"one by one", false, lim.records}, {"summaries", true, lim.summaries}} {
				n, at := maxInWindow(rows, lim.window, func(r simRow) bool { return r.d.Allowed == allowed && (r.d.Folded > 0) == kind.folded })
				if n > kind.max {
					s.t.Errorf("%s, allowed=%v: %d %s in the window from %v, want at most %d", module, allowed, n, kind.name, at, kind.max)
				}
			}
			single, folded := 0, 0
			for _, r := range rows {
				if r.d.Allowed != allowed {
					continue
				}
				if r.d.Folded == 0 {
					single++
				}
				folded += r.d.Folded
			}
			if single+folded != made[allowed] {
				s.t.Errorf("%s, allowed=%v: %d one by one + %d folded = %d, want the %d decisions made", module, allowed, single, folded, single+folded, made[allowed])
			}
		}
	}
	for module := range byModule {
		if s.made[module] == nil {
			s.t.Errorf("records of %s, which made no decision", module)
		}
	}
}

// maxInWindow is the most rows that match in any window [at, at+span) of
// rows, which are in time order, and where that window starts.
func maxInWindow(rows []simRow, span time.Duration, match func(simRow) bool) (int, time.Duration) {
	var at []time.Duration
	for _, r := range rows {
		if match(r) {
			at = append(at, r.at)
		}
	}
	best, start, j := 0, time.Duration(0), 0
	for i := range at {
		for j < len(at) && at[j]-at[i] < span {
			j++
		}
		if j-i > best {
			best, start = j-i, at[i]
		}
	}
	return best, start
}

// TestRateLimitBoundHolds drives floods of many shapes through the rate
// limit with the documented numbers and checks, over every sliding window,
// that a module's records stay within MaxPerWindow (each verdict within
// RecordsPerWindow one by one and SummariesPerWindow summaries), and that
// the records account for every decision.
func TestRateLimitBoundHolds(t *testing.T) {
	caps := []sandbox.Capability{sandbox.Network, sandbox.Filesystem, sandbox.Subprocess, sandbox.LLM, sandbox.Host}
	shapes := []struct {
		name string
		run  func(s *sim)
	}{
		{"a million denials in a minute", func(s *sim) {
			for range 1_000_000 {
				s.record("atk/flood", false, sandbox.Network, "loop", "")
				s.advance(60 * time.Microsecond)
			}
		}},
		{"a million denials at one instant", func(s *sim) {
			for range 1_000_000 {
				s.record("atk/flood", false, sandbox.Network, "loop", "")
			}
			s.advance(time.Hour)
			s.record("atk/flood", false, sandbox.Network, "loop", "")
		}},
		{"allowed and denied alternating", func(s *sim) {
			for i := range 400_000 {
				s.record("atk/flood", i%2 == 0, caps[i%2], "loop", "")
				s.advance(300 * time.Microsecond)
			}
		}},
		{"1000 capabilities by commands and traces", func(s *sim) {
			for i := range 300_000 {
				s.record("atk/flood", i%3 == 0, sandbox.Capability(fmt.Sprintf("cap-%03d", i%1000)), fmt.Sprintf("cmd-%d", i%7), fmt.Sprintf("trace-%d", i))
				s.advance(time.Millisecond)
			}
		}},
		{"every capability, flushed by an operator polling", func(s *sim) {
			for i := range 200_000 {
				s.record("atk/flood", i%5 == 0, caps[i%len(caps)], "loop", "")
				if i%1000 == 0 {
					s.flush()
				}
				s.advance(time.Millisecond)
			}
		}},
		{"bursts at window boundaries", func(s *sim) {
			// Bursts a nanosecond before, at and after each multiple of
			// the window: the one before is inside the window of the
			// records a window earlier.
			for k := range time.Duration(6) {
				for _, at := range []time.Duration{k*Window - time.Nanosecond, k * Window, k*Window + time.Nanosecond} {
					if at < s.elapsed {
						continue
					}
					s.advance(at - s.elapsed)
					for range 10_000 {
						s.record("atk/flood", false, sandbox.Network, "", "")
						s.record("atk/flood", true, sandbox.Filesystem, "", "")
					}
					s.flush()
				}
			}
		}},
		{"a slow trickle just over the rate", func(s *sim) {
			// 300 a minute, one at a time, for ten minutes.
			for range 3000 {
				s.record("atk/trickle", false, sandbox.Network, "", "")
				s.advance(200 * time.Millisecond)
			}
		}},
		{"a trickle exactly at the rate", func(s *sim) {
			for range 3000 {
				s.record("atk/trickle", false, sandbox.Network, "", "")
				s.advance(Window / RecordsPerWindow)
			}
			// All of it is stored one by one.
			for _, r := range s.rows {
				if r.d.Folded > 0 {
					s.t.Errorf("a summary of a module within its rate: %+v", r.d)
				}
			}
		}},
		{"the clock stepping back", func(s *sim) {
			for i := range 300_000 {
				s.record("atk/flood", i%2 == 0, sandbox.Network, "", "")
				s.advance(time.Millisecond)
				switch i % 50_000 {
				case 10_000:
					s.stepBack(time.Hour)
				case 30_000:
					s.stepBack(59 * time.Second)
				}
			}
		}},
		{"random", func(s *sim) {
			rng := rand.New(rand.NewPCG(1, 2))
			for range 300_000 {
				module := fmt.Sprintf("atk/m%d", rng.IntN(3))
				s.record(module, rng.IntN(2) == 0, caps[rng.IntN(len(caps))], fmt.Sprintf("cmd-%d", rng.IntN(3)), "")
				switch x := rng.IntN(10_000); {
				case x < 5:
					s.flush()
				case x < 7:
					s.stepBack(time.Duration(rng.Int64N(int64(time.Hour))))
				case x < 9:
					s.advance(time.Duration(rng.Int64N(int64(2 * Window))))
				default:
					s.advance(time.Duration(rng.ExpFloat64() * float64(500*time.Microsecond)))
				}
			}
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, defaultLimits)
			shape.run(s)
			s.advance(time.Second)
			s.close()
			s.check(defaultLimits)
		})
	}
}

// TestRateLimitMillionDenialsThroughTheWriter: a million denials in a
// minute through the writer, Close included: the stored records — the
// injected clock is their time — stay within the bound in every window,
// and account for every denial.
func TestRateLimitMillionDenialsThroughTheWriter(t *testing.T) {
	fs := &fakeStore{}
	clk := &clock{t: epoch}
	w := newWriter(fs, nil, newRateLimiter(defaultLimits, clk.now))
	const n = 1_000_000
	for i := range n {
		w.Record(sandbox.Decision{Time: clk.now(), Module: "atk/flood", Command: "loop", Capability: sandbox.Network, Target: "evil.example:443", Reason: "not in its allowlist"})
		if i%100_000 == 0 {
			if err := w.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		clk.advance(60 * time.Microsecond)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := fs.stored()
	rows := make([]simRow, len(got))
	for i, d := range got {
		rows[i] = simRow{d.Time.Sub(epoch), d}
	}
	slices.SortStableFunc(rows, func(a, b simRow) int { return int(a.at - b.at) })
	if m, at := maxInWindow(rows, Window, func(simRow) bool { return true }); m > MaxPerWindow {
		t.Errorf("%d records in the window from %v, want at most %d", m, at, MaxPerWindow)
	}
	single, folded := account(t, got)
	if single["atk/flood"] != RecordsPerWindow || single["atk/flood"]+folded["atk/flood"] != n {
		t.Errorf("%d one by one + %d folded; want %d one by one and %d in all", single["atk/flood"], folded["atk/flood"], RecordsPerWindow, n)
	}
	t.Logf("%d decisions, %d records", n, len(got))
}

// TestRateLimitFloodDoesNotDelayAnotherModule: while one module floods for
// five minutes and the store does not move at all, another module's Record
// calls return at once — the flood's records are too few to fill the queue,
// so nobody waits on back-pressure — and every one of its decisions is then
// stored one by one, in order.
func TestRateLimitFloodDoesNotDelayAnotherModule(t *testing.T) {
	fs := &fakeStore{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	clk := &clock{t: epoch}
	w := newWriter(fs, nil, newRateLimiter(defaultLimits, clk.now))
	w.Record(sandbox.Decision{Module: "atk/flood", Capability: sandbox.Network, Target: "first"})
	<-fs.entered // the store holds the first batch until the gate opens

	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for i := range 1_000_000 {
			w.Record(sandbox.Decision{Time: clk.now(), Module: "atk/flood", Allowed: i%2 == 0, Capability: sandbox.Network, Target: "evil.example:443"})
			if i%1000 == 0 {
				clk.advance(300 * time.Millisecond) // five minutes in all
			}
		}
	}()
	const quiet = 200
	for i := range quiet {
		done := make(chan struct{})
		go func() {
			w.Record(sandbox.Decision{Time: clk.now(), Module: "ok/quiet", Allowed: i%2 == 0, Capability: sandbox.Filesystem, Target: fmt.Sprintf("/data/%d", i)})
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the quiet module's decision %d waited while the store was stalled", i)
		}
	}
	<-flooded
	close(fs.gate)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range fs.stored() {
		if d.Module == "ok/quiet" {
			if d.Folded != 0 {
				t.Errorf("a summary of the quiet module: %+v", d)
			}
			got = append(got, d.Target)
		}
	}
	if len(got) != quiet {
		t.Fatalf("%d of the quiet module's %d decisions stored", len(got), quiet)
	}
	for i, target := range got {
		if want := fmt.Sprintf("/data/%d", i); target != want {
			t.Fatalf("the quiet module's decision %d is %s, want %s", i, target, want)
		}
	}
	single, folded := account(t, fs.stored())
	if single["atk/flood"]+folded["atk/flood"] != 1_000_001 {
		t.Errorf("flood: %d one by one + %d folded, want 1000001", single["atk/flood"], folded["atk/flood"])
	}
}

// TestRateLimitCloseWhileRecording closes a rate-limited writer while
// flooding goroutines still record: every decision is stored one by one,
// folded in a stored summary, or logged as recorded after Close — none
// vanishes in the counts held at shutdown.
func TestRateLimitCloseWhileRecording(t *testing.T) {
	fs := &fakeStore{}
	log, buf := testLogger()
	clk := &clock{t: epoch}
	w := newWriter(fs, log, newRateLimiter(defaultLimits, clk.now))
	const goroutines, each = 8, 5000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				w.Record(decision(fmt.Sprintf("owner/m%d", g%3), i))
			}
		}()
	}
	close(start)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	stored := 0
	for _, d := range fs.stored() {
		stored += max(1, d.Folded)
	}
	logged := strings.Count(buf.String(), "after the audit writer was closed")
	if stored+logged != goroutines*each {
		t.Errorf("stored %d + logged %d = %d, want %d", stored, logged, stored+logged, goroutines*each)
	}
}

// BenchmarkAdmit measures the rate limit's admission of one decision, on
// the production clock (time.Now). stored, the baseline, is a module within
// its rate: every decision is stored one by one (a window of a nanosecond
// keeps it within). counted is a module flooding far over its rate: every
// decision is counted. counted-parallel is that flood from every CPU at
// once, on one module's lock; beside-flood is one goroutine's flood of its
// own module while the other CPUs flood another module: the modules share no
// lock, so it should cost what counted does.
func BenchmarkAdmit(b *testing.B) {
	d := sandbox.Decision{Time: epoch, Module: "atk/flood", Command: "loop", Capability: sandbox.Network, Target: "evil.example:443"}
	flooded := func(module string) *rateLimiter {
		r := newRateLimiter(defaultLimits, time.Now)
		q := d
		q.Module = module
		for range RecordsPerWindow {
			r.admit(q)
		}
		return r
	}
	b.Run("stored", func(b *testing.B) {
		lim := defaultLimits
		lim.window = time.Nanosecond
		r := newRateLimiter(lim, time.Now)
		b.ReportAllocs()
		for b.Loop() {
			r.admit(d)
		}
	})
	b.Run("counted", func(b *testing.B) {
		r := flooded(d.Module)
		b.ReportAllocs()
		for b.Loop() {
			r.admit(d)
		}
	})
	b.Run("counted-parallel", func(b *testing.B) {
		r := flooded(d.Module)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r.admit(d)
			}
		})
	})
	b.Run("beside-flood", func(b *testing.B) {
		r := flooded(d.Module)
		q := d
		q.Module = "ok/other"
		for range RecordsPerWindow {
			r.admit(q)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range max(1, runtime.GOMAXPROCS(0)-1) {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						r.admit(d)
					}
				}
			})
		}
		b.ReportAllocs()
		for b.Loop() {
			r.admit(q)
		}
		close(stop)
		wg.Wait()
	})
}
