package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/sqldb"
)

// What the station knows of the hubs' security advisories (schema 9; the
// hub of an allowance, 10): the OSV records each hub published, as the
// station last received them; the versions each hub has yanked; the
// operator's allowances to run a module version an advisory of a hub
// affects; and how far the station has read each hub's advisory feed. Everything but the allowances came from a hub: print it
// sanitised. The station's run gate reads them (internal/station,
// advisories.go); hubsync writes them from the feed.

// Advisory is an advisory as the station stored it.
type Advisory struct {
	// HubURL is the hub that published it: an advisory applies only to
	// modules installed from that hub.
	HubURL string
	// Target is the module id or hub.Product the advisory is about: the
	// package of its first affected entry in the hub's ecosystem (a hub's
	// advisory has one).
	Target string
	// OSV is the record as the hub sent it.
	OSV hub.OSV
}

// Yank is a module version its hub has yanked.
type Yank struct {
	HubURL, Module, Version string
	// Reason is the hub's (the publisher's) reason.
	Reason   string
	YankedAt time.Time
}

// AdvisoryAllow is the operator's allowance to run (and install) one
// module version although an advisory affects it.
type AdvisoryAllow struct {
	Module, Version string
	// Advisory is the advisory id, and HubURL the hub that published it:
	// hubs number their advisories each on their own, so the allowance
	// allows no other hub's advisory of that id ("" allows none: an
	// allowance from schema 9 whose hub could not be told).
	Advisory, HubURL string
	// Reason is why the operator allows it, in their words.
	Reason    string
	AllowedAt time.Time
}

// AdvisoryFeed is how far the station has read a hub's advisory feed.
type AdvisoryFeed struct {
	HubURL string
	// Cursor is where the next read starts (0: from the beginning).
	Cursor int64
	// SyncedAt is when a page of the feed was last stored; zero when the
	// station never read this hub's feed.
	SyncedAt time.Time
}

// MaxAllowReason bounds an allowance's reason, in bytes.
const MaxAllowReason = hub.MaxReasonBytes

// advisoryTarget is the package of a's first affected entry in the hub's
// ecosystem, or "" if none.
func advisoryTarget(a *hub.OSV) string {
	for _, af := range a.Affected {
		if af.Package.Ecosystem == hub.Ecosystem && af.Package.Name != "" {
			return af.Package.Name
		}
	}
	return ""
}

// checkAdvisory returns "" if a may be stored, or what is wrong with it.
func checkAdvisory(a *hub.OSV) string {
	switch {
	case !hub.ValidAdvisoryID(a.ID):
		return fmt.Sprintf("advisory id %q is not one (%s-YEAR-NUMBER)", clipName(a.ID), hub.AdvisoryPrefix)
	case a.Modified.IsZero():
		return fmt.Sprintf("advisory %s has no modified time", a.ID)
	case advisoryTarget(a) == "":
		return fmt.Sprintf("advisory %s names no package of the %s ecosystem", a.ID, hub.Ecosystem)
	}
	return ""
}

// clipName bounds s for an error message.
func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// PutAdvisories stores what one page of hubURL's advisory feed brought, in
// one transaction: each advisory replaces the one stored under its id
// unless the stored one was modified later (a page read twice, or out of
// order, never rolls an advisory back); each yank, in order, records the
// version as yanked (with its reason) or, for an unyank, forgets it; and
// the feed's cursor becomes cursor. An advisory the station cannot use (an
// id that is not a hub's, no modified time, no package of the hub's
// ecosystem) or a yank of a name that is not a module version fails the
// whole page: the caller leaves such records out, and says so.
func (s *Store) PutAdvisories(ctx context.Context, hubURL string, advisories []hub.OSV, yanks []hub.Yank, cursor int64) error {
	if cursor < 0 {
		return fmt.Errorf("store advisories of %s: cursor %d is negative", hubURL, cursor)
	}
	return s.putAdvisories(ctx, hubURL, advisories, yanks, cursor)
}

