package hubserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// Security reports, credits, station releases and advisories in
// PostgreSQL: sqlite_reports.go's rules, statement for statement, with the
// locks SQLite's single writer makes unnecessary. A transaction that reads
// a report to change it locks its row first (pgLoadReport with forUpdate);
// one that checks a fixed-in version takes the module's lock, as SetYanked
// does; advisory numbers come from a locked counter row per year.

// pgReportColumns is reportColumns with the sum of credits as a bigint
// (PostgreSQL sums bigints to numeric).
const pgReportColumns = `id, target, owner, introduced, last_affected, title, body, cwe, severity_level, severity_cvss, reproduction,
	state, reporter, fixed_in, duplicate_of, advisory, published_at, created_at, updated_at,
	(SELECT coalesce(sum(amount), 0)::bigint FROM credits WHERE credits.report = reports.id)`

func pgScanReport(r sqldb.Scanner) (storedReport, error) {
	var sr storedReport
	var published *int64
	var created, updated int64
	err := r.Scan(&sr.ID, &sr.Target, &sr.owner, &sr.Introduced, &sr.LastAffected, &sr.Title, &sr.Body, &sr.CWE,
		&sr.Severity.Level, &sr.Severity.CVSS, &sr.Reproduction, &sr.State, &sr.Reporter, &sr.FixedIn, &sr.DuplicateOf,
		&sr.Advisory, &published, &created, &updated, &sr.Credits)
	sr.PublishedAt, sr.CreatedAt, sr.UpdatedAt = pgOptTime(published), sqldb.FromNanos(created), sqldb.FromNanos(updated)
	return sr, err
}

// pgLoadReport reads a report; forUpdate locks its row until the
// transaction ends.
func pgLoadReport(ctx context.Context, q pgQuerier, id string, forUpdate bool) (storedReport, error) {
	query := `SELECT ` + pgReportColumns + ` FROM reports WHERE id = $1`
	if forUpdate {
		query += ` FOR UPDATE`
	}
	sr, err := pgScanReport(q.QueryRow(ctx, query, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return storedReport{}, ErrNotFound
	}
	if err != nil {
		return storedReport{}, fmt.Errorf("read report: %w", err)
	}
	return sr, nil
}

// pgIsAdmin is isAdmin. In a write transaction (a pgx.Tx) it holds a
// share lock on the account's row, so that an admin's rights are not taken
// away between the check and the commit; reads pass a pgReader, which
// locks nothing.
func pgIsAdmin(ctx context.Context, q pgQuerier, account string) (bool, error) {
	if account == "" {
		return false, nil
	}
	query := `SELECT admin FROM accounts WHERE name = $1`
	if _, ok := q.(pgx.Tx); ok {
		query += ` FOR SHARE`
	}
	var admin bool
	err := q.QueryRow(ctx, query, account).Scan(&admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read account: %w", err)
	}
	return admin, nil
}

func pgAccessTo(ctx context.Context, q pgQuerier, r storedReport, account string) (access, error) {
	admin, err := pgIsAdmin(ctx, q, account)
	if err != nil {
		return access{}, err
	}
	var a access
	a.maintainer = admin || account != "" && r.owner != "" && account == r.owner
	a.participant = a.maintainer || account != "" && account == r.Reporter
	a.read = a.participant || r.PublishedAt != nil
	return a, nil
}

func pgTargetOwner(ctx context.Context, q pgQuerier, target string) (string, error) {
	if target == hub.Product {
		return "", nil
	}
	var owner string
	err := q.QueryRow(ctx, `SELECT owner FROM modules WHERE id = $1`, target).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", refuse(ErrNoTarget, "%s is neither a module on this hub nor %q", target, hub.Product)
	}
	if err != nil {
		return "", fmt.Errorf("read module: %w", err)
	}
	return owner, nil
}

func pgVersionOf(ctx context.Context, q pgQuerier, target, version string) (exists, yanked bool, err error) {
	if target == hub.Product {
		err = q.QueryRow(ctx, `SELECT false FROM station_releases WHERE version = $1`, version).Scan(&yanked)
	} else {
		err = q.QueryRow(ctx, `SELECT yanked_at IS NOT NULL FROM versions WHERE module = $1 AND version = $2`, target, version).Scan(&yanked)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read version: %w", err)
	}
	return true, yanked, nil
}

