package hubserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// Security reports, credits, station releases and advisories in
// PostgreSQL. Their rules are rules_reports.go's, run in one transaction
// (pgTx), which takes the locks they ask for where they ask: a report's
// row before its state, thread or advisory is read, an advisory's row
// before it changes, a module's lock (as SetYanked's) before a fixed-in
// version is checked, the accounts whose admin flag a rule reads; advisory
// numbers come from a locked counter row per year.

// Reports.

func (p *Postgres) FileReport(ctx context.Context, r hub.Report) (hub.Report, error) {
	var out hub.Report
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, err = fileReport(ctx, pgTx{tx, true}, r)
		return err
	})
	return out, err
}

// read runs fn in a read-only transaction on one snapshot (REPEATABLE
// READ, which a reader that takes no lock never has to retry).
func (p *Postgres) read(ctx context.Context, fn func(pgTx) error) error {
	return pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(pgTx{q: tx})
	})
}

func (p *Postgres) Report(ctx context.Context, id, viewer string) (hub.Report, error) {
	var out hub.Report
	// One snapshot for the report, its thread and the reports it names.
	err := p.read(ctx, func(tx pgTx) (err error) {
		out, err = readReport(ctx, tx, id, viewer)
		return err
	})
	return out, err
}

func (p *Postgres) Reports(ctx context.Context, f ReportFilter) ([]hub.Report, error) {
	q := pgTx{q: p.pool}
	admin, err := isAdmin(ctx, q, f.Viewer)
	if err != nil {
		return nil, err
	}
	rows, err := pgAll(ctx, p.pool, scanReport, `SELECT `+reportColumns+` FROM reports
		WHERE (published_at IS NOT NULL OR $2::boolean OR ($1::text <> '' AND (reporter = $1 OR owner = $1)))
		  AND ($3::text = '' OR target = $3) AND ($4::text = '' OR state = $4) AND (NOT $5::boolean OR ($1::text <> '' AND reporter = $1))
		ORDER BY created_at DESC, id DESC LIMIT $6 OFFSET $7`,
		f.Viewer, admin, f.Target, f.State, f.Mine, f.Limit, f.Offset)
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	out := make([]hub.Report, 0, len(rows))
	for _, sr := range rows {
		r, err := listed(ctx, q, sr, f, admin)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *Postgres) CommentReport(ctx context.Context, id, actor string, ev hub.ReportEvent) (hub.Report, error) {
	var out hub.Report
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, err = commentReport(ctx, pgTx{tx, true}, id, actor, ev)
		return err
	})
	return out, err
}

func (p *Postgres) TriageReport(ctx context.Context, id, actor string, req hub.TriageRequest, at time.Time) (hub.Report, []hub.Event, error) {
	var out hub.Report
	var events []hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, events, err = triageReport(ctx, pgTx{tx, true}, id, actor, req, at)
		return err
	})
	if err != nil {
		return hub.Report{}, nil, err
	}
	return out, events, nil
}

// Credits.

func (p *Postgres) Credits(ctx context.Context, account string) (hub.Credits, error) {
	out := hub.Credits{Account: account, History: []hub.CreditEntry{}}
	err := p.read(ctx, func(tx pgTx) error {
		if err := exists(ctx, tx, `SELECT 1 FROM accounts WHERE name = ?`, account); err != nil {
			return err
		}
		var err error
		out.History, err = pgAll(ctx, tx.q, scanCredit, `SELECT c.amount, c.reason, c.awarded_by, c.time, r.id, r.target, r.published_at IS NOT NULL
			FROM credits c JOIN reports r ON r.id = c.report WHERE c.account = $1 ORDER BY c.time DESC, c.n DESC`, account)
		if err != nil {
			return fmt.Errorf("read credits: %w", err)
		}
		for _, e := range out.History {
			out.Balance += e.Amount
		}
		return nil
	})
	return out, err
}

