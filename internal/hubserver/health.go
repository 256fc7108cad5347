package hubserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Health and readiness (docs/hub-operations.md, "Health, readiness,
// metrics and drain").
//
// GET /healthz says the process serves HTTP; it touches nothing else, so a
// database outage never gets a healthy process restarted. GET /readyz says
// whether this process should get traffic: not while it drains, nor while
// its Store or Blobs fail their ping. Neither is rate limited, logged or
// authenticated (a load balancer probes them every few seconds), so both
// are fixed-cost: /readyz answers from a result at most readyFresh old,
// and concurrent probes share one check, so a flood of probes costs the
// database one ping a second.

// Pinger is a Store or Blobs that can say whether it works: Ping does the
// cheapest round trip that proves it (a query, a stat) and returns its
// error. /readyz pings the Store and the Blobs that implement it; a Store
// that does not is checked with LastSeq, and Blobs that do not are
// reported "unchecked". Ping's error goes to the hub's log only: it may
// name hosts, users or paths, which an unauthenticated probe must not
// learn.
type Pinger interface {
	Ping(ctx context.Context) error
}

var (
	_ Pinger = (*SQLite)(nil)
	_ Pinger = (*Postgres)(nil)
	_ Pinger = (*BlobDir)(nil)
)

// Ping reads the database's schema table: a read of the file, through a
// connection of the pool.
func (s *SQLite) Ping(ctx context.Context) error {
	var n int
	return s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM sqlite_schema LIMIT 1)`).Scan(&n)
}

// Ping runs an empty statement on a connection kept for it alone (opened
// again when it broke): readiness says whether the database answers, not
// whether this node's pool has a connection free — under a burst every
// node's pool is busy, and a balancer would take every node out at once.
func (p *Postgres) Ping(ctx context.Context) error {
	p.pingMu.Lock()
	defer p.pingMu.Unlock()
	if p.pingConn == nil || p.pingConn.IsClosed() {
		c, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
		if err != nil {
			return err
		}
		p.pingConn = c
	}
	if err := p.pingConn.Ping(ctx); err != nil {
		// A ping cut off by its deadline leaves the connection in an
		// unknown state: the next check opens another.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		p.pingConn.Close(cctx)
		cancel()
		p.pingConn = nil
		return err
	}
	return nil
}

// Ping checks that the blob directory is still there and a directory (a
// volume that was unmounted, or a directory that was removed, fails it).
func (b *BlobDir) Ping(ctx context.Context) error {
	fi, err := os.Stat(filepath.Join(b.dir, "sha256"))
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Join(b.dir, "sha256"))
	}
	return nil
}

const (
	// readyFresh is how long a readiness result is reused.
	readyFresh = time.Second
	// readyTimeout bounds each check of a readiness probe.
	readyTimeout = 2 * time.Second
)

// Readiness is the body of GET /readyz.
type Readiness struct {
	// Status is "ready", "not_ready" (a check failed) or "draining".
	Status string `json:"status"`
	// Checks are the checks by name ("database", "blobs"); none while
	// draining.
	Checks map[string]Check `json:"checks,omitempty"`
}

// Check is the result of one readiness check.
type Check struct {
	// Status is "ok", "error" or "unchecked" (the Blobs are no Pinger).
	Status string `json:"status"`
	// LatencyMS is how long the check took, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
	// Error says, without detail, why the check failed: the log has the
	// error itself.
	Error string `json:"error,omitempty"`
}

// readiness caches the last readiness result.
type readiness struct {
	mu      sync.Mutex
	at      time.Time     // when body was computed
	status  int           // its HTTP status
	body    []byte        // its JSON
	running chan struct{} // closed when the check in flight ends; nil when none is
	failed  map[string]string
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"draining"}`+"\n"))
		return
	}
	status, body, err := s.readiness(r.Context())
	if err != nil {
		return // the prober went away
	}
	writeJSON(w, status, body)
}

// readiness returns a result at most readyFresh old: the cached one, the
// one of the check in flight, or a new check's.
func (s *Server) readiness(ctx context.Context) (int, []byte, error) {
	rd := &s.ready
	for {
		rd.mu.Lock()
		if rd.body != nil && time.Since(rd.at) < readyFresh {
			status, body := rd.status, rd.body
			rd.mu.Unlock()
			return status, body, nil
		}
		running := rd.running
		if running == nil {
			running = make(chan struct{})
			rd.running = running
			// The check runs on its own context: a prober that hangs up
			// must not make it fail for the others waiting on it.
			go s.check(running)
		}
		rd.mu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

// check runs the readiness checks, stores the result and closes done.
func (s *Server) check(done chan struct{}) {
	type named struct {
		name string
		ping func(context.Context) error // nil: unchecked
	}
	db := s.store.LastSeq
	checks := []named{{"database", func(ctx context.Context) error { _, err := db(ctx); return err }}, {"blobs", nil}}
	if p, ok := s.store.(Pinger); ok {
		checks[0].ping = p.Ping
	}
	if p, ok := s.blobs.(Pinger); ok {
		checks[1].ping = p.Ping
	}
	res := Readiness{Status: "ready", Checks: map[string]Check{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range checks {
		if c.ping == nil {
			res.Checks[c.name] = Check{Status: "unchecked"}
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			defer cancel()
			start := time.Now()
			err := c.ping(ctx)
			r := Check{Status: "ok", LatencyMS: math.Round(float64(time.Since(start).Microseconds())) / 1000}
			if err != nil {
				r.Status = "error"
				r.Error = "the check failed: the hub's log has the error"
				if errors.Is(err, context.DeadlineExceeded) {
					r.Error = fmt.Sprintf("no answer within %s", readyTimeout)
				}
			}
			mu.Lock()
			res.Checks[c.name] = r
			mu.Unlock()
			s.logCheck(c.name, err)
		})
	}
	wg.Wait()
	status := http.StatusOK
	for _, c := range res.Checks {
		if c.Status == "error" {
			res.Status, status = "not_ready", http.StatusServiceUnavailable
		}
	}
	body, _ := json.Marshal(res) // a struct of strings and numbers
	body = append(body, '\n')
	rd := &s.ready
	rd.mu.Lock()
	rd.at, rd.status, rd.body, rd.running = time.Now(), status, body, nil
	rd.mu.Unlock()
	close(done)
}

// logCheck logs a check that fails with a new error, or works again: at
// most once a second while it keeps failing the same way (the probes
// come that often), the log would otherwise fill with one error.
func (s *Server) logCheck(name string, err error) {
	if err != nil {
		s.metrics.checkFailures.inc(labels{name})
	}
	rd := &s.ready
	rd.mu.Lock()
	prev, failing := rd.failed[name]
	switch {
	case err != nil && prev != err.Error():
		rd.failed[name] = err.Error()
	case err == nil && failing:
		delete(rd.failed, name)
	default:
		rd.mu.Unlock()
		return
	}
	rd.mu.Unlock()
	if err != nil {
		s.log.Warn("readiness: a check fails; /readyz answers 503", "check", name, "err", err)
	} else {
		s.log.Info("readiness: the check works again", "check", name)
	}
}

// writeJSON answers with body, a JSON document and its newline, which it
// does not change (a cached body is shared).
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
}
