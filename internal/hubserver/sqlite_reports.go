package hubserver

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// Security reports, credits, station releases and advisories in SQLite.
// Every rule of who may do what is checked here, in the transaction that
// makes the change (Store has the rules).

// Bounds of a report's thread, so that a report with its thread fits in an
// answer: an event with a comment, or an award (its reason), is refused
// once the thread holds maxThreadEvents events or maxThreadBytes of stored
// JSON. (Events without one — a state change, a severity, a withdrawal —
// are small, made only by maintainers, and never refused for it.)
const (
	maxThreadEvents = 1000
	maxThreadBytes  = 8 << 20
)

const reportColumns = `id, target, owner, introduced, last_affected, title, body, cwe, severity_level, severity_cvss, reproduction,
	state, reporter, fixed_in, duplicate_of, advisory, published_at, created_at, updated_at,
	(SELECT coalesce(sum(amount), 0) FROM credits WHERE credits.report = reports.id)`

// storedReport is a report with the owner of its target ("" for the
// station, which only admins maintain).
type storedReport struct {
	hub.Report
	owner string
}

func scanReport(r sqldb.Scanner) (storedReport, error) {
	var sr storedReport
	var published sql.NullInt64
	var created, updated int64
	err := r.Scan(&sr.ID, &sr.Target, &sr.owner, &sr.Introduced, &sr.LastAffected, &sr.Title, &sr.Body, &sr.CWE,
		&sr.Severity.Level, &sr.Severity.CVSS, &sr.Reproduction, &sr.State, &sr.Reporter, &sr.FixedIn, &sr.DuplicateOf,
		&sr.Advisory, &published, &created, &updated, &sr.Credits)
	sr.PublishedAt, sr.CreatedAt, sr.UpdatedAt = optTime(published), sqldb.FromNanos(created), sqldb.FromNanos(updated)
	return sr, err
}