// pgLockTarget takes the lock that SetYanked (a module) or RecordRelease
// (the station) takes, so that a version checked in the transaction stays
// as checked until it commits.
func pgLockTarget(ctx context.Context, tx pgx.Tx, target string) error {
	if target == hub.Product {
		return lockName(ctx, tx, "releases", "")
	}
	return lockName(ctx, tx, "module", target)
}

func pgCheckFixedIn(ctx context.Context, q pgQuerier, target, version string) error {
	exists, yanked, err := pgVersionOf(ctx, q, target, version)
	switch {
	case err != nil:
		return err
	case !exists && target == hub.Product:
		return refuse(ErrFixedVersion, "station %s is not a recorded release: a hub admin records it first (POST /v1/station/releases)", version)
	case !exists:
		return refuse(ErrFixedVersion, "%s has no version %s: publish the fix first, then record it", target, version)
	case yanked:
		return refuse(ErrFixedVersion, "%s@%s is yanked: a fix must be a version stations may install", target, version)
	}
	return nil
}

func pgView(ctx context.Context, q pgQuerier, r storedReport, viewer string, a access) (hub.Report, error) {
	out := r.Report
	if !a.participant {
		out.Reproduction = ""
	}
	thread, err := pgAll(ctx, q, scanReportEvent, `SELECT seq, data FROM report_events WHERE report = $1 ORDER BY seq`, r.ID)
	if err != nil {
		return hub.Report{}, fmt.Errorf("read the thread of %s: %w", r.ID, err)
	}
	out.Thread = thread
	if err := pgHideDuplicate(ctx, q, &out, viewer, a); err != nil {
		return hub.Report{}, err
	}
	return out, nil
}

// pgHideDuplicate is hideDuplicate.
func pgHideDuplicate(ctx context.Context, q pgQuerier, r *hub.Report, viewer string, a access) error {
	if a.maintainer {
		return nil
	}
	readable := map[string]bool{}
	hide := func(id *string) error {
		if *id == "" {
			return nil
		}
		ok, known := readable[*id]
		if !known {
			other, err := pgLoadReport(ctx, q, *id, false)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if err == nil {
				oa, err := pgAccessTo(ctx, q, other, viewer)
				if err != nil {
					return err
				}
				ok = oa.read
			}
			readable[*id] = ok
		}
		if !ok {
			*id = ""
		}
		return nil
	}
	if err := hide(&r.DuplicateOf); err != nil {
		return err
	}
	for i := range r.Thread {
		if err := hide(&r.Thread[i].DuplicateOf); err != nil {
			return err
		}
	}
	return nil
}

// pgAppendReportEvent is appendReportEvent; the caller holds the report's
// row lock, so the thread's numbering has one writer.
func pgAppendReportEvent(ctx context.Context, tx pgx.Tx, report string, ev hub.ReportEvent) (hub.ReportEvent, error) {
	ev.Seq = 0
	at, err := sqldb.ToNanos(ev.Time)
	if err != nil {
		return ev, fmt.Errorf("append report event: %w", err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return ev, err
	}
	var last, n, size int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0), count(*), coalesce(sum(length(data)), 0) FROM report_events WHERE report = $1`, report).
		Scan(&last, &n, &size); err != nil {
		return ev, fmt.Errorf("read the thread of %s: %w", report, err)
	}
	if (ev.Comment != "" || ev.Kind == hub.ReportCredit) && (n >= maxThreadEvents || size+int64(len(data)) > maxThreadBytes) {
		return ev, refuse(ErrReportInvalid, "the thread of report %s is full (%d events, %d bytes; at most %d and %d): file a new report that names this one", report, n, size, maxThreadEvents, maxThreadBytes)
	}
	ev.Seq = last + 1
	if _, err := tx.Exec(ctx, `INSERT INTO report_events (report, seq, kind, actor, time, data) VALUES ($1, $2, $3, $4, $5, $6)`,
		report, ev.Seq, ev.Kind, ev.Actor, at, data); err != nil {
		return ev, fmt.Errorf("append report event: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE reports SET updated_at = $1 WHERE id = $2`, at, report); err != nil {
		return ev, fmt.Errorf("update report: %w", err)
	}
	return ev, nil
}

