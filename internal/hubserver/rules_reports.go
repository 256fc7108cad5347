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

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// The rules of security reports, credits, station releases and advisories
// (Store has them), checked in the transaction that makes the change, once
// for both stores (ruleTx). Each store's method runs one of these in its
// transaction; the locks PostgreSQL needs are asked for here, where its
// rules read.

// Bounds of a report's thread, so that a report with its thread fits in an
// answer: an event with a comment, or an award (its reason), is refused
// once the thread holds maxThreadEvents events or maxThreadBytes of stored
// JSON. (Events without one — a state change, a severity, a withdrawal —
// are small, made only by maintainers, and never refused for it.)
const (
	maxThreadEvents = 1000
	maxThreadBytes  = 8 << 20
)

// reportColumns are a report's columns, with the sum of its credits (as a
// bigint: PostgreSQL sums bigints to numeric).
const reportColumns = `id, target, owner, introduced, last_affected, title, body, cwe, severity_level, severity_cvss, reproduction,
	state, reporter, fixed_in, duplicate_of, advisory, published_at, created_at, updated_at,
	(SELECT CAST(coalesce(sum(amount), 0) AS bigint) FROM credits WHERE credits.report = reports.id)`

// storedReport is a report with the owner of its target ("" for the
// station, which only admins maintain).
type storedReport struct {
	hub.Report
	owner string
}

func scanReport(r sqldb.Scanner) (storedReport, error) {
	var sr storedReport
	var published *int64
	var created, updated int64
	err := r.Scan(&sr.ID, &sr.Target, &sr.owner, &sr.Introduced, &sr.LastAffected, &sr.Title, &sr.Body, &sr.CWE,
		&sr.Severity.Level, &sr.Severity.CVSS, &sr.Reproduction, &sr.State, &sr.Reporter, &sr.FixedIn, &sr.DuplicateOf,
		&sr.Advisory, &published, &created, &updated, &sr.Credits)
	sr.PublishedAt, sr.CreatedAt, sr.UpdatedAt = optTime(published), sqldb.FromNanos(created), sqldb.FromNanos(updated)
	return sr, err
}

// loadReport reads a report (locking nothing: a transaction that changes
// it calls lockReport first).
func loadReport(ctx context.Context, q ruleTx, id string) (storedReport, error) {
	sr, err := scanReport(q.queryRow(ctx, `SELECT `+reportColumns+` FROM reports WHERE id = ?`, id))
	if isNoRows(err) {
		return storedReport{}, ErrNotFound
	}
	if err != nil {
		return storedReport{}, fmt.Errorf("read report: %w", err)
	}
	return sr, nil
}