func loadReport(ctx context.Context, q sqldb.Querier, id string) (storedReport, error) {
	sr, err := sqldb.QueryOne(ctx, q, scanReport, `SELECT `+reportColumns+` FROM reports WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return storedReport{}, ErrNotFound
	}
	if err != nil {
		return storedReport{}, fmt.Errorf("read report: %w", err)
	}
	return sr, nil
}

// isAdmin reports whether account is one of the hub's admins ("" and
// accounts that do not exist are not).
func isAdmin(ctx context.Context, q sqldb.Querier, account string) (bool, error) {
	if account == "" {
		return false, nil
	}
	var admin bool
	err := q.QueryRowContext(ctx, `SELECT admin FROM accounts WHERE name = ?`, account).Scan(&admin)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read account: %w", err)
	}
	return admin, nil
}

// access is what an account may do with one report: read it (a published
// report, or as a participant), take part (the reporter, the target's
// owner, an admin: comment, see the reproduction), maintain it (the
// target's owner or an admin: triage).
type access struct{ read, participant, maintainer bool }

func accessTo(ctx context.Context, q sqldb.Querier, r storedReport, account string) (access, error) {
	admin, err := isAdmin(ctx, q, account)
	if err != nil {
		return access{}, err
	}
	var a access
	a.maintainer = admin || account != "" && r.owner != "" && account == r.owner
	a.participant = a.maintainer || account != "" && account == r.Reporter
	a.read = a.participant || r.PublishedAt != nil
	return a, nil
}

// maintainers says who maintains target, for a refusal.
func maintainers(target string) string {
	if target == hub.Product {
		return "the hub's admins"
	}
	owner, _, _ := strings.Cut(target, "/")
	return fmt.Sprintf("%s (the owner of %s) and the hub's admins", owner, target)
}

// targetOwner returns the owner of a report target: "" for the station.
// ErrNoTarget if target is neither the station nor a module on the hub.
func targetOwner(ctx context.Context, q sqldb.Querier, target string) (string, error) {
	if target == hub.Product {
		return "", nil
	}
	var owner string
	err := q.QueryRowContext(ctx, `SELECT owner FROM modules WHERE id = ?`, target).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", refuse(ErrNoTarget, "%s is neither a module on this hub nor %q", target, hub.Product)
	}
	if err != nil {
		return "", fmt.Errorf("read module: %w", err)
	}
	return owner, nil
}

// versionOf returns whether version exists for target (a version of the
// module, or a recorded station release) and whether it is yanked.
func versionOf(ctx context.Context, q sqldb.Querier, target, version string) (exists, yanked bool, err error) {
	if target == hub.Product {
		err = q.QueryRowContext(ctx, `SELECT 0 FROM station_releases WHERE version = ?`, version).Scan(&yanked)
	} else {
		err = q.QueryRowContext(ctx, `SELECT yanked_at IS NOT NULL FROM versions WHERE module = ? AND version = ?`, target, version).Scan(&yanked)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read version: %w", err)
	}
	return true, yanked, nil
}

// checkFixedIn checks that version is a published, not yanked version of
// target (or a recorded station release).
func checkFixedIn(ctx context.Context, q sqldb.Querier, target, version string) error {
	exists, yanked, err := versionOf(ctx, q, target, version)
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

func scanReportEvent(r sqldb.Scanner) (hub.ReportEvent, error) {
	var seq int64
	var data []byte
	if err := r.Scan(&seq, &data); err != nil {
		return hub.ReportEvent{}, err
	}
	var ev hub.ReportEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return hub.ReportEvent{}, fmt.Errorf("decode report event %d: %w", seq, err)
	}
	ev.Seq = seq
	return ev, nil
}

// view returns r as viewer, with access a, sees it, with its thread.
func view(ctx context.Context, q sqldb.Querier, r storedReport, viewer string, a access) (hub.Report, error) {
	out := r.Report
	if !a.participant {
		out.Reproduction = ""
	}
	thread, err := sqldb.QueryAll(ctx, q, scanReportEvent, `SELECT seq, data FROM report_events WHERE report = ? ORDER BY seq`, r.ID)
	if err != nil {
		return hub.Report{}, fmt.Errorf("read the thread of %s: %w", r.ID, err)
	}
	out.Thread = thread
	if err := hideDuplicate(ctx, q, &out, viewer, a); err != nil {
		return hub.Report{}, err
	}
	return out, nil
}

// hideDuplicate leaves out the report r duplicates — in r and in the
// state changes of its thread — unless viewer may read it: a private
// report is named to no one who may not read it, not even to the reporter
// of its duplicate (who learns from the state that there is one). The
// maintainers of r read it always: duplicate_of names a report of the
// same target.
func hideDuplicate(ctx context.Context, q sqldb.Querier, r *hub.Report, viewer string, a access) error {
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
			other, err := loadReport(ctx, q, *id)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if err == nil {
				oa, err := accessTo(ctx, q, other, viewer)
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

// appendReportEvent adds ev to the thread of report inside tx, numbered
// after its last event, and marks the report updated. A comment or an
// award is refused when the thread is full.
func appendReportEvent(ctx context.Context, tx *sql.Tx, report string, ev hub.ReportEvent) (hub.ReportEvent, error) {
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
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0), count(*), coalesce(sum(length(data)), 0) FROM report_events WHERE report = ?`, report).
		Scan(&last, &n, &size); err != nil {
		return ev, fmt.Errorf("read the thread of %s: %w", report, err)
	}
	if (ev.Comment != "" || ev.Kind == hub.ReportCredit) && (n >= maxThreadEvents || size+int64(len(data)) > maxThreadBytes) {
		return ev, refuse(ErrReportInvalid, "the thread of report %s is full (%d events, %d bytes; at most %d and %d): file a new report that names this one", report, n, size, maxThreadEvents, maxThreadBytes)
	}
	ev.Seq = last + 1
	if _, err := tx.ExecContext(ctx, `INSERT INTO report_events (report, seq, kind, actor, time, data) VALUES (?, ?, ?, ?, ?, ?)`,
		report, ev.Seq, ev.Kind, ev.Actor, at, data); err != nil {
		return ev, fmt.Errorf("append report event: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE reports SET updated_at = ? WHERE id = ?`, at, report); err != nil {
		return ev, fmt.Errorf("update report: %w", err)
	}
	return ev, nil
}

// Reports.

func (s *SQLite) FileReport(ctx context.Context, r hub.Report) (hub.Report, error) {
	var out hub.Report
	at, err := sqldb.ToNanos(r.CreatedAt)
	if err != nil {
		return out, fmt.Errorf("file report: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		owner, err := targetOwner(ctx, tx, r.Target)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO reports (id, target, owner, introduced, last_affected, title, body, cwe, severity_level, severity_cvss,
			reproduction, state, reporter, fixed_in, duplicate_of, advisory, published_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', '', NULL, ?, ?)`,
			r.ID, r.Target, owner, r.Introduced, r.LastAffected, r.Title, r.Body, r.CWE, r.Severity.Level, r.Severity.CVSS,
			r.Reproduction, hub.StateNew, r.Reporter, at, at)
		if isConstraint(err) {
			return ErrExists
		}
		if err != nil {
			return fmt.Errorf("file report: %w", err)
		}
		if _, err := appendReportEvent(ctx, tx, r.ID, hub.ReportEvent{Kind: hub.ReportFiled, Actor: r.Reporter, Time: r.CreatedAt.UTC()}); err != nil {
			return err
		}
		sr, err := loadReport(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		out, err = view(ctx, tx, sr, r.Reporter, access{read: true, participant: true})
		return err
	})
	return out, err
}

func (s *SQLite) Report(ctx context.Context, id, viewer string) (hub.Report, error) {
	var out hub.Report
	err := s.tx(ctx, func(tx *sql.Tx) error {
		sr, err := loadReport(ctx, tx, id)
		if err != nil {
			return err
		}
		a, err := accessTo(ctx, tx, sr, viewer)
		if err != nil {
			return err
		}
		if !a.read {
			return ErrNotFound
		}
		out, err = view(ctx, tx, sr, viewer, a)
		return err
	})
	return out, err
}

func (s *SQLite) Reports(ctx context.Context, f ReportFilter) ([]hub.Report, error) {
	admin, err := isAdmin(ctx, s.db, f.Viewer)
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
		r := sr.Report
		r.Body, r.Reproduction = "", ""
		a := access{maintainer: admin || f.Viewer != "" && f.Viewer == sr.owner}
		if err := hideDuplicate(ctx, s.db, &r, f.Viewer, a); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *SQLite) CommentReport(ctx context.Context, id, actor string, ev hub.ReportEvent) (hub.Report, error) {
	var out hub.Report
	err := s.tx(ctx, func(tx *sql.Tx) error {
		sr, err := loadReport(ctx, tx, id)
		if err != nil {
			return err
		}
		a, err := accessTo(ctx, tx, sr, actor)
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
			exists, _, err := versionOf(ctx, tx, sr.Target, ev.VerifiedIn)
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
		ev = hub.ReportEvent{Kind: hub.ReportComment, Actor: actor, Time: ev.Time.UTC(), Comment: ev.Comment, VerifiedIn: ev.VerifiedIn}
		if _, err := appendReportEvent(ctx, tx, id, ev); err != nil {
			return err
		}
		if sr, err = loadReport(ctx, tx, id); err != nil {
			return err
		}
		out, err = view(ctx, tx, sr, actor, a)
		return err
	})
	return out, err
}

func (s *SQLite) TriageReport(ctx context.Context, id, actor string, req hub.TriageRequest, at time.Time) (hub.Report, []hub.Event, error) {
	var out hub.Report
	var events []hub.Event
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return out, nil, fmt.Errorf("triage: %w", err)
	}
	at = at.UTC()
	err = s.tx(ctx, func(tx *sql.Tx) error {
		sr, err := loadReport(ctx, tx, id)
		if err != nil {
			return err
		}
		a, err := accessTo(ctx, tx, sr, actor)
		if err != nil {
			return err
		}
		switch {
		case !a.read:
			return ErrNotFound
		case !a.maintainer:
			return refuse(ErrNotMaintainer, "only %s triage the reports of %s", maintainers(sr.Target), sr.Target)
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
				if err := checkFixedIn(ctx, tx, r.Target, req.FixedIn); err != nil {
					return err
				}
				if r.Introduced != "" && hub.CompareVersions(req.FixedIn, r.Introduced) <= 0 {
					return refuse(ErrReportInvalid, "fixed_in %s is not above %s, the first affected version of report %s", req.FixedIn, r.Introduced, id)
				}
				r.FixedIn, ev.FixedIn = req.FixedIn, req.FixedIn
			case hub.StateDuplicate:
				if err := checkDuplicate(ctx, tx, r, actor, req.DuplicateOf); err != nil {
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
			if _, err := tx.ExecContext(ctx, `INSERT INTO credits (report, account, amount, reason, awarded_by, time) VALUES (?, ?, ?, ?, ?, ?)`,
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
		if _, err := tx.ExecContext(ctx, `UPDATE reports SET state = ?, fixed_in = ?, duplicate_of = ?, severity_level = ?, severity_cvss = ?, published_at = ? WHERE id = ?`,
			r.State, r.FixedIn, r.DuplicateOf, r.Severity.Level, r.Severity.CVSS, nanosOrNil(r.PublishedAt), id); err != nil {
			return fmt.Errorf("update report: %w", err)
		}

		// The advisory follows the report.
		switch {
		case req.Advisory && !confirmed:
			return refuse(ErrStateChange, "report %s is %s: an advisory goes only with a confirmed or fixed report", id, r.State)
		case req.Advisory && r.Advisory == "":
			adv, ev, err := createAdvisory(ctx, tx, r, actor, at)
			if err != nil {
				return err
			}
			r.Advisory = adv
			events = append(events, ev)
			note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: adv})
		case r.Advisory != "" && r.State == hub.StateInvalid:
			// The flaw was not one after all: stations stop acting on it.
			ev, withdrawn, err := withdrawReportAdvisory(ctx, tx, r, actor, at)
			if err != nil {
				return err
			}
			if withdrawn {
				events = append(events, ev)
				note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: r.Advisory, Reason: "withdrawn: the report was found invalid"})
			}
		case r.Advisory != "":
			ev, changed, err := updateAdvisory(ctx, tx, r, actor, at, req.Advisory)
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
			if _, err := appendReportEvent(ctx, tx, id, ev); err != nil {
				return err
			}
		}
		if sr, err = loadReport(ctx, tx, id); err != nil {
			return err
		}
		out, err = view(ctx, tx, sr, actor, a)
		return err
	})
	if err != nil {
		return hub.Report{}, nil, err
	}
	return out, events, nil
}

func nanosOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixNano()
}

// checkDuplicate checks that dup is another report of r's target that
// actor may read. Whether a report of another target exists is not told.
func checkDuplicate(ctx context.Context, tx *sql.Tx, r hub.Report, actor, dup string) error {
	if dup == "" {
		return refuse(ErrReportInvalid, "a change to duplicate names the report it duplicates (duplicate_of)")
	}
	if dup == r.ID {
		return refuse(ErrReportInvalid, "report %s cannot duplicate itself", r.ID)
	}
	other, err := loadReport(ctx, tx, dup)
	if err == nil && other.Target == r.Target {
		a, err := accessTo(ctx, tx, other, actor)
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

func (s *SQLite) Credits(ctx context.Context, account string) (hub.Credits, error) {
	out := hub.Credits{Account: account, History: []hub.CreditEntry{}}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, `SELECT 1 FROM accounts WHERE name = ?`, account); err != nil {
			return err
		}
		var err error
		out.History, err = sqldb.QueryAll(ctx, tx, func(r sqldb.Scanner) (hub.CreditEntry, error) {
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
	rel := hub.Release{Version: version, RecordedBy: actor, RecordedAt: at.UTC()}
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return rel, fmt.Errorf("record release: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if admin, err := isAdmin(ctx, tx, actor); err != nil {
			return err
		} else if !admin {
			return ErrNotAdmin
		}
		have, err := releases(ctx, tx)
		if err != nil {
			return err
		}
		for _, h := range have {
			if hub.CompareVersions(h.Version, version) == 0 {
				return fmt.Errorf("%w: station %s", ErrExists, h.Version)
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO station_releases (version, recorded_by, recorded_at) VALUES (?, ?, ?)`, version, actor, n)
		if isConstraint(err) {
			return fmt.Errorf("%w: station %s", ErrExists, version)
		}
		return err
	})
	return rel, err
}

func releases(ctx context.Context, q sqldb.Querier) ([]hub.Release, error) {
	out, err := sqldb.QueryAll(ctx, q, func(r sqldb.Scanner) (hub.Release, error) {
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

func (s *SQLite) Releases(ctx context.Context) ([]hub.Release, error) { return releases(ctx, s.db) }

// Advisories.

// nextAdvisoryID returns the next advisory id of at's year.
func nextAdvisoryID(ctx context.Context, tx *sql.Tx, at time.Time) (string, error) {
	prefix := fmt.Sprintf("%s-%04d-", hub.AdvisoryPrefix, at.UTC().Year())
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(CAST(substr(id, ?1) AS INTEGER)) FROM advisories WHERE substr(id, 1, ?2) = ?3`,
		len(prefix)+1, len(prefix), prefix).Scan(&last); err != nil {
		return "", fmt.Errorf("number the advisory: %w", err)
	}
	return fmt.Sprintf("%s%04d", prefix, last.Int64+1), nil
}

func insertAdvisory(ctx context.Context, tx *sql.Tx, a hub.OSV, target, report string) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	n, err := sqldb.ToNanos(a.Modified.Time)
	if err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO advisories (id, target, data, modified, withdrawn, report) VALUES (?, ?, ?, ?, NULL, ?)`,
		a.ID, target, data, n, report); err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	return nil
}

// createAdvisory publishes the advisory of report r and returns its id and
// its advisory.published event.
func createAdvisory(ctx context.Context, tx *sql.Tx, r hub.Report, actor string, at time.Time) (string, hub.Event, error) {
	id, err := nextAdvisoryID(ctx, tx, at)
	if err != nil {
		return "", hub.Event{}, err
	}
	if err := insertAdvisory(ctx, tx, reportOSV(r, id, at, at), r.Target, r.ID); err != nil {
		return "", hub.Event{}, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE reports SET advisory = ? WHERE id = ?`, id, r.ID); err != nil {
		return "", hub.Event{}, fmt.Errorf("update report: %w", err)
	}
	ev, err := appendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryPublished, Time: at, Actor: actor, Module: r.Target, Advisory: id})
	return id, ev, err
}

