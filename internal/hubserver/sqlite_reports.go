package hubserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// Security reports, credits, station releases and advisories in SQLite.
// Their rules are rules_reports.go's; each write runs them in one write
// transaction, SQLite's single writer, which holds every lock they ask
// for (sqliteTx).

// Reports.

func (s *SQLite) FileReport(ctx context.Context, r hub.Report) (hub.Report, error) {
	var out hub.Report
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = fileReport(ctx, sqliteTx{tx}, r)
		return err
	})
	return out, err
}

func (s *SQLite) Report(ctx context.Context, id, viewer string) (hub.Report, error) {
	var out hub.Report
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = readReport(ctx, sqliteTx{tx}, id, viewer)
		return err
	})
	return out, err
}

func (s *SQLite) Reports(ctx context.Context, f ReportFilter) ([]hub.Report, error) {
	q := sqliteTx{s.db}
	admin, err := isAdmin(ctx, q, f.Viewer)
	if err != nil {
		return nil, err
	}
	rows, err := sqldb.QueryAll(ctx, s.db, scanReport, `SELECT `+reportColumns+` FROM reports
		WHERE (published_at IS NOT NULL OR ?2 OR (?1 != '' AND (reporter = ?1 OR owner = ?1)))
		  AND (?3 = '' OR target = ?3) AND (?4 = '' OR state = ?4) AND (NOT ?5 OR (?1 != '' AND reporter = ?1))
		ORDER BY created_at DESC, id DESC LIMIT ?6 OFFSET ?7`,
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

func (s *SQLite) CommentReport(ctx context.Context, id, actor string, ev hub.ReportEvent) (hub.Report, error) {
	var out hub.Report
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = commentReport(ctx, sqliteTx{tx}, id, actor, ev)
		return err
	})
	return out, err
}

func (s *SQLite) TriageReport(ctx context.Context, id, actor string, req hub.TriageRequest, at time.Time) (hub.Report, []hub.Event, error) {
	var out hub.Report
	var events []hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, events, err = triageReport(ctx, sqliteTx{tx}, id, actor, req, at)
		return err
	})
	if err != nil {
		return hub.Report{}, nil, err
	}
	return out, events, nil
}

// Credits.

func (s *SQLite) Credits(ctx context.Context, account string) (hub.Credits, error) {
	out := hub.Credits{Account: account, History: []hub.CreditEntry{}}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, sqliteTx{tx}, `SELECT 1 FROM accounts WHERE name = ?`, account); err != nil {
			return err
		}
		var err error
		out.History, err = sqldb.QueryAll(ctx, tx, scanCredit, `SELECT c.amount, c.reason, c.awarded_by, c.time, r.id, r.target, r.published_at IS NOT NULL
			FROM credits c JOIN reports r ON r.id = c.report WHERE c.account = ? ORDER BY c.time DESC, c.rowid DESC`, account)
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

func (s *SQLite) HallOfFame(ctx context.Context, limit int) ([]hub.Reporter, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (hub.Reporter, error) {
		var h hub.Reporter
		err := r.Scan(&h.Account, &h.Credits, &h.Awards)
		return h, err
	}, `SELECT account, sum(amount), count(*) FROM credits GROUP BY account ORDER BY sum(amount) DESC, account LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read the hall of fame: %w", err)
	}
	return out, nil
}

// Station releases.

func (s *SQLite) RecordRelease(ctx context.Context, version, actor string, at time.Time) (hub.Release, error) {
	var rel hub.Release
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		rel, err = recordRelease(ctx, sqliteTx{tx}, version, actor, at)
		return err
	})
	return rel, err
}

func (s *SQLite) Releases(ctx context.Context) ([]hub.Release, error) {
	return releases(ctx, sqliteTx{s.db})
}

// Advisories.

// nextAdvisoryID returns the next advisory id of at's year: one above the
// highest of the year stored (the write transaction is the only writer).
func nextAdvisoryID(ctx context.Context, q sqliteQuerier, at time.Time) (string, error) {
	prefix := fmt.Sprintf("%s-%04d-", hub.AdvisoryPrefix, at.UTC().Year())
	var last sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(CAST(substr(id, ?1) AS INTEGER)) FROM advisories WHERE substr(id, 1, ?2) = ?3`,
		len(prefix)+1, len(prefix), prefix).Scan(&last); err != nil {
		return "", fmt.Errorf("number the advisory: %w", err)
	}
	return fmt.Sprintf("%s%04d", prefix, last.Int64+1), nil
}

func (s *SQLite) PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest, actor string, at time.Time) (hub.OSV, hub.Event, error) {
	var out hub.OSV
	var ev hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, ev, err = publishAdvisory(ctx, sqliteTx{tx}, req, actor, at)
		return err
	})
	return out, ev, err
}

func (s *SQLite) Advisory(ctx context.Context, id string) (hub.OSV, error) {
	a, err := loadAdvisory(ctx, sqliteTx{s.db}, id)
	return a.osv, err
}

func (s *SQLite) Advisories(ctx context.Context, target string) ([]hub.OSV, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (hub.OSV, error) {
		var data []byte
		var a hub.OSV
		if err := r.Scan(&data); err != nil {
			return a, err
		}
		err := json.Unmarshal(data, &a)
		return a, err
	}, `SELECT data FROM advisories WHERE target = ? ORDER BY rowid`, target)
	if err != nil {
		return nil, fmt.Errorf("list advisories: %w", err)
	}
	return out, nil
}

func (s *SQLite) WithdrawAdvisory(ctx context.Context, id, actor, reason string, at time.Time) (hub.OSV, *hub.Event, error) {
	var out hub.OSV
	var evp *hub.Event
	err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, evp, err = withdrawAdvisory(ctx, sqliteTx{tx}, id, actor, reason, at)
		return err
	})
	return out, evp, err
}

func (s *SQLite) AdvisoryEvents(ctx context.Context, after, upTo int64, limit int) ([]hub.Event, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanEvent, `SELECT seq, data FROM events
		WHERE seq > ?1 AND seq <= ?2 AND kind IN (?4, ?5, ?6, ?7, ?8)
		ORDER BY seq LIMIT ?3`, after, upTo, limit,
		hub.EventAdvisoryPublished, hub.EventAdvisoryUpdated, hub.EventAdvisoryWithdrawn, hub.EventModuleYanked, hub.EventModuleUnyanked)
	if err != nil {
		return nil, fmt.Errorf("read advisory events: %w", err)
	}
	return out, nil
}
