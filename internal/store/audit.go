package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/sqldb"
)

// AuditRecord is one stored sandbox decision, or a summary row of the audit
// rate limit (Folded > 0: the number of decisions it stands for). ID orders
// records by the time they were stored.
type AuditRecord struct {
	ID int64 `json:"id"`
	sandbox.Decision
}

// AuditFilter selects audit records. The zero value selects the newest 1000
// records of every module.
type AuditFilter struct {
	// Module, if set, selects only this module's decisions.
	Module string
	// DeniedOnly selects only denials.
	DeniedOnly bool
	// Trace, if set, selects only decisions of calls made with this trace
	// (sandbox.WithTrace).
	Trace string
	// AllowedOnly selects only decisions that allowed (with DeniedOnly,
	// nothing).
	AllowedOnly bool
	// Capability, if set, selects only decisions of this capability
	// ("network", "filesystem", ...).
	Capability sandbox.Capability
	// Since, if set, selects only decisions made at or after it; Until,
	// if set, only those made before it.
	Since, Until time.Time
	// Before, if set, selects only records with a smaller ID: the cursor
	// of the page after one whose oldest record has ID Before.
	Before int64
	// After, if set, selects only records with a larger ID, and the
	// oldest Limit of them instead of the newest: what a live tail asks
	// for after the newest record it has.
	After int64
	// Limit is the most records returned (the newest ones); 0 means
	// DefaultAuditLimit.
	Limit int
}

// DefaultAuditLimit is the number of records Audit returns when
// AuditFilter.Limit is 0.
const DefaultAuditLimit = 1000

// AppendAudit stores decisions, in order, in one transaction: either all of
// them are stored or none is.
func (s *Store) AppendAudit(ctx context.Context, decisions []sandbox.Decision) error {
	if len(decisions) == 0 {
		return nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit (time, module, command, capability, target, allowed, reason, trace, folded)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, d := range decisions {
			at, err := sqldb.ToNanos(d.Time)
			if err != nil {
				return fmt.Errorf("decision of %s: %w", d.Module, err)
			}
			if _, err := stmt.ExecContext(ctx, at, d.Module, d.Command, string(d.Capability), d.Target, d.Allowed, d.Reason, d.Trace, d.Folded); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append audit (%d decisions): %w", len(decisions), err)
	}
	return nil
}

// Audit returns the newest f.Limit records that match f (with f.After, the
// oldest), oldest first. The scan walks IDs from the cursor and stops once
// the page is full, so a page of common records costs about its own size
// however long the log is (the dashboard's BenchmarkAuditPage).
func (s *Store) Audit(ctx context.Context, f AuditFilter) ([]AuditRecord, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	var where []string
	var args []any
	if f.Module != "" {
		where = append(where, "module = ?")
		args = append(args, f.Module)
	}
	if f.Trace != "" {
		// The second term lets SQLite use the partial index on trace.
		where = append(where, "trace = ?", "trace != ''")
		args = append(args, f.Trace)
	}
	if f.DeniedOnly {
		where = append(where, "allowed = 0")
	}
	if f.AllowedOnly {
		where = append(where, "allowed != 0")
	}
	if f.Capability != "" {
		where = append(where, "capability = ?")
		args = append(args, string(f.Capability))
	}
	if f.Before > 0 {
		where = append(where, "id < ?")
		args = append(args, f.Before)
	}
	if f.After > 0 {
		where = append(where, "id > ?")
		args = append(args, f.After)
	}
	if !f.Until.IsZero() {
		until, err := sqldb.ToNanos(f.Until)
		if err != nil {
			return nil, fmt.Errorf("read audit: until: %w", err)
		}
		where = append(where, "time < ?")
		args = append(args, until)
	}
	if !f.Since.IsZero() {
		since, err := sqldb.ToNanos(f.Since)
		if err != nil {
			return nil, fmt.Errorf("read audit: since: %w", err)
		}
		// The bound on id is exact (it is the smallest id in the window)
		// and lets the newest-first scan stop at the window's start.
		where = append(where, "time >= ?", "id >= (SELECT min(id) FROM audit WHERE time >= ?)")
		args = append(args, since, since)
	}
	q := `SELECT id, time, module, command, capability, target, allowed, reason, trace, folded FROM audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	order := " ORDER BY id DESC LIMIT ?"
	if f.After > 0 {
		order = " ORDER BY id LIMIT ?"
	}
	q += order
	args = append(args, limit)
	out, err := sqldb.QueryAll(ctx, s.db, scanAudit, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	if f.After == 0 {
		slices.Reverse(out)
	}
	return out, nil
}

func scanAudit(r sqldb.Scanner) (AuditRecord, error) {
	var a AuditRecord
	var at int64
	var capability string
	if err := r.Scan(&a.ID, &at, &a.Module, &a.Command, &capability, &a.Target, &a.Allowed, &a.Reason, &a.Trace, &a.Folded); err != nil {
		return AuditRecord{}, err
	}
	a.Time = sqldb.FromNanos(at)
	a.Capability = sandbox.Capability(capability)
	return a, nil
}