type storedAdvisory struct {
	osv       hub.OSV
	target    string
	withdrawn bool
	report    string
}

func loadAdvisory(ctx context.Context, q sqldb.Querier, id string) (storedAdvisory, error) {
	var a storedAdvisory
	var data []byte
	err := q.QueryRowContext(ctx, `SELECT data, target, withdrawn IS NOT NULL, report FROM advisories WHERE id = ?`, id).Scan(&data, &a.target, &a.withdrawn, &a.report)
	if errors.Is(err, sql.ErrNoRows) {
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

// updateAdvisory brings the advisory of report r in line with it and
// returns its advisory.updated event, if it changed. A withdrawn advisory
// stays as it was withdrawn; asked to update one (explicit), it is
// refused.
func updateAdvisory(ctx context.Context, tx *sql.Tx, r hub.Report, actor string, at time.Time, explicit bool) (hub.Event, bool, error) {
	old, err := loadAdvisory(ctx, tx, r.Advisory)
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
	if err := storeAdvisory(ctx, tx, now); err != nil {
		return hub.Event{}, false, err
	}
	ev, err := appendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryUpdated, Time: at, Actor: actor, Module: r.Target, Advisory: now.ID})
	return ev, true, err
}

// withdrawReportAdvisory withdraws the advisory of report r, found
// invalid, unless it is withdrawn already (then it reports false).
func withdrawReportAdvisory(ctx context.Context, tx *sql.Tx, r hub.Report, actor string, at time.Time) (hub.Event, bool, error) {
	a, err := loadAdvisory(ctx, tx, r.Advisory)
	if err != nil || a.withdrawn {
		return hub.Event{}, false, err
	}
	osv := a.osv
	osv.Withdrawn, osv.Modified = &hub.OSVTime{Time: at}, hub.OSVTime{Time: at}
	if err := storeAdvisory(ctx, tx, osv); err != nil {
		return hub.Event{}, false, err
	}
	ev, err := appendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryWithdrawn, Time: at, Actor: actor, Module: r.Target, Advisory: osv.ID,
		Reason: "report " + r.ID + " was found invalid"})
	return ev, err == nil, err
}