// PutAdvisoryRecords stores advisories and yanks hubURL sent outside its
// feed (the advisories of one module, asked for at install), as
// PutAdvisories does, but leaves the feed's cursor and the time it was
// last read as they are: the feed was not read.
func (s *Store) PutAdvisoryRecords(ctx context.Context, hubURL string, advisories []hub.OSV, yanks []hub.Yank) error {
	return s.putAdvisories(ctx, hubURL, advisories, yanks, -1)
}

// putAdvisories is PutAdvisories, with a cursor of -1 for records that
// did not come from the feed.
func (s *Store) putAdvisories(ctx context.Context, hubURL string, advisories []hub.OSV, yanks []hub.Yank, cursor int64) error {
	if hubURL == "" {
		return errors.New("store advisories: no hub given")
	}
	now, err := sqldb.ToNanos(time.Now())
	if err != nil {
		return err
	}
	type row struct {
		id, target          string
		data                []byte
		modified, withdrawn int64
	}
	rows := make([]row, 0, len(advisories))
	for i := range advisories {
		a := &advisories[i]
		if msg := checkAdvisory(a); msg != "" {
			return fmt.Errorf("store advisories of %s: %s", hubURL, msg)
		}
		r := row{id: a.ID, target: advisoryTarget(a)}
		if r.modified, err = sqldb.ToNanos(a.Modified.Time); err != nil {
			return fmt.Errorf("store advisory %s: modified: %w", a.ID, err)
		}
		if a.Withdrawn != nil {
			if r.withdrawn, err = sqldb.ToNanos(a.Withdrawn.Time); err != nil {
				return fmt.Errorf("store advisory %s: withdrawn: %w", a.ID, err)
			}
			r.withdrawn = max(r.withdrawn, 1) // 0 means in force
		}
		if r.data, err = json.Marshal(a); err != nil {
			return fmt.Errorf("store advisory %s: %w", a.ID, err)
		}
		rows = append(rows, r)
	}
	for _, y := range yanks {
		if msg := hub.CheckModuleID(y.Module); msg != "" {
			return fmt.Errorf("store yanks of %s: module %q %s", hubURL, clipName(y.Module), msg)
		}
		if msg := hub.CheckVersion(y.Version); msg != "" {
			return fmt.Errorf("store yanks of %s: %s version %q %s", hubURL, y.Module, clipName(y.Version), msg)
		}
		if _, err := sqldb.ToNanos(y.Time); err != nil {
			return fmt.Errorf("store yank of %s@%s: %w", y.Module, y.Version, err)
		}
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		for _, r := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT INTO hub_advisories (hub_url, id, target, data, modified, withdrawn)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (hub_url, id) DO UPDATE SET target = excluded.target, data = excluded.data,
					modified = excluded.modified, withdrawn = excluded.withdrawn
				WHERE excluded.modified >= hub_advisories.modified`,
				hubURL, r.id, r.target, r.data, r.modified, r.withdrawn); err != nil {
				return err
			}
		}
		for _, y := range yanks {
			var err error
			if y.Yanked {
				at, _ := sqldb.ToNanos(y.Time)
				_, err = tx.ExecContext(ctx, `INSERT INTO hub_yanks (hub_url, module, version, reason, yanked_at) VALUES (?, ?, ?, ?, ?)
					ON CONFLICT (hub_url, module, version) DO UPDATE SET reason = excluded.reason, yanked_at = excluded.yanked_at`,
					hubURL, y.Module, y.Version, y.Reason, at)
			} else {
				_, err = tx.ExecContext(ctx, `DELETE FROM hub_yanks WHERE hub_url = ? AND module = ? AND version = ?`, hubURL, y.Module, y.Version)
			}
			if err != nil {
				return err
			}
		}
		if cursor < 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO hub_advisory_feeds (hub_url, cursor, synced_at) VALUES (?, ?, ?)
			ON CONFLICT (hub_url) DO UPDATE SET cursor = excluded.cursor, synced_at = excluded.synced_at`, hubURL, cursor, now)
		return err
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("store advisories of %s: %w", hubURL, err)
	}
	return nil
}