// Reports.

func (p *Postgres) FileReport(ctx context.Context, r hub.Report) (hub.Report, error) {
	var out hub.Report
	at, err := sqldb.ToNanos(r.CreatedAt)
	if err != nil {
		return out, fmt.Errorf("file report: %w", err)
	}
	err = p.tx(ctx, func(tx pgx.Tx) error {
		owner, err := pgTargetOwner(ctx, tx, r.Target)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO reports (id, target, owner, introduced, last_affected, title, body, cwe, severity_level, severity_cvss,
			reproduction, state, reporter, fixed_in, duplicate_of, advisory, published_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, '', '', '', NULL, $14, $14)`,
			r.ID, r.Target, owner, r.Introduced, r.LastAffected, r.Title, r.Body, r.CWE, r.Severity.Level, r.Severity.CVSS,
			r.Reproduction, hub.StateNew, r.Reporter, at)
		if isUnique(err) {
			return ErrExists
		}
		if err != nil {
			return fmt.Errorf("file report: %w", err)
		}
		if _, err := pgAppendReportEvent(ctx, tx, r.ID, hub.ReportEvent{Kind: hub.ReportFiled, Actor: r.Reporter, Time: r.CreatedAt.UTC()}); err != nil {
			return err
		}
		sr, err := pgLoadReport(ctx, tx, r.ID, false)
		if err != nil {
			return err
		}
		out, err = pgView(ctx, tx, sr, r.Reporter, access{read: true, participant: true})
		return err
	})
	return out, err
}

// pgReader is a read-only transaction's queries: not a pgx.Tx, so that
// pgIsAdmin takes no lock.
type pgReader struct{ pgQuerier }

// read runs fn in a read-only transaction on one snapshot (REPEATABLE
// READ, which a reader that takes no lock never has to retry).
func (p *Postgres) read(ctx context.Context, fn func(pgReader) error) error {
	return pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(pgReader{tx})
	})
}

func (p *Postgres) Report(ctx context.Context, id, viewer string) (hub.Report, error) {
	var out hub.Report
	// One snapshot for the report, its thread and the reports it names.
	err := p.read(ctx, func(tx pgReader) error {
		sr, err := pgLoadReport(ctx, tx, id, false)
		if err != nil {
			return err
		}
		a, err := pgAccessTo(ctx, tx, sr, viewer)
		if err != nil {
			return err
		}
		if !a.read {
			return ErrNotFound
		}
		out, err = pgView(ctx, tx, sr, viewer, a)
		return err
	})
	return out, err
}

func (p *Postgres) Reports(ctx context.Context, f ReportFilter) ([]hub.Report, error) {
	admin, err := pgIsAdmin(ctx, p.pool, f.Viewer)
	if err != nil {
		return nil, err
	}
	rows, err := pgAll(ctx, p.pool, pgScanReport, `SELECT `+pgReportColumns+` FROM reports
		WHERE (published_at IS NOT NULL OR $2::boolean OR ($1::text <> '' AND (reporter = $1 OR owner = $1)))
		  AND ($3::text = '' OR target = $3) AND ($4::text = '' OR state = $4) AND (NOT $5::boolean OR ($1::text <> '' AND reporter = $1))
		ORDER BY created_at DESC, id DESC LIMIT $6 OFFSET $7`,
		f.Viewer, admin, f.Target, f.State, f.Mine, f.Limit, f.Offset)
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	out := make([]hub.Report, 0, len(rows))
	for _, sr := range rows {
		r := sr.Report
		r.Body, r.Reproduction = "", ""
		a := access{maintainer: admin || f.Viewer != "" && f.Viewer == sr.owner}
		if err := pgHideDuplicate(ctx, p.pool, &r, f.Viewer, a); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *Postgres) CommentReport(ctx context.Context, id, actor string, ev hub.ReportEvent) (hub.Report, error) {
	var out hub.Report
	err := p.tx(ctx, func(tx pgx.Tx) error {
		sr, err := pgLoadReport(ctx, tx, id, true)
		if err != nil {
			return err
		}
		a, err := pgAccessTo(ctx, tx, sr, actor)
		if err != nil {
			return err
		}
		switch {
		case !a.read:
			return ErrNotFound
		case !a.participant:
			return refuse(ErrNotMaintainer, "only the reporter of %s and %s comment on it", id, maintainers(sr.Target))
		}
		if ev.VerifiedIn != "" {
			exists, _, err := pgVersionOf(ctx, tx, sr.Target, ev.VerifiedIn)
			if err != nil {
				return err
			}
			if !exists {
				if sr.Target == hub.Product {
					return refuse(ErrNoVersion, "station %s is not a recorded release (GET /v1/station/releases lists them)", ev.VerifiedIn)
				}
				return refuse(ErrNoVersion, "%s has no version %s", sr.Target, ev.VerifiedIn)
			}
		}
		comment := hub.ReportEvent{Kind: hub.ReportComment, Actor: actor, Time: ev.Time.UTC(), Comment: ev.Comment, VerifiedIn: ev.VerifiedIn}
		if _, err := pgAppendReportEvent(ctx, tx, id, comment); err != nil {
			return err
		}
		if sr, err = pgLoadReport(ctx, tx, id, false); err != nil {
			return err
		}
		out, err = pgView(ctx, tx, sr, actor, a)
		return err
	})
	return out, err
}

func (p *Postgres) TriageReport(ctx context.Context, id, actor string, req hub.TriageRequest, at time.Time) (hub.Report, []hub.Event, error) {
	var out hub.Report
	var events []hub.Event
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return out, nil, fmt.Errorf("triage: %w", err)
	}
	at = at.UTC()
	err = p.tx(ctx, func(tx pgx.Tx) error {
		events = nil
		// The report's row lock first: two triages of one report take
		// turns, and the second sees the state the first left.
		sr, err := pgLoadReport(ctx, tx, id, true)
		if err != nil {
			return err
		}
		a, err := pgAccessTo(ctx, tx, sr, actor)
		if err != nil {
			return err
		}
		switch {
		case !a.read:
			return ErrNotFound
		case !a.maintainer:
			return refuse(ErrNotMaintainer, "only %s triage the reports of %s", maintainers(sr.Target), sr.Target)
		}
		if req.FixedIn != "" {
			// The fixed-in version stays unyanked until this commits.
			if err := pgLockTarget(ctx, tx, sr.Target); err != nil {
				return err
			}
		}
		r := sr.Report
		var thread []hub.ReportEvent
		note := func(ev hub.ReportEvent) {
			ev.Actor, ev.Time = actor, at
			if len(thread) == 0 {
				ev.Comment = req.Comment // the comment goes with the first change
			}
			thread = append(thread, ev)
		}

		if req.State != "" {
			if !slices.Contains(hub.ReportTransitions[r.State], req.State) {
				return refuse(ErrStateChange, "report %s is %s: it may move to %s, not %s", id, r.State, strings.Join(hub.ReportTransitions[r.State], ", "), req.State)
			}
			ev := hub.ReportEvent{Kind: hub.ReportState, From: r.State, To: req.State}
			r.FixedIn, r.DuplicateOf = "", ""
			switch req.State {
			case hub.StateFixed:
				if req.FixedIn == "" {
					return refuse(ErrReportInvalid, "a change to fixed names the version with the fix (fixed_in)")
				}
				if err := pgCheckFixedIn(ctx, tx, r.Target, req.FixedIn); err != nil {
					return err
				}
				if r.Introduced != "" && hub.CompareVersions(req.FixedIn, r.Introduced) <= 0 {
					return refuse(ErrReportInvalid, "fixed_in %s is not above %s, the first affected version of report %s", req.FixedIn, r.Introduced, id)
				}
				r.FixedIn, ev.FixedIn = req.FixedIn, req.FixedIn
			case hub.StateDuplicate:
				if err := pgCheckDuplicate(ctx, tx, r, actor, req.DuplicateOf); err != nil {
					return err
				}
				r.DuplicateOf, ev.DuplicateOf = req.DuplicateOf, req.DuplicateOf
			}
			r.State = req.State
			note(ev)
		}
		if req.Severity != nil && *req.Severity != r.Severity {
			sev := *req.Severity
			r.Severity = sev
			note(hub.ReportEvent{Kind: hub.ReportSeverity, Severity: &sev})
		}
		confirmed := r.State == hub.StateConfirmed || r.State == hub.StateFixed
		if req.Award != nil {
			switch {
			case actor == r.Reporter:
				return refuse(ErrAwardRefused, "%s filed report %s: credits go to a reporter from someone else", actor, id)
			case !confirmed:
				return refuse(ErrAwardRefused, "report %s is %s: credits go only with a confirmed or fixed report (confirm it in the same request)", id, r.State)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO credits (report, account, amount, reason, awarded_by, time) VALUES ($1, $2, $3, $4, $5, $6)`,
				id, r.Reporter, req.Award.Amount, req.Award.Reason, actor, n); err != nil {
				return fmt.Errorf("award credits: %w", err)
			}
			r.Credits += req.Award.Amount
			note(hub.ReportEvent{Kind: hub.ReportCredit, Credits: req.Award.Amount, Reason: req.Award.Reason})
		}
		if req.Publish && r.PublishedAt == nil {
			r.PublishedAt = &at
			note(hub.ReportEvent{Kind: hub.ReportPublished})
		}
		if _, err := tx.Exec(ctx, `UPDATE reports SET state = $1, fixed_in = $2, duplicate_of = $3, severity_level = $4, severity_cvss = $5, published_at = $6 WHERE id = $7`,
			r.State, r.FixedIn, r.DuplicateOf, r.Severity.Level, r.Severity.CVSS, nanosOrNil(r.PublishedAt), id); err != nil {
			return fmt.Errorf("update report: %w", err)
		}

		// The advisory follows the report.
		switch {
		case req.Advisory && !confirmed:
			return refuse(ErrStateChange, "report %s is %s: an advisory goes only with a confirmed or fixed report", id, r.State)
		case req.Advisory && r.Advisory == "":
			adv, ev, err := pgCreateAdvisory(ctx, tx, r, actor, at)
			if err != nil {
				return err
			}
			r.Advisory = adv
			events = append(events, ev)
			note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: adv})
		case r.Advisory != "" && r.State == hub.StateInvalid:
			// The flaw was not one after all: stations stop acting on it.
			ev, withdrawn, err := pgWithdrawReportAdvisory(ctx, tx, r, actor, at)
			if err != nil {
				return err
			}
			if withdrawn {
				events = append(events, ev)
				note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: r.Advisory, Reason: "withdrawn: the report was found invalid"})
			}
		case r.Advisory != "":
			ev, changed, err := pgUpdateAdvisory(ctx, tx, r, actor, at, req.Advisory)
			if err != nil {
				return err
			}
			if changed {
				events = append(events, ev)
				note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: r.Advisory})
			}
		}
		if len(thread) == 0 && req.Comment != "" {
			note(hub.ReportEvent{Kind: hub.ReportComment})
		}
		for _, ev := range thread {
			if _, err := pgAppendReportEvent(ctx, tx, id, ev); err != nil {
				return err
			}
		}
		if sr, err = pgLoadReport(ctx, tx, id, false); err != nil {
			return err
		}
		out, err = pgView(ctx, tx, sr, actor, a)
		return err
	})
	if err != nil {
		return hub.Report{}, nil, err
	}
	return out, events, nil
}