// storeAdvisory replaces the stored record of a.ID.
func storeAdvisory(ctx context.Context, tx *sql.Tx, a hub.OSV) error {
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
	if _, err := tx.ExecContext(ctx, `UPDATE advisories SET data = ?, modified = ?, withdrawn = ? WHERE id = ?`, data, modified, withdrawn, a.ID); err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	return nil
}

// requireMaintainer checks that actor maintains target (owner "" for the
// station): its owner, or an admin.
func requireMaintainer(ctx context.Context, tx *sql.Tx, target, owner, actor string) error {
	if owner != "" && actor == owner {
		return nil
	}
	admin, err := isAdmin(ctx, tx, actor)
	if err != nil {
		return err
	}
	if !admin {
		return refuse(ErrNotMaintainer, "only %s publish and withdraw the advisories of %s", maintainers(target), target)
	}
	return nil
}

func (s *SQLite) PublishAdvisory(ctx context.Context, req hub.AdvisoryRequest, actor string, at time.Time) (hub.OSV, hub.Event, error) {
	var out hub.OSV
	var ev hub.Event
	at = at.UTC()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		owner, err := targetOwner(ctx, tx, req.Target)
		if err != nil {
			return err
		}
		if err := requireMaintainer(ctx, tx, req.Target, owner, actor); err != nil {
			return err
		}
		for _, r := range req.Ranges {
			if r.Fixed != "" {
				if err := checkFixedIn(ctx, tx, req.Target, r.Fixed); err != nil {
					return err
				}
			}
		}
		for _, name := range req.Credits {
			if err := exists(ctx, tx, `SELECT 1 FROM accounts WHERE name = ?`, name); errors.Is(err, ErrNotFound) {
				return refuse(ErrNoAccount, "credits: account %q does not exist on this hub", name)
			} else if err != nil {
				return err
			}
		}
		id, err := nextAdvisoryID(ctx, tx, at)
		if err != nil {
			return err
		}
		out = directOSV(req, id, at)
		if err := insertAdvisory(ctx, tx, out, req.Target, ""); err != nil {
			return err
		}
		ev, err = appendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryPublished, Time: at, Actor: actor, Module: req.Target, Advisory: id})
		return err
	})
	return out, ev, err
}