// AdvisoryCursor returns how far the station has read the advisory feed of
// hubURL: cursor 0 and a zero SyncedAt for a hub whose feed it never read.
func (s *Store) AdvisoryCursor(ctx context.Context, hubURL string) (AdvisoryFeed, error) {
	f := AdvisoryFeed{HubURL: hubURL}
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT cursor, synced_at FROM hub_advisory_feeds WHERE hub_url = ?`, hubURL).Scan(&f.Cursor, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return f, nil
	}
	if err != nil {
		return AdvisoryFeed{}, fmt.Errorf("advisory feed cursor of %s: %w", hubURL, err)
	}
	f.SyncedAt = sqldb.FromNanos(at)
	return f, nil
}

// ResetAdvisoryCursor makes the next read of hubURL's advisory feed start
// from the beginning (the hub's feed is behind the stored cursor: it was
// restored or replaced). What was stored stays until the feed brings it
// again.
func (s *Store) ResetAdvisoryCursor(ctx context.Context, hubURL string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE hub_advisory_feeds SET cursor = 0 WHERE hub_url = ?`, hubURL)
		return err
	})
	if err != nil {
		return fmt.Errorf("reset the advisory feed cursor of %s: %w", hubURL, err)
	}
	return nil
}

const advisoryColumns = `hub_url, target, data`

func scanAdvisory(r sqldb.Scanner) (Advisory, error) {
	var a Advisory
	var data []byte
	if err := r.Scan(&a.HubURL, &a.Target, &data); err != nil {
		return Advisory{}, err
	}
	if err := json.Unmarshal(data, &a.OSV); err != nil {
		return Advisory{}, fmt.Errorf("advisory stored from %s: %w", a.HubURL, err)
	}
	return a, nil
}

// Advisories returns every stored advisory, withdrawn ones included, by
// hub and id.
func (s *Store) Advisories(ctx context.Context) ([]Advisory, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanAdvisory, `SELECT `+advisoryColumns+` FROM hub_advisories ORDER BY hub_url, id`)
	if err != nil {
		return nil, fmt.Errorf("advisories: %w", err)
	}
	return out, nil
}

// AdvisoriesFor returns the stored advisories about target (a module id or
// hub.Product), from every hub, withdrawn ones included, by hub and id.
func (s *Store) AdvisoriesFor(ctx context.Context, target string) ([]Advisory, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanAdvisory, `SELECT `+advisoryColumns+` FROM hub_advisories WHERE target = ? ORDER BY hub_url, id`, target)
	if err != nil {
		return nil, fmt.Errorf("advisories of %s: %w", target, err)
	}
	return out, nil
}

// AdvisoryByID returns the advisories stored under id, one per hub that
// published one with that id (hubs number their advisories each on their
// own), by hub; none is an error wrapping ErrNotFound.
func (s *Store) AdvisoryByID(ctx context.Context, id string) ([]Advisory, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanAdvisory, `SELECT `+advisoryColumns+` FROM hub_advisories WHERE id = ? ORDER BY hub_url`, id)
	if err != nil {
		return nil, fmt.Errorf("advisory %s: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("advisory %s: %w", id, ErrNotFound)
	}
	return out, nil
}

func scanYank(r sqldb.Scanner) (Yank, error) {
	var y Yank
	var at int64
	if err := r.Scan(&y.HubURL, &y.Module, &y.Version, &y.Reason, &at); err != nil {
		return Yank{}, err
	}
	y.YankedAt = sqldb.FromNanos(at)
	return y, nil
}

