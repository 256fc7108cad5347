package audit

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

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

var summaryCount = regexp.MustCompile(`^audit rate limit: (\d+) more (allowed|denied) (\w+) decisions`)

// account splits stored decisions into those stored one by one and the
// counts summaries stand for, per module.
func account(t *testing.T, ds []sandbox.Decision) (single, summarized map[string]int) {
	t.Helper()
	single, summarized = map[string]int{}, map[string]int{}
	for _, d := range ds {
		if m := summaryCount.FindStringSubmatch(d.Reason); m != nil {
			n, _ := strconv.Atoi(m[1])
			if m[3] != string(d.Capability) || (m[2] == "allowed") != d.Allowed {
				t.Errorf("summary %q does not match its decision %+v", d.Reason, d)
			}
			summarized[d.Module] += n
			continue
		}
		single[d.Module]++
	}
	return single, summarized
}

// TestRateLimitAccountsForEveryDecision: a module over its rate has its
// decisions counted, and the counts — stored as summaries — plus the
// decisions stored one by one add up to exactly what it did; another module
// is not affected.
func TestRateLimitAccountsForEveryDecision(t *testing.T) {
	fs := &fakeStore{}
	w := newWriter(fs, nil)
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	w.rate = newRateLimiter(10, 100, clk.now)
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
	single, summarized := account(t, fs.stored())
	if single["atk/flood"] != 100 || summarized["atk/flood"] != 900 {
		t.Errorf("flood: %d stored one by one, %d summarized; want 100 and 900", single["atk/flood"], summarized["atk/flood"])
	}
	if single["atk/quiet"] != 1 || summarized["atk/quiet"] != 0 {
		t.Errorf("quiet module: %d stored, %d summarized; want 1 and 0", single["atk/quiet"], summarized["atk/quiet"])
	}

	// A second later the bucket has 10 tokens again.
	clk.advance(time.Second)
	for range 25 {
		w.Record(deny("atk/flood"))
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	single, summarized = account(t, fs.stored())
	if single["atk/flood"] != 110 || summarized["atk/flood"] != 915 {
		t.Errorf("flood after refill: %d stored one by one, %d summarized; want 110 and 915", single["atk/flood"], summarized["atk/flood"])
	}
}

// TestRateLimitAllowedFloodDoesNotHideADenial: a module cannot spend its
// allowance on decisions it is allowed (reading its own files in a loop)
// so that the denial it then provokes is only counted, its target never
// recorded: denials have an allowance of their own.
func TestRateLimitAllowedFloodDoesNotHideADenial(t *testing.T) {
	fs := &fakeStore{}
	w := newWriter(fs, nil)
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	w.rate = newRateLimiter(10, 100, clk.now)
	for range 1000 {
		w.Record(sandbox.Decision{Time: clk.now(), Module: "atk/noisy", Capability: sandbox.Filesystem, Target: "/data/own.txt", Allowed: true, Reason: "matches /data/**"})
	}
	w.Record(sandbox.Decision{Time: clk.now(), Module: "atk/noisy", Capability: sandbox.Network, Target: "exfil.example:443", Reason: "not in its allowlist"})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range fs.stored() {
		found = found || (!d.Allowed && d.Target == "exfil.example:443")
	}
	if !found {
		t.Error("the denial of exfil.example:443 was not recorded one by one")
	}
	single, summarized := account(t, fs.stored())
	if single["atk/noisy"]+summarized["atk/noisy"] != 1001 {
		t.Errorf("%d stored one by one, %d summarized; want 1001 in all", single["atk/noisy"], summarized["atk/noisy"])
	}
}

// TestRateLimitSummaryIsNotHeldForever: a module that stays over its rate
// still gets a summary stored every summaryEvery, without a Flush.
func TestRateLimitSummaryIsNotHeldForever(t *testing.T) {
	fs := &fakeStore{}
	w := newWriter(fs, nil)
	t.Cleanup(func() { w.Close(context.Background()) })
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	w.rate = newRateLimiter(0.01, 1, clk.now) // one token per 100 s
	d := sandbox.Decision{Module: "atk/flood", Capability: sandbox.Filesystem, Target: "/etc/passwd"}
	w.Record(d) // the one token
	for range 50 {
		w.Record(d)
		clk.advance(time.Millisecond)
	}
	clk.advance(summaryEvery)
	w.Record(d) // still no token, but a summary is due
	poll(t, "the summary", func() bool {
		_, summarized := account(t, fs.stored())
		return summarized["atk/flood"] == 51
	})
}

// poll calls cond until it is true, failing the test after a bound.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
