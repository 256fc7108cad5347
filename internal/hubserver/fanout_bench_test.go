package hubserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/pgtest"
)

// The hub at scale, measured (`make bench-hub`, BENCHMARKS.md "The hub at
// scale"). Without STATION_BENCH_HUB=1 (as in CI's one pass over every
// benchmark) the fan-out runs with 100 streams only; with it, 1,000,
// 5,000 and 10,000 (each process then needs over 10,000 descriptors).

// BenchmarkRelayFanout measures one publish (a public event) until every
// one of N event streams has it, on one SQLite hub and on two PostgreSQL
// nodes with the streams spread over both. The hubs run as processes of
// their own (this test binary again), so that what a stream costs the hub
// is measured alone: the growth of the nodes' resident memory from before
// the streams connected to after, per stream. It reports the delivery
// latency after the publish returned (p50, p99 over every stream of every
// publish).
func BenchmarkRelayFanout(b *testing.B) {
	sizes := []int{100}
	if os.Getenv("STATION_BENCH_HUB") == "1" {
		sizes = []int{1000, 5000, 10000}
	}
	for _, n := range sizes {
		if !raiseFileLimit(uint64(n + 1000)) {
			b.Logf("skipping %d streams: the process may not open %d descriptors", n, n+1000)
			continue
		}
		b.Run(fmt.Sprintf("streams=%d/sqlite-1-node", n), func(b *testing.B) {
			dir := b.TempDir()
			st, _, err := hubserver.OpenDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			node := startNodeProcess(b, "sqlite:"+dir, "", hubserver.EnvTestNodeUnlimited+"=1")
			benchFanout(b, st, []*nodeProcess{node}, n)
		})
		b.Run(fmt.Sprintf("streams=%d/postgres-2-nodes", n), func(b *testing.B) {
			dsn, blobs := pgtest.DSN(b), filepath.Join(b.TempDir(), "blobs")
			st, err := hubserver.OpenPostgres(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			var nodes []*nodeProcess
			for range 2 {
				nodes = append(nodes, startNodeProcess(b, dsn, blobs, hubserver.EnvTestNodeUnlimited+"=1"))
			}
			benchFanout(b, st, nodes, n)
		})
	}
}

func benchFanout(b *testing.B, st hubserver.Store, nodes []*nodeProcess, n int) {
	front := &hubtest.Hub{URL: "http://" + nodes[0].addr, Store: st}
	pub, signer := front.Publisher(b, "dave")
	// As many accounts as the streams need, 8 streams each.
	tokens := make([]string, (n+7)/8)
	for i := range tokens {
		tokens[i] = front.Account(b, fmt.Sprintf("s%d", i))
	}
	cursor, err := st.LastSeq(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	sctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	var mu sync.Mutex
	var round struct {
		got  int
		at   []time.Time // when each stream had the event
		done chan struct{}
	}
	arrived := func() {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		round.at = append(round.at, now)
		if round.got++; round.got == n {
			close(round.done)
		}
	}
	rss := func() (kib int) {
		for _, p := range nodes {
			kib += residentKiB(b, p.cmd.Process.Pid)
		}
		return kib
	}
	before := rss()
	connected := make(chan error, n)
	for i := range n {
		go func() {
			req, _ := http.NewRequestWithContext(sctx, "GET", fmt.Sprintf("http://%s/v1/events?cursor=%d", nodes[i%len(nodes)].addr, cursor), nil)
			req.Header.Set("Authorization", "Bearer "+tokens[i/8])
			req.Header.Set("Accept", "text/event-stream")
			resp, err := hc.Do(req)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("stream %d: %s", i, resp.Status)
			}
			connected <- err
			if err != nil {
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if sc.Text() == "event: "+hub.EventModulePublished {
					arrived()
				}
			}
		}()
	}
	for range n {
		if err := within(b, connected, "a stream"); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the nodes' goroutines settle
	perStream := float64(rss()-before) / float64(n)

	var all []time.Duration
	b.ResetTimer()
	for i := range b.N {
		mu.Lock()
		round.got, round.at, round.done = 0, round.at[:0], make(chan struct{})
		done := round.done
		mu.Unlock()
		bundle, err := hubclient.NewBundle(hubtest.Manifest("dave/x", fmt.Sprintf("1.0.%d", i)), hubtest.Wasm(fmt.Sprint(i)), signer)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pub.Publish(context.Background(), bundle); err != nil {
			b.Fatal(err)
		}
		returned := time.Now()
		within(b, done, fmt.Sprintf("publish %d to reach all %d streams", i, n))
		mu.Lock()
		for _, at := range round.at {
			all = append(all, max(at.Sub(returned), 0)) // a stream faster than the publish's answer: 0
		}
		mu.Unlock()
	}
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100])/1e6, "p99-ms")
	b.ReportMetric(perStream, "hub-KiB/stream")
}

// residentKiB returns the resident memory of process pid (VmRSS).
func residentKiB(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib int
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
			return kib
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// raiseFileLimit raises the process's descriptor limit to at least n, if
// its hard limit allows.
func raiseFileLimit(n uint64) bool {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return false
	}
	if l.Cur >= n {
		return true
	}
	if l.Max < n {
		return false
	}
	l.Cur = n
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l) == nil
}

// BenchmarkPublishAndInstall measures a publish of a small module and a
// download of its bundle (what an install fetches), on SQLite with a blob
// directory and on PostgreSQL with the same.
func BenchmarkPublishAndInstall(b *testing.B) {
	fast := func(o *hubserver.Options) { o.Limits.RatePerSecond, o.Limits.Burst = 1e9, 1e9 }
	for _, store := range []string{"sqlite", "postgres"} {
		open := func(b *testing.B) *hubtest.Hub {
			if store == "sqlite" {
				h := hubtest.StartWith(b, fast)
				if _, ok := h.Store.(*hubserver.SQLite); !ok {
					b.Skip("the baseline is SQLite; unset", hubtest.EnvDB)
				}
				return h
			}
			return cluster(b, 1, fast)[0]
		}
		b.Run("publish/"+store, func(b *testing.B) {
			h := open(b)
			c, s := h.Publisher(b, "dave")
			pad := strings.Repeat("x", 64<<10)
			b.ResetTimer()
			for i := range b.N {
				// A valid module, unique per version (the seed is a custom section).
				bundle, err := hubclient.NewBundle(hubtest.Manifest("dave/x", fmt.Sprintf("1.0.%d", i)), hubtest.Wasm(pad+fmt.Sprint(i)), s)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Publish(context.Background(), bundle); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("install/"+store, func(b *testing.B) {
			h := open(b)
			c, s := h.Publisher(b, "dave")
			publishSized(b, c, s, 64<<10)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Fetch(context.Background(), "dave/x", "1.0.0", hubclient.FetchOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func publishSized(b *testing.B, c *hubclient.Client, s *hubclient.Signer, size int) {
	bundle, err := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.0.0"), hubtest.Wasm(strings.Repeat("x", size)), s)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Publish(context.Background(), bundle); err != nil {
		b.Fatal(err)
	}
}