func (s *SQLite) Advisory(ctx context.Context, id string) (hub.OSV, error) {
	a, err := loadAdvisory(ctx, s.db, id)
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
	at = at.UTC()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		a, err := loadAdvisory(ctx, tx, id)
		if err != nil {
			return err
		}
		owner := ""
		if a.target != hub.Product {
			owner, _, _ = strings.Cut(a.target, "/")
		}
		if err := requireMaintainer(ctx, tx, a.target, owner, actor); err != nil {
			return err
		}
		out = a.osv
		if a.withdrawn {
			return nil
		}
		out.Withdrawn, out.Modified = &hub.OSVTime{Time: at}, hub.OSVTime{Time: at}
		if err := storeAdvisory(ctx, tx, out); err != nil {
			return err
		}
		ev, err := appendEvent(ctx, tx, hub.Event{Kind: hub.EventAdvisoryWithdrawn, Time: at, Actor: actor, Module: a.target, Advisory: id, Reason: reason})
		if err != nil {
			return err
		}
		evp = &ev
		if a.report != "" {
			if _, err := appendReportEvent(ctx, tx, a.report, hub.ReportEvent{Kind: hub.ReportAdvisory, Actor: actor, Time: at, Advisory: id, Reason: reason}); err != nil {
				return err
			}
		}
		return nil
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