// isAdmin reports whether account is one of the hub's admins ("" and
// accounts that do not exist are not). In a write transaction the account
// stays as read until the commit (lockAccount).
func isAdmin(ctx context.Context, q ruleTx, account string) (bool, error) {
	if account == "" {
		return false, nil
	}
	if err := q.lockAccount(ctx, account); err != nil {
		return false, err
	}
	var admin bool
	err := q.queryRow(ctx, `SELECT admin FROM accounts WHERE name = ?`, account).Scan(&admin)
	if isNoRows(err) {
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

// accessOf is the access of account, an admin or not, to r.
func accessOf(r storedReport, account string, admin bool) access {
	var a access
	a.maintainer = admin || account != "" && r.owner != "" && account == r.owner
	a.participant = a.maintainer || account != "" && account == r.Reporter
	a.read = a.participant || r.PublishedAt != nil
	return a
}

func accessTo(ctx context.Context, q ruleTx, r storedReport, account string) (access, error) {
	admin, err := isAdmin(ctx, q, account)
	if err != nil {
		return access{}, err
	}
	return accessOf(r, account, admin), nil
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
func targetOwner(ctx context.Context, q ruleTx, target string) (string, error) {
	if target == hub.Product {
		return "", nil
	}
	var owner string
	err := q.queryRow(ctx, `SELECT owner FROM modules WHERE id = ?`, target).Scan(&owner)
	if isNoRows(err) {
		return "", refuse(ErrNoTarget, "%s is neither a module on this hub nor %q", target, hub.Product)
	}
	if err != nil {
		return "", fmt.Errorf("read module: %w", err)
	}
	return owner, nil
}

// lockTarget takes the lock that SetYanked (a module) or RecordRelease
// (the station) takes, so that a version checked in the transaction stays
// as checked until it commits.
func lockTarget(ctx context.Context, q ruleTx, target string) error {
	if target == hub.Product {
		return q.lockName(ctx, "releases", "")
	}
	return q.lockName(ctx, "module", target)
}

// versionOf returns whether version exists for target (a version of the
// module, or a recorded station release) and whether it is yanked.
func versionOf(ctx context.Context, q ruleTx, target, version string) (exists, yanked bool, err error) {
	if target == hub.Product {
		err = q.queryRow(ctx, `SELECT false FROM station_releases WHERE version = ?`, version).Scan(&yanked)
	} else {
		err = q.queryRow(ctx, `SELECT yanked_at IS NOT NULL FROM versions WHERE module = ? AND version = ?`, target, version).Scan(&yanked)
	}
	if isNoRows(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read version: %w", err)
	}
	return true, yanked, nil
}

// checkFixedIn checks that version is a published, not yanked version of
// target (or a recorded station release).
func checkFixedIn(ctx context.Context, q ruleTx, target, version string) error {
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
func view(ctx context.Context, q ruleTx, r storedReport, viewer string, a access) (hub.Report, error) {
	out := r.Report
	if !a.participant {
		out.Reproduction = ""
	}
	thread, err := all(ctx, q, scanReportEvent, `SELECT seq, data FROM report_events WHERE report = ? ORDER BY seq`, r.ID)
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
func hideDuplicate(ctx context.Context, q ruleTx, r *hub.Report, viewer string, a access) error {
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

// appendReportEvent adds ev to the thread of report, numbered after its
// last event, and marks the report updated. A comment or an award is
// refused when the thread is full. The caller holds the report's lock
// (lockReport), so the thread's numbering has one writer.
func appendReportEvent(ctx context.Context, q ruleTx, report string, ev hub.ReportEvent) (hub.ReportEvent, error) {
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
	if err := q.queryRow(ctx, `SELECT coalesce(max(seq), 0), count(*), coalesce(sum(length(data)), 0) FROM report_events WHERE report = ?`, report).
		Scan(&last, &n, &size); err != nil {
		return ev, fmt.Errorf("read the thread of %s: %w", report, err)
	}
	if (ev.Comment != "" || ev.Kind == hub.ReportCredit) && (n >= maxThreadEvents || size+int64(len(data)) > maxThreadBytes) {
		return ev, refuse(ErrReportInvalid, "the thread of report %s is full (%d events, %d bytes; at most %d and %d): file a new report that names this one", report, n, size, maxThreadEvents, maxThreadBytes)
	}
	ev.Seq = last + 1
	if err := q.exec(ctx, `INSERT INTO report_events (report, seq, kind, actor, time, data) VALUES (?, ?, ?, ?, ?, ?)`,
		report, ev.Seq, ev.Kind, ev.Actor, at, data); err != nil {
		return ev, fmt.Errorf("append report event: %w", err)
	}
	if err := q.exec(ctx, `UPDATE reports SET updated_at = ? WHERE id = ?`, at, report); err != nil {
		return ev, fmt.Errorf("update report: %w", err)
	}
	return ev, nil
}

// Reports.

// fileReport is Store.FileReport in a write transaction.
func fileReport(ctx context.Context, q ruleTx, r hub.Report) (hub.Report, error) {
	at, err := sqldb.ToNanos(r.CreatedAt)
	if err != nil {
		return hub.Report{}, fmt.Errorf("file report: %w", err)
	}
	owner, err := targetOwner(ctx, q, r.Target)
	if err != nil {
		return hub.Report{}, err
	}
	err = q.exec(ctx, `INSERT INTO reports (id, target, owner, introduced, last_affected, title, body, cwe, severity_level, severity_cvss,
		reproduction, state, reporter, fixed_in, duplicate_of, advisory, published_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', '', NULL, ?, ?)`,
		r.ID, r.Target, owner, r.Introduced, r.LastAffected, r.Title, r.Body, r.CWE, r.Severity.Level, r.Severity.CVSS,
		r.Reproduction, hub.StateNew, r.Reporter, at, at)
	if q.unique(err) {
		return hub.Report{}, ErrExists
	}
	if err != nil {
		return hub.Report{}, fmt.Errorf("file report: %w", err)
	}
	if _, err := appendReportEvent(ctx, q, r.ID, hub.ReportEvent{Kind: hub.ReportFiled, Actor: r.Reporter, Time: r.CreatedAt.UTC()}); err != nil {
		return hub.Report{}, err
	}
	sr, err := loadReport(ctx, q, r.ID)
	if err != nil {
		return hub.Report{}, err
	}
	return view(ctx, q, sr, r.Reporter, access{read: true, participant: true})
}

// readReport is Store.Report, in one transaction (one snapshot for the
// report, its thread and the reports it names).
func readReport(ctx context.Context, q ruleTx, id, viewer string) (hub.Report, error) {
	sr, err := loadReport(ctx, q, id)
	if err != nil {
		return hub.Report{}, err
	}
	a, err := accessTo(ctx, q, sr, viewer)
	if err != nil {
		return hub.Report{}, err
	}
	if !a.read {
		return hub.Report{}, ErrNotFound
	}
	return view(ctx, q, sr, viewer, a)
}

// listed is a report of Store.Reports as f.Viewer (an admin or not) sees
// it in a listing: without its body and reproduction, and DuplicateOf as
// Report.
func listed(ctx context.Context, q ruleTx, sr storedReport, f ReportFilter, admin bool) (hub.Report, error) {
	r := sr.Report
	r.Body, r.Reproduction = "", ""
	a := access{maintainer: admin || f.Viewer != "" && f.Viewer == sr.owner}
	if err := hideDuplicate(ctx, q, &r, f.Viewer, a); err != nil {
		return hub.Report{}, err
	}
	return r, nil
}

// commentReport is Store.CommentReport in a write transaction.
func commentReport(ctx context.Context, q ruleTx, id, actor string, ev hub.ReportEvent) (hub.Report, error) {
	if err := q.lockReport(ctx, id); err != nil {
		return hub.Report{}, err
	}
	sr, err := loadReport(ctx, q, id)
	if err != nil {
		return hub.Report{}, err
	}
	a, err := accessTo(ctx, q, sr, actor)
	if err != nil {
		return hub.Report{}, err
	}
	switch {
	case !a.read:
		return hub.Report{}, ErrNotFound
	case !a.participant:
		return hub.Report{}, refuse(ErrNotMaintainer, "only the reporter of %s and %s comment on it", id, maintainers(sr.Target))
	}
	if ev.VerifiedIn != "" {
		exists, _, err := versionOf(ctx, q, sr.Target, ev.VerifiedIn)
		if err != nil {
			return hub.Report{}, err
		}
		if !exists {
			if sr.Target == hub.Product {
				return hub.Report{}, refuse(ErrNoVersion, "station %s is not a recorded release (GET /v1/station/releases lists them)", ev.VerifiedIn)
			}
			return hub.Report{}, refuse(ErrNoVersion, "%s has no version %s", sr.Target, ev.VerifiedIn)
		}
	}
	comment := hub.ReportEvent{Kind: hub.ReportComment, Actor: actor, Time: ev.Time.UTC(), Comment: ev.Comment, VerifiedIn: ev.VerifiedIn}
	if _, err := appendReportEvent(ctx, q, id, comment); err != nil {
		return hub.Report{}, err
	}
	if sr, err = loadReport(ctx, q, id); err != nil {
		return hub.Report{}, err
	}
	return view(ctx, q, sr, actor, a)
}

// triageReport is Store.TriageReport in a write transaction: the report's
// state machine (hub.ReportTransitions), with the fixed version or the
// duplicate a change names, the severity, the award, the publication and
// the advisory that follows the report, each with its thread event.
func triageReport(ctx context.Context, q ruleTx, id, actor string, req hub.TriageRequest, at time.Time) (hub.Report, []hub.Event, error) {
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return hub.Report{}, nil, fmt.Errorf("triage: %w", err)
	}
	at = at.UTC()
	// The report's lock first: two triages of one report take turns, and
	// the second sees the state the first left.
	if err := q.lockReport(ctx, id); err != nil {
		return hub.Report{}, nil, err
	}
	sr, err := loadReport(ctx, q, id)
	if err != nil {
		return hub.Report{}, nil, err
	}
	a, err := accessTo(ctx, q, sr, actor)
	if err != nil {
		return hub.Report{}, nil, err
	}
	switch {
	case !a.read:
		return hub.Report{}, nil, ErrNotFound
	case !a.maintainer:
		return hub.Report{}, nil, refuse(ErrNotMaintainer, "only %s triage the reports of %s", maintainers(sr.Target), sr.Target)
	}
	if req.FixedIn != "" {
		// The fixed-in version stays unyanked until this commits.
		if err := lockTarget(ctx, q, sr.Target); err != nil {
			return hub.Report{}, nil, err
		}
	}
	r := sr.Report
	var events []hub.Event
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
			return hub.Report{}, nil, refuse(ErrStateChange, "report %s is %s: it may move to %s, not %s", id, r.State, strings.Join(hub.ReportTransitions[r.State], ", "), req.State)
		}
		ev := hub.ReportEvent{Kind: hub.ReportState, From: r.State, To: req.State}
		r.FixedIn, r.DuplicateOf = "", ""
		switch req.State {
		case hub.StateFixed:
			if req.FixedIn == "" {
				return hub.Report{}, nil, refuse(ErrReportInvalid, "a change to fixed names the version with the fix (fixed_in)")
			}
			if err := checkFixedIn(ctx, q, r.Target, req.FixedIn); err != nil {
				return hub.Report{}, nil, err
			}
			if r.Introduced != "" && hub.CompareVersions(req.FixedIn, r.Introduced) <= 0 {
				return hub.Report{}, nil, refuse(ErrReportInvalid, "fixed_in %s is not above %s, the first affected version of report %s", req.FixedIn, r.Introduced, id)
			}
			r.FixedIn, ev.FixedIn = req.FixedIn, req.FixedIn
		case hub.StateDuplicate:
			if err := checkDuplicate(ctx, q, r, actor, req.DuplicateOf); err != nil {
				return hub.Report{}, nil, err
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
			return hub.Report{}, nil, refuse(ErrAwardRefused, "%s filed report %s: credits go to a reporter from someone else", actor, id)
		case !confirmed:
			return hub.Report{}, nil, refuse(ErrAwardRefused, "report %s is %s: credits go only with a confirmed or fixed report (confirm it in the same request)", id, r.State)
		}
		if err := q.exec(ctx, `INSERT INTO credits (report, account, amount, reason, awarded_by, time) VALUES (?, ?, ?, ?, ?, ?)`,
			id, r.Reporter, req.Award.Amount, req.Award.Reason, actor, n); err != nil {
			return hub.Report{}, nil, fmt.Errorf("award credits: %w", err)
		}
		r.Credits += req.Award.Amount
		note(hub.ReportEvent{Kind: hub.ReportCredit, Credits: req.Award.Amount, Reason: req.Award.Reason})
	}
	if req.Publish && r.PublishedAt == nil {
		r.PublishedAt = &at
		note(hub.ReportEvent{Kind: hub.ReportPublished})
	}
	if err := q.exec(ctx, `UPDATE reports SET state = ?, fixed_in = ?, duplicate_of = ?, severity_level = ?, severity_cvss = ?, published_at = ? WHERE id = ?`,
		r.State, r.FixedIn, r.DuplicateOf, r.Severity.Level, r.Severity.CVSS, nanosOrNil(r.PublishedAt), id); err != nil {
		return hub.Report{}, nil, fmt.Errorf("update report: %w", err)
	}

	// The advisory follows the report.
	switch {
	case req.Advisory && !confirmed:
		return hub.Report{}, nil, refuse(ErrStateChange, "report %s is %s: an advisory goes only with a confirmed or fixed report", id, r.State)
	case req.Advisory && r.Advisory == "":
		adv, ev, err := createAdvisory(ctx, q, r, actor, at)
		if err != nil {
			return hub.Report{}, nil, err
		}
		r.Advisory = adv
		events = append(events, ev)
		note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: adv})
	case r.Advisory != "" && r.State == hub.StateInvalid:
		// The flaw was not one after all: stations stop acting on it.
		ev, withdrawn, err := withdrawReportAdvisory(ctx, q, r, actor, at)
		if err != nil {
			return hub.Report{}, nil, err
		}
		if withdrawn {
			events = append(events, ev)
			note(hub.ReportEvent{Kind: hub.ReportAdvisory, Advisory: r.Advisory, Reason: "withdrawn: the report was found invalid"})
		}
	case r.Advisory != "":
		ev, changed, err := updateAdvisory(ctx, q, r, actor, at, req.Advisory)
		if err != nil {
			return hub.Report{}, nil, err
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
		if _, err := appendReportEvent(ctx, q, id, ev); err != nil {
			return hub.Report{}, nil, err
		}
	}
	if sr, err = loadReport(ctx, q, id); err != nil {
		return hub.Report{}, nil, err
	}
	out, err := view(ctx, q, sr, actor, a)
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
func checkDuplicate(ctx context.Context, q ruleTx, r hub.Report, actor, dup string) error {
	if dup == "" {
		return refuse(ErrReportInvalid, "a change to duplicate names the report it duplicates (duplicate_of)")
	}
	if dup == r.ID {
		return refuse(ErrReportInvalid, "report %s cannot duplicate itself", r.ID)
	}
	other, err := loadReport(ctx, q, dup)
	if err == nil && other.Target == r.Target {
		a, err := accessTo(ctx, q, other, actor)
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

// scanCredit scans an award of Store.Credits (amount, reason, awarder,
// time, report, target, whether the report is published). Until the
// report is public, its award says only how much and when: not which
// report, what for or by whom.
func scanCredit(r sqldb.Scanner) (hub.CreditEntry, error) {
	var e hub.CreditEntry
	var at int64
	var published bool
	err := r.Scan(&e.Amount, &e.Reason, &e.AwardedBy, &at, &e.Report, &e.Target, &published)
	e.Time = sqldb.FromNanos(at)
	if !published {
		e.Reason, e.AwardedBy, e.Report, e.Target = "", "", "", ""
	}
	return e, err
}

// Station releases.

// recordRelease is Store.RecordRelease in a write transaction.
func recordRelease(ctx context.Context, q ruleTx, version, actor string, at time.Time) (hub.Release, error) {
	rel := hub.Release{Version: version, RecordedBy: actor, RecordedAt: at.UTC()}
	n, err := sqldb.ToNanos(at)
	if err != nil {
		return rel, fmt.Errorf("record release: %w", err)
	}
	// Two records of one precedence take turns.
	if err := q.lockName(ctx, "releases", ""); err != nil {
		return rel, err
	}
	if admin, err := isAdmin(ctx, q, actor); err != nil {
		return rel, err
	} else if !admin {
		return rel, ErrNotAdmin
	}
	have, err := releases(ctx, q)
	if err != nil {
		return rel, err
	}
	for _, h := range have {
		if hub.CompareVersions(h.Version, version) == 0 {
			return rel, fmt.Errorf("%w: station %s", ErrExists, h.Version)
		}
	}
	err = q.exec(ctx, `INSERT INTO station_releases (version, recorded_by, recorded_at) VALUES (?, ?, ?)`, version, actor, n)
	if q.unique(err) {
		return rel, fmt.Errorf("%w: station %s", ErrExists, version)
	}
	return rel, err
}

// releases lists the recorded station releases, highest first.
func releases(ctx context.Context, q ruleTx) ([]hub.Release, error) {
	out, err := all(ctx, q, func(r sqldb.Scanner) (hub.Release, error) {
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

// Advisories.

func insertAdvisory(ctx context.Context, q ruleTx, a hub.OSV, target, report string) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	n, err := sqldb.ToNanos(a.Modified.Time)
	if err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	if err := q.exec(ctx, `INSERT INTO advisories (id, target, data, modified, withdrawn, report) VALUES (?, ?, ?, ?, NULL, ?)`,
		a.ID, target, data, n, report); err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	return nil
}

// createAdvisory publishes the advisory of report r and returns its id and
// its advisory.published event.
func createAdvisory(ctx context.Context, q ruleTx, r hub.Report, actor string, at time.Time) (string, hub.Event, error) {
	id, err := q.nextAdvisoryID(ctx, at)
	if err != nil {
		return "", hub.Event{}, err
	}
	if err := insertAdvisory(ctx, q, reportOSV(r, id, at, at), r.Target, r.ID); err != nil {
		return "", hub.Event{}, err
	}
	if err := q.exec(ctx, `UPDATE reports SET advisory = ? WHERE id = ?`, id, r.ID); err != nil {
		return "", hub.Event{}, fmt.Errorf("update report: %w", err)
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventAdvisoryPublished, Time: at, Actor: actor, Module: r.Target, Advisory: id})
	return id, ev, err
}

type storedAdvisory struct {
	osv       hub.OSV
	target    string
	withdrawn bool
	report    string
}

// loadAdvisory reads an advisory (locking nothing: see lockAdvisory).
func loadAdvisory(ctx context.Context, q ruleTx, id string) (storedAdvisory, error) {
	var a storedAdvisory
	var data []byte
	err := q.queryRow(ctx, `SELECT data, target, withdrawn IS NOT NULL, report FROM advisories WHERE id = ?`, id).Scan(&data, &a.target, &a.withdrawn, &a.report)
	if isNoRows(err) {
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
// refused. The caller holds the report's lock; the advisory's is taken
// here.
func updateAdvisory(ctx context.Context, q ruleTx, r hub.Report, actor string, at time.Time, explicit bool) (hub.Event, bool, error) {
	if err := q.lockAdvisory(ctx, r.Advisory); err != nil {
		return hub.Event{}, false, err
	}
	old, err := loadAdvisory(ctx, q, r.Advisory)
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
	if err := storeAdvisory(ctx, q, now); err != nil {
		return hub.Event{}, false, err
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventAdvisoryUpdated, Time: at, Actor: actor, Module: r.Target, Advisory: now.ID})
	return ev, true, err
}

// withdrawReportAdvisory withdraws the advisory of report r, found
// invalid, unless it is withdrawn already (then it reports false). The
// caller holds the report's lock; the advisory's is taken here.
func withdrawReportAdvisory(ctx context.Context, q ruleTx, r hub.Report, actor string, at time.Time) (hub.Event, bool, error) {
	if err := q.lockAdvisory(ctx, r.Advisory); err != nil {
		return hub.Event{}, false, err
	}
	a, err := loadAdvisory(ctx, q, r.Advisory)
	if err != nil || a.withdrawn {
		return hub.Event{}, false, err
	}
	osv := a.osv
	osv.Withdrawn, osv.Modified = &hub.OSVTime{Time: at}, hub.OSVTime{Time: at}
	if err := storeAdvisory(ctx, q, osv); err != nil {
		return hub.Event{}, false, err
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventAdvisoryWithdrawn, Time: at, Actor: actor, Module: r.Target, Advisory: osv.ID,
		Reason: "report " + r.ID + " was found invalid"})
	return ev, err == nil, err
}

// storeAdvisory replaces the stored record of a.ID.
func storeAdvisory(ctx context.Context, q ruleTx, a hub.OSV) error {
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
	if err := q.exec(ctx, `UPDATE advisories SET data = ?, modified = ?, withdrawn = ? WHERE id = ?`, data, modified, withdrawn, a.ID); err != nil {
		return fmt.Errorf("store advisory: %w", err)
	}
	return nil
}

// requireMaintainer checks that actor maintains target (owner "" for the
// station): its owner, or an admin.
func requireMaintainer(ctx context.Context, q ruleTx, target, owner, actor string) error {
	if owner != "" && actor == owner {
		return nil
	}
	admin, err := isAdmin(ctx, q, actor)
	if err != nil {
		return err
	}
	if !admin {
		return refuse(ErrNotMaintainer, "only %s publish and withdraw the advisories of %s", maintainers(target), target)
	}
	return nil
}

// publishAdvisory is Store.PublishAdvisory in a write transaction.
func publishAdvisory(ctx context.Context, q ruleTx, req hub.AdvisoryRequest, actor string, at time.Time) (hub.OSV, hub.Event, error) {
	at = at.UTC()
	owner, err := targetOwner(ctx, q, req.Target)
	if err != nil {
		return hub.OSV{}, hub.Event{}, err
	}
	if err := requireMaintainer(ctx, q, req.Target, owner, actor); err != nil {
		return hub.OSV{}, hub.Event{}, err
	}
	// The fixed versions stay unyanked until this commits.
	if err := lockTarget(ctx, q, req.Target); err != nil {
		return hub.OSV{}, hub.Event{}, err
	}
	for _, r := range req.Ranges {
		if r.Fixed != "" {
			if err := checkFixedIn(ctx, q, req.Target, r.Fixed); err != nil {
				return hub.OSV{}, hub.Event{}, err
			}
		}
	}
	for _, name := range req.Credits {
		if err := exists(ctx, q, `SELECT 1 FROM accounts WHERE name = ?`, name); errors.Is(err, ErrNotFound) {
			return hub.OSV{}, hub.Event{}, refuse(ErrNoAccount, "credits: account %q does not exist on this hub", name)
		} else if err != nil {
			return hub.OSV{}, hub.Event{}, err
		}
	}
	id, err := q.nextAdvisoryID(ctx, at)
	if err != nil {
		return hub.OSV{}, hub.Event{}, err
	}
	out := directOSV(req, id, at)
	if err := insertAdvisory(ctx, q, out, req.Target, ""); err != nil {
		return hub.OSV{}, hub.Event{}, err
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventAdvisoryPublished, Time: at, Actor: actor, Module: req.Target, Advisory: id})
	return out, ev, err
}

// withdrawAdvisory is Store.WithdrawAdvisory in a write transaction.
func withdrawAdvisory(ctx context.Context, q ruleTx, id, actor, reason string, at time.Time) (hub.OSV, *hub.Event, error) {
	at = at.UTC()
	a, err := loadAdvisory(ctx, q, id)
	if err != nil {
		return hub.OSV{}, nil, err
	}
	if a.report != "" {
		// In triageReport's order: the report's lock, then the
		// advisory's.
		if err := q.lockReport(ctx, a.report); err != nil {
			return hub.OSV{}, nil, err
		}
	}
	if err := q.lockAdvisory(ctx, id); err != nil {
		return hub.OSV{}, nil, err
	}
	// Read again under the locks: what was read before them may be gone.
	if a, err = loadAdvisory(ctx, q, id); err != nil {
		return hub.OSV{}, nil, err
	}
	owner := ""
	if a.target != hub.Product {
		owner, _, _ = strings.Cut(a.target, "/")
	}
	if err := requireMaintainer(ctx, q, a.target, owner, actor); err != nil {
		return hub.OSV{}, nil, err
	}
	out := a.osv
	if a.withdrawn {
		return out, nil, nil
	}
	out.Withdrawn, out.Modified = &hub.OSVTime{Time: at}, hub.OSVTime{Time: at}
	if err := storeAdvisory(ctx, q, out); err != nil {
		return hub.OSV{}, nil, err
	}
	ev, err := q.appendEvent(ctx, hub.Event{Kind: hub.EventAdvisoryWithdrawn, Time: at, Actor: actor, Module: a.target, Advisory: id, Reason: reason})
	if err != nil {
		return hub.OSV{}, nil, err
	}
	if a.report != "" {
		if _, err := appendReportEvent(ctx, q, a.report, hub.ReportEvent{Kind: hub.ReportAdvisory, Actor: actor, Time: at, Advisory: id, Reason: reason}); err != nil {
			return hub.OSV{}, nil, err
		}
	}
	return out, &ev, nil
}