func pgCheckDuplicate(ctx context.Context, tx pgx.Tx, r hub.Report, actor, dup string) error {
	if dup == "" {
		return refuse(ErrReportInvalid, "a change to duplicate names the report it duplicates (duplicate_of)")
	}
	if dup == r.ID {
		return refuse(ErrReportInvalid, "report %s cannot duplicate itself", r.ID)
	}
	other, err := pgLoadReport(ctx, tx, dup, false)
	if err == nil && other.Target == r.Target {
		a, err := pgAccessTo(ctx, tx, other, actor)
		if err != nil {
			return err
		}
		if a.read {
			return nil
		}
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return refuse(ErrReportInvalid, "duplicate_of %s is not another report of %s", dup, r.Target)
}

// Credits.

func (p *Postgres) Credits(ctx context.Context, account string) (hub.Credits, error) {
	out := hub.Credits{Account: account, History: []hub.CreditEntry{}}
	err := p.read(ctx, func(tx pgReader) error {
		if err := pgExists(ctx, tx, `SELECT 1 FROM accounts WHERE name = $1`, account); err != nil {
			return err
		}
		var err error
		out.History, err = pgAll(ctx, tx, func(r sqldb.Scanner) (hub.CreditEntry, error) {
			var e hub.CreditEntry
			var at int64
			var published bool
			err := r.Scan(&e.Amount, &e.Reason, &e.AwardedBy, &at, &e.Report, &e.Target, &published)
			e.Time = sqldb.FromNanos(at)
			if !published {
				// Until the report is public, its award says only how
				// much and when: not which report, what for or by whom.
				e.Reason, e.AwardedBy, e.Report, e.Target = "", "", "", ""
			}
			return e, err
		}, `SELECT c.amount, c.reason, c.awarded_by, c.time, r.id, r.target, r.published_at IS NOT NULL
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
	rel := hub.Release{Version: version, RecordedBy: actor, RecordedAt: at.UTC()}
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return rel, fmt.Errorf("record release: %w", err)
	}
	err = p.tx(ctx, func(tx pgx.Tx) error {
		// Two records of one precedence take turns.
		if err := lockName(ctx, tx, "releases", ""); err != nil {
			return err
		}
		if admin, err := pgIsAdmin(ctx, tx, actor); err != nil {
			return err
		} else if !admin {
			return ErrNotAdmin
		}
		have, err := pgReleases(ctx, tx)
		if err != nil {
			return err
		}
		for _, h := range have {
			if hub.CompareVersions(h.Version, version) == 0 {
				return fmt.Errorf("%w: station %s", ErrExists, h.Version)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO station_releases (version, recorded_by, recorded_at) VALUES ($1, $2, $3)`, version, actor, n)
		if isUnique(err) {
			return fmt.Errorf("%w: station %s", ErrExists, version)
		}
		return err
	})
	return rel, err
}

func pgReleases(ctx context.Context, q pgQuerier) ([]hub.Release, error) {
	out, err := pgAll(ctx, q, func(r sqldb.Scanner) (hub.Release, error) {
		var rel hub.Release
		var at int64
		err := r.Scan(&rel.Version, &rel.RecordedBy, &at)
		rel.RecordedAt = sqldb.FromNanos(at)
		return rel, err
	}, `SELECT version, recorded_by, recorded_at FROM station_releases`)
	if err != nil {
		return nil, fmt.Errorf("list station releases: %w", err)
	}
	slices.SortFunc(out, func(a, b hub.Release) int { return hub.CompareVersions(b.Version, a.Version) })
	return out, nil
}

func (p *Postgres) Releases(ctx context.Context) ([]hub.Release, error) {
	return pgReleases(ctx, p.pool)
}

// Advisories.

// pgNextAdvisoryID returns the next advisory id of at's year from the
// year's counter row, which stays locked until tx ends: numbers are given
// one at a time, and a rolled-back transaction gives its number back.
func pgNextAdvisoryID(ctx context.Context, tx pgx.Tx, at time.Time) (string, error) {
	year := at.UTC().Year()
	var last int
	if err := tx.QueryRow(ctx, `INSERT INTO advisory_counters (year, last) VALUES ($1, 1)
		ON CONFLICT (year) DO UPDATE SET last = advisory_counters.last + 1 RETURNING last`, year).Scan(&last); err != nil {
		return "", fmt.Errorf("number the advisory: %w", err)
	}
	return fmt.Sprintf("%s-%04d-%04d", hub.AdvisoryPrefix, year, last), nil
}

func pgInsertAdvisory(ctx context.Context, tx pgx.Tx, a hub.OSV, target, report string) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	n, err := sqldb.ToNanos(a.Modified.Time)
	if err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO advisories (id, target, data, modified, withdrawn, report) VALUES ($1, $2, $3, $4, NULL, $5)`,
		a.ID, target, data, n, report); err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	return nil
}

func pgCreateAdvisory(ctx context.Context, tx pgx.Tx, r hub.Report, actor string, at time.Time) (string, hub.Event, error) {
	id, err := pgNextAdvisoryID(ctx, tx, at)
	if err != nil {
		return "", hub.Event{}, err
	}
	if err := pgInsertAdvisory(ctx, tx, reportOSV(r, id, at, at), r.Target, r.ID); err != nil {
		return "", hub.Event{}, err
	}
	if _, err := tx.Exec(ctx, `UPDATE reports SET advisory = $1 WHERE id = $2`, id, r.ID); err != nil {
		return "", hub.Event{}, fmt.Errorf("update report: %w", err)
	}
	ev, err := pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryPublished, Time: at, Actor: actor, Module: r.Target, Advisory: id})
	return id, ev, err
}

// pgLoadAdvisory reads an advisory; forUpdate locks its row.
func pgLoadAdvisory(ctx context.Context, q pgQuerier, id string, forUpdate bool) (storedAdvisory, error) {
	var a storedAdvisory
	var data []byte
	query := `SELECT data, target, withdrawn IS NOT NULL, report FROM advisories WHERE id = $1`
	if forUpdate {
		query += ` FOR UPDATE`
	}
	err := q.QueryRow(ctx, query, id).Scan(&data, &a.target, &a.withdrawn, &a.report)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("read advisory: %w", err)
	}
	if err := json.Unmarshal(data, &a.osv); err != nil {
		return a, fmt.Errorf("decode stored advisory %s: %w", id, err)
	}
	return a, nil
}

func pgUpdateAdvisory(ctx context.Context, tx pgx.Tx, r hub.Report, actor string, at time.Time, explicit bool) (hub.Event, bool, error) {
	old, err := pgLoadAdvisory(ctx, tx, r.Advisory, true)
	if err != nil {
		return hub.Event{}, false, err
	}
	if old.withdrawn {
		if explicit {
			return hub.Event{}, false, refuse(ErrStateChange, "advisory %s of report %s was withdrawn, and a withdrawn advisory stays so", r.Advisory, r.ID)
		}
		return hub.Event{}, false, nil
	}
	now := reportOSV(r, old.osv.ID, old.osv.Published.Time, old.osv.Modified.Time)
	before, err := json.Marshal(old.osv)
	if err != nil {
		return hub.Event{}, false, err
	}
	after, err := json.Marshal(now)
	if err != nil {
		return hub.Event{}, false, err
	}
	if bytes.Equal(before, after) {
		return hub.Event{}, false, nil
	}
	now.Modified = hub.OSVTime{Time: at}
	if err := pgStoreAdvisory(ctx, tx, now); err != nil {
		return hub.Event{}, false, err
	}
	ev, err := pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryUpdated, Time: at, Actor: actor, Module: r.Target, Advisory: now.ID})
	return ev, true, err
}

// pgWithdrawReportAdvisory is withdrawReportAdvisory; the caller holds
// the report's row lock, and the advisory's is taken here.
func pgWithdrawReportAdvisory(ctx context.Context, tx pgx.Tx, r hub.Report, actor string, at time.Time) (hub.Event, bool, error) {
	a, err := pgLoadAdvisory(ctx, tx, r.Advisory, true)
	if err != nil || a.withdrawn {
		return hub.Event{}, false, err
	}
	osv := a.osv
	osv.Withdrawn, osv.Modified = &hub.OSVTime{Time: at}, hub.OSVTime{Time: at}
	if err := pgStoreAdvisory(ctx, tx, osv); err != nil {
		return hub.Event{}, false, err
	}
	ev, err := pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryWithdrawn, Time: at, Actor: actor, Module: r.Target, Advisory: osv.ID,
		Reason: "report " + r.ID + " was found invalid"})
	return ev, err == nil, err
}

func pgStoreAdvisory(ctx context.Context, tx pgx.Tx, a hub.OSV) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	modified, err := sqldb.ToNanos(a.Modified.Time)
	if err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	var withdrawn any
	if a.Withdrawn != nil {
		withdrawn = a.Withdrawn.UnixNano()
	}
	if _, err := tx.Exec(ctx, `UPDATE advisories SET data = $1, modified = $2, withdrawn = $3 WHERE id = $4`, data, modified, withdrawn, a.ID); err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	return nil
}

func pgRequireMaintainer(ctx context.Context, tx pgx.Tx, target, owner, actor string) error {
	if owner != "" && actor == owner {
		return nil
	}
	admin, err := pgIsAdmin(ctx, tx, actor)
	if err != nil {
		return err
	}
	if !admin {
		return refuse(ErrNotMaintainer, "only %s publish and withdraw the advisories of %s", maintainers(target), target)
	}
	return nil
}

func (p *Postgres) PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest, actor string, at time.Time) (hub.OSV, hub.Event, error) {
	var out hub.OSV
	var ev hub.Event
	at = at.UTC()
	err := p.tx(ctx, func(tx pgx.Tx) error {
		owner, err := pgTargetOwner(ctx, tx, req.Target)
		if err != nil {
			return err
		}
		if err := pgRequireMaintainer(ctx, tx, req.Target, owner, actor); err != nil {
			return err
		}
		// The fixed versions stay unyanked until this commits.
		if err := pgLockTarget(ctx, tx, req.Target); err != nil {
			return err
		}
		for _, r := range req.Ranges {
			if r.Fixed != "" {
				if err := pgCheckFixedIn(ctx, tx, req.Target, r.Fixed); err != nil {
					return err
				}
			}
		}
		for _, name := range req.Credits {
			if err := pgExists(ctx, tx, `SELECT 1 FROM accounts WHERE name = $1`, name); errors.Is(err, ErrNotFound) {
				return refuse(ErrNoAccount, "credits: account %q does not exist on this hub", name)
			} else if err != nil {
				return err
			}
		}
		id, err := pgNextAdvisoryID(ctx, tx, at)
		if err != nil {
			return err
		}
		out = directOSV(req, id, at)
		if err := pgInsertAdvisory(ctx, tx, out, req.Target, ""); err != nil {
			return err
		}
		ev, err = pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryPublished, Time: at, Actor: actor, Module: req.Target, Advisory: id})
		return err
	})
	return out, ev, err
}

func (p *Postgres) Advisory(ctx context.Context, id string) (hub.OSV, error) {
	a, err := pgLoadAdvisory(ctx, p.pool, id, false)
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
	at = at.UTC()
	err := p.tx(ctx, func(tx pgx.Tx) error {
		out, evp = hub.OSV{}, nil
		a, err := pgLoadAdvisory(ctx, tx, id, false)
		if err != nil {
			return err
		}
		if a.report != "" {
			// In TriageReport's order: the report's row, then the
			// advisory's.
			if _, err := pgLoadReport(ctx, tx, a.report, true); err != nil {
				return err
			}
		}
		if a, err = pgLoadAdvisory(ctx, tx, id, true); err != nil {
			return err
		}
		owner := ""
		if a.target != hub.Product {
			owner, _, _ = strings.Cut(a.target, "/")
		}
		if err := pgRequireMaintainer(ctx, tx, a.target, owner, actor); err != nil {
			return err
		}
		out = a.osv
		if a.withdrawn {
			return nil
		}
		out.Withdrawn, out.Modified = &hub.OSVTime{Time: at}, hub.OSVTime{Time: at}
		if err := pgStoreAdvisory(ctx, tx, out); err != nil {
			return err
		}
		ev, err := pgAppendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryWithdrawn, Time: at, Actor: actor, Module: a.target, Advisory: id, Reason: reason})
		if err != nil {
			return err
		}
		evp = &ev
		if a.report != "" {
			if _, err := pgAppendReportEvent(ctx, tx, a.report, hub.ReportEvent{Kind: hub.ReportAdvisory, Actor: actor, Time: at, Advisory: id, Reason: reason}); err != nil {
				return err
			}
		}
		return nil
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
