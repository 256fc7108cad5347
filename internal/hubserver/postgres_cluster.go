package hubserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// What lets several hub nodes share one PostgreSQL database: each node's
// relay is woken by the others' commits (LISTEN/NOTIFY), and the rate
// limits are buckets in the database.

// pgEventsChannel is the channel every append notifies with its seq.
const pgEventsChannel = "station_hub_events"

const (
	// pgWatchIdle is how long a watch waits for a notification before it
	// checks its connection (and wakes the relay anyway: a notification
	// is never lost on a live connection, but a connection can die
	// without saying so).
	pgWatchIdle = 30 * time.Second
	// pgWatchRetryMax bounds the wait before a broken watch reconnects.
	pgWatchRetryMax = 30 * time.Second
	// pgSweepEvery is how often a node deletes the rate buckets that are
	// full again.
	pgSweepEvery = time.Minute
)

var _ EventWatcher = (*Postgres)(nil)

// WatchEvents listens on pgEventsChannel on a connection of its own (not
// one of the pool's) and calls wake for each notification, and after each
// (re)start of the watch, until ctx ends. A broken connection is reopened
// with a backoff of up to pgWatchRetryMax; the relay reads what it missed
// meanwhile when the new watch wakes it.
func (p *Postgres) WatchEvents(ctx context.Context, wake func(), log *slog.Logger) {
	retry := 100 * time.Millisecond
	for ctx.Err() == nil {
		started := time.Now()
		err := p.watch(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > pgWatchRetryMax {
			retry = 100 * time.Millisecond // it ran well for a while
		}
		log.Warn("relay: the watch of other nodes' events broke off; reconnecting", "err", err, "retry_in", retry)
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		retry = min(retry*2, pgWatchRetryMax)
	}
}

// watch runs one watch, until its connection fails or ctx ends.
func (p *Postgres) watch(ctx context.Context, wake func()) error {
	cfg := p.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		conn.Close(cctx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{pgEventsChannel}.Sanitize()); err != nil {
		return err
	}
	wake() // what was committed before the LISTEN took effect
	for {
		wctx, cancel := context.WithTimeout(ctx, pgWatchIdle)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			wake()
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			// Quiet for a while: is the connection still there?
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			wake()
		default:
			return err
		}
	}
}

var _ SharedLimits = (*Postgres)(nil)

// TakeToken takes a token from key's bucket in rate_buckets. One statement
// refills the bucket for the time since it was last touched (never for a
// clock that went back: nodes' clocks differ a little) and takes the token
// only if there is one, under the row's lock, so concurrent requests on
// any nodes take each token once.
func (p *Postgres) TakeToken(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (bool, time.Duration, error) {
	if burst < 1 || perSecond <= 0 || math.IsInf(perSecond, 0) || math.IsNaN(perSecond) {
		return false, time.Second, nil
	}
	at := now.UnixNano()
	p.sweepBuckets(ctx, at, float64(burst)/perSecond)
	perNano := perSecond / 1e9
	var took bool
	// $2: tokens per nanosecond, $3: the burst (typed: PostgreSQL would
	// infer bigint for them from the arithmetic, and round the rate to 0).
	err := p.pool.QueryRow(ctx, `INSERT INTO rate_buckets AS b (key, tokens, at) VALUES ($1, $3::float8 - 1, $4)
		ON CONFLICT (key) DO UPDATE
			SET tokens = least($3::float8, b.tokens + greatest(0, $4 - b.at) * $2::float8) - 1, at = greatest(b.at, $4)
			WHERE least($3::float8, b.tokens + greatest(0, $4 - b.at) * $2::float8) >= 1
		RETURNING true`, key, perNano, float64(burst), at).Scan(&took)
	if err == nil {
		return true, 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, 0, fmt.Errorf("rate limit: %w", err)
	}
	// Refused: say when the next token will be there.
	var tokens float64
	var last int64
	if err := p.pool.QueryRow(ctx, `SELECT tokens, at FROM rate_buckets WHERE key = $1`, key).Scan(&tokens, &last); err != nil {
		return false, time.Second, nil // swept meanwhile: it is full; the client retries
	}
	have := min(float64(burst), tokens+float64(max(0, at-last))*perNano)
	wait := time.Duration((1 - have) / perNano)
	return false, max(wait, time.Millisecond), nil
}

// sweepBuckets deletes, at most once per pgSweepEvery on this node, the
// buckets untouched for longer than it takes to fill one (full again:
// forgetting them changes nothing).
func (p *Postgres) sweepBuckets(ctx context.Context, at int64, fillSeconds float64) {
	last := p.lastSweep.Load()
	if at-last < int64(pgSweepEvery) || !p.lastSweep.CompareAndSwap(last, at) {
		return
	}
	cutoff := at - int64(fillSeconds*1e9) - int64(time.Second)
	_, _ = p.pool.Exec(ctx, `DELETE FROM rate_buckets WHERE at < $1`, cutoff) // best effort: the next sweep retries
}