func (p *Postgres) HallOfFame(ctx context.Context, limit int) ([]hub.Reporter, error) {
	out, err := pgAll(ctx, p.pool, func(r sqldb.Scanner) (hub.Reporter, error) {
		var h hub.Reporter
		err := r.Scan(&h.Account, &h.Credits, &h.Awards)
		return h, err
	}, `SELECT account, sum(amount)::bigint, count(*) FROM credits GROUP BY account ORDER BY sum(amount) DESC, account LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read the hall of fame: %w", err)
	}
	return out, nil
}

// Station releases.

func (p *Postgres) RecordRelease(ctx context.Context, version, actor string, at time.Time) (hub.Release, error) {
	var rel hub.Release
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		rel, err = recordRelease(ctx, pgTx{tx, true}, version, actor, at)
		return err
	})
	return rel, err
}

func (p *Postgres) Releases(ctx context.Context) ([]hub.Release, error) {
	return releases(ctx, pgTx{q: p.pool})
}

// Advisories.

// pgNextAdvisoryID returns the next advisory id of at's year from the
// year's counter row, which stays locked until tx ends: numbers are given
// one at a time, and a rolled-back transaction gives its number back.
func pgNextAdvisoryID(ctx context.Context, tx pgQuerier, at time.Time) (string, error) {
	year := at.UTC().Year()
	var last int
	if err := tx.QueryRow(ctx, `INSERT INTO advisory_counters (year, last) VALUES ($1, 1)
		ON CONFLICT (year) DO UPDATE SET last = advisory_counters.last + 1 RETURNING last`, year).Scan(&last); err != nil {
		return "", fmt.Errorf("number the advisory: %w", err)
	}
	return fmt.Sprintf("%s-%04d-%04d", hub.AdvisoryPrefix, year, last), nil
}

func (p *Postgres) PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest, actor string, at time.Time) (hub.OSV, hub.Event, error) {
	var out hub.OSV
	var ev hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, ev, err = publishAdvisory(ctx, pgTx{tx, true}, req, actor, at)
		return err
	})
	return out, ev, err
}

func (p *Postgres) Advisory(ctx context.Context, id string) (hub.OSV, error) {
	a, err := loadAdvisory(ctx, pgTx{q: p.pool}, id)
	return a.osv, err
}

func (p *Postgres) Advisories(ctx context.Context, target string) ([]hub.OSV, error) {
	out, err := pgAll(ctx, p.pool, func(r sqldb.Scanner) (hub.OSV, error) {
		var data []byte
		var a hub.OSV
		if err := r.Scan(&data); err != nil {
			return a, err
		}
		err := json.Unmarshal(data, &a)
		return a, err
	}, `SELECT data FROM advisories WHERE target = $1 ORDER BY n`, target)
	if err != nil {
		return nil, fmt.Errorf("list advisories: %w", err)
	}
	return out, nil
}

func (p *Postgres) WithdrawAdvisory(ctx context.Context, id, actor, reason string, at time.Time) (hub.OSV, *hub.Event, error) {
	var out hub.OSV
	var evp *hub.Event
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		out, evp, err = withdrawAdvisory(ctx, pgTx{tx, true}, id, actor, reason, at)
		return err
	})
	return out, evp, err
}

func (p *Postgres) AdvisoryEvents(ctx context.Context, after, upTo int64, limit int) ([]hub.Event, error) {
	out, err := pgAll(ctx, p.pool, scanEvent, `SELECT seq, data FROM events
		WHERE seq > $1 AND seq <= $2 AND kind IN ($4, $5, $6, $7, $8)
		ORDER BY seq LIMIT $3`, after, upTo, limit,
		hub.EventAdvisoryPublished, hub.EventAdvisoryUpdated, hub.EventAdvisoryWithdrawn, hub.EventModuleYanked, hub.EventModuleUnyanked)
	if err != nil {
		return nil, fmt.Errorf("read advisory events: %w", err)
	}
	return out, nil
}