// Yanks returns every version a hub has yanked, as far as the station
// knows, by hub, module and version.
func (s *Store) Yanks(ctx context.Context) ([]Yank, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanYank, `SELECT hub_url, module, version, reason, yanked_at FROM hub_yanks ORDER BY hub_url, module, version`)
	if err != nil {
		return nil, fmt.Errorf("yanks: %w", err)
	}
	return out, nil
}

// YanksOf returns the yanked versions of module, from every hub, by hub
// and version.
func (s *Store) YanksOf(ctx context.Context, module string) ([]Yank, error) {
	out, err := sqldb.QueryAll(ctx, s.db, scanYank, `SELECT hub_url, module, version, reason, yanked_at FROM hub_yanks WHERE module = ? ORDER BY hub_url, version`, module)
	if err != nil {
		return nil, fmt.Errorf("yanks of %s: %w", module, err)
	}
	return out, nil
}

// PutAdvisoryAllow records (or replaces) the operator's allowance to run
// a.Module at a.Version although advisory a.Advisory of hub a.HubURL
// affects it (one allowance per module version and advisory id: allowing
// the id of another hub replaces it). It does not check that the advisory
// is known or affects the version: the caller (station.AllowAdvisory, the
// CLI) does.
func (s *Store) PutAdvisoryAllow(ctx context.Context, a AdvisoryAllow) error {
	switch {
	case a.Module == "" || a.Version == "" || a.Advisory == "" || a.HubURL == "":
		return fmt.Errorf("allow advisory: module (%q), version (%q), advisory (%q) and its hub (%q) are all required", a.Module, a.Version, a.Advisory, a.HubURL)
	case len(a.Reason) > MaxAllowReason:
		return fmt.Errorf("allow advisory %s for %s@%s: the reason is %d bytes, more than %d", a.Advisory, a.Module, a.Version, len(a.Reason), MaxAllowReason)
	}
	at, err := sqldb.ToNanos(a.AllowedAt)
	if err != nil {
		return fmt.Errorf("allow advisory %s: %w", a.Advisory, err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO advisory_allows (module, version, advisory, hub_url, reason, allowed_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (module, version, advisory) DO UPDATE SET hub_url = excluded.hub_url, reason = excluded.reason, allowed_at = excluded.allowed_at`,
			a.Module, a.Version, a.Advisory, a.HubURL, a.Reason, at)
		return err
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("allow advisory %s for %s@%s: %w", a.Advisory, a.Module, a.Version, err)
	}
	return nil
}

// AdvisoryAllows returns the allowances recorded for module ("": for every
// module), by module, version and advisory.
func (s *Store) AdvisoryAllows(ctx context.Context, module string) ([]AdvisoryAllow, error) {
	out, err := sqldb.QueryAll(ctx, s.db, func(r sqldb.Scanner) (AdvisoryAllow, error) {
		var a AdvisoryAllow
		var at int64
		if err := r.Scan(&a.Module, &a.Version, &a.Advisory, &a.HubURL, &a.Reason, &at); err != nil {
			return AdvisoryAllow{}, err
		}
		a.AllowedAt = sqldb.FromNanos(at)
		return a, nil
	}, `SELECT module, version, advisory, hub_url, reason, allowed_at FROM advisory_allows
		WHERE ? = '' OR module = ? ORDER BY module, version, advisory`, module, module)
	if err != nil {
		return nil, fmt.Errorf("advisory allowances: %w", err)
	}
	return out, nil
}

// DeleteAdvisoryAllow withdraws the allowance for module@version and
// advisory; the error wraps ErrNotFound when there is none.
func (s *Store) DeleteAdvisoryAllow(ctx context.Context, module, version, advisory string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM advisory_allows WHERE module = ? AND version = ? AND advisory = ?`, module, version, advisory)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	s.changed()
	if err != nil {
		return fmt.Errorf("withdraw the allowance of advisory %s for %s@%s: %w", advisory, module, version, err)
	}
	return nil
}
