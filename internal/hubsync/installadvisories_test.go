package hubsync_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// advise publishes, as dave, an advisory of level against dave/hello from
// introduced, fixed in fixed ("" for none), and returns its id.
func (e *env) advise(t *testing.T, level, introduced, fixed string) string {
	t.Helper()
	a, err := e.dave.PublishAdvisory(context.Background(), hub.AdvisoryRequest{Target: "dave/hello",
		Ranges: []hub.Range{{Introduced: introduced, Fixed: fixed}}, Summary: "greet sends the name to the relay",
		Details: "The greeting leaks.", Severity: hub.Severity{Level: level}})
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func yes(hubsync.Plan) (bool, error) { return true, nil }

// advisoryRecords returns the audit records of capability advisory for
// dave/hello.
func advisoryRecords(t *testing.T, st *station.Station) []sandbox.Decision {
	t.Helper()
	ctx := context.Background()
	if err := st.Audit.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Store.Audit(ctx, store.AuditFilter{Module: "dave/hello"})
	if err != nil {
		t.Fatal(err)
	}
	var out []sandbox.Decision
	for _, r := range recs {
		if r.Capability == sandbox.Advisory {
			out = append(out, r.Decision)
		}
	}
	return out
}

// TestInstallRefusesACriticalAdvisory: a version an advisory at or above
// advisories.block (default critical) affects is not installed — nothing
// is written, even with an approver that says yes, and the refusal is
// audited; --allow-advisory installs it, stores the allowance (so it runs)
// and audits the override; the fixed version installs with nothing to say.
func TestInstallRefusesACriticalAdvisory(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, e.signer, "1.0.0", nil, none())
	e.publish(t, e.signer, "1.1.0", nil, none()) // the hub records a fix only once it is published
	id := e.advise(t, hub.SeverityCritical, "0", "1.1.0")

	_, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, yes)
	var blocked *hubsync.AdvisoryBlockedError
	if !errors.As(err, &blocked) || blocked.ID != id || blocked.FixedIn != "1.1.0" {
		t.Fatalf("install of an affected version: %v, want an AdvisoryBlockedError of %s fixed in 1.1.0", err, id)
	}
	for _, want := range []string{id, "critical", "greet sends the name to the relay", "install dave/hello@1.1.0 instead", "--allow-advisory " + id} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if _, err := e.sess.Station.Store.Module(ctx, "dave/hello"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused version is installed: %v", err)
	}
	if recs := advisoryRecords(t, e.sess.Station); len(recs) != 1 || recs[0].Allowed || recs[0].Target != id {
		t.Errorf("audit records of the refusal: %+v", recs)
	}

	// The override: installed, allowed, audited, and it runs.
	e.sess.AllowAdvisories = []string{id}
	var shown hubsync.Plan
	res, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, func(p hubsync.Plan) (bool, error) { shown = p; return true, nil })
	if err != nil || !res.Changed {
		t.Fatalf("install with --allow-advisory: %+v, %v", res, err)
	}
	if len(shown.Advisories) != 1 || shown.Advisories[0].ID != id || !shown.NeedsApproval() {
		t.Errorf("the plan did not show the advisory: %+v", shown.Advisories)
	}
	if d := strings.Join(shown.Differences(), "\n"); !strings.Contains(d, "IS AFFECTED BY ADVISORY "+id+" (critical)") || !strings.Contains(d, "fixed in 1.1.0") {
		t.Errorf("the plan's differences do not name the advisory:\n%s", d)
	}
	allows, err := e.sess.Station.Store.AdvisoryAllows(ctx, "dave/hello")
	if err != nil || len(allows) != 1 || allows[0].Advisory != id || allows[0].Version != "1.0.0" {
		t.Fatalf("allowance stored: %+v, %v", allows, err)
	}
	if _, err := e.sess.Station.Run(ctx, "dave/hello", "greet", []byte(`{"name":"x"}`)); err != nil {
		t.Fatalf("an allowed version does not run: %v", err)
	}

	// The fix: nothing against it.
	e.sess.AllowAdvisories = nil
	shown = hubsync.Plan{}
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.1.0"}, func(p hubsync.Plan) (bool, error) { shown = p; return true, nil }); err != nil {
		t.Fatal(err)
	}
	if len(shown.Advisories) != 0 {
		t.Errorf("the fixed version is shown as affected: %+v", shown.Advisories)
	}
	if _, err := e.sess.Station.Run(ctx, "dave/hello", "greet", []byte(`{"name":"x"}`)); err != nil {
		t.Errorf("the fixed version does not run: %v", err)
	}
}

// TestInstallAsksAboutAnAdvisoryBelowTheThreshold: an advisory below
// advisories.block does not refuse, but the plan needs approval even when
// the permissions did not change, so a daemon's sync records the change as
// pending instead of installing a version with a known flaw unseen.
func TestInstallAsksAboutAnAdvisoryBelowTheThreshold(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, e.signer, "1.0.0", nil, none())
	id := e.advise(t, hub.SeverityHigh, "1.0.0", "")

	_, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil)
	var pending *hubsync.PendingError
	if !errors.As(err, &pending) || !strings.Contains(err.Error(), "IS AFFECTED BY ADVISORY "+id+" (high)") {
		t.Fatalf("an install nobody can approve: %v, want a PendingError naming %s", err, id)
	}
	if _, err := e.sess.Station.Store.Module(ctx, "dave/hello"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a pending install wrote the module: %v", err)
	}
	declined := func(hubsync.Plan) (bool, error) { return false, nil }
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, declined); !errors.Is(err, station.ErrNotApproved) {
		t.Fatalf("declined: %v", err)
	}
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, yes); err != nil {
		t.Fatalf("approved: %v", err)
	}
	// It runs, with a warning in the audit log.
	if _, err := e.sess.Station.Run(ctx, "dave/hello", "greet", []byte(`{"name":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if recs := advisoryRecords(t, e.sess.Station); len(recs) != 1 || !recs[0].Allowed || recs[0].Target != id {
		t.Errorf("audit records of the run: %+v", recs)
	}
}

// TestAllowanceIsForOneAdvisoryAndVersion: --allow-advisory lets through
// the advisory it names and no other (a second critical one refuses the
// install, and nothing is allowed), and an allowance of a version does not
// carry over to an upgrade to another affected one.
func TestAllowanceIsForOneAdvisoryAndVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, e.signer, "1.0.0", nil, none())
	e.publish(t, e.signer, "1.0.1", nil, none())
	e.publish(t, e.signer, "1.1.0", nil, none())
	first := e.advise(t, hub.SeverityCritical, "0", "1.1.0")
	second := e.advise(t, hub.SeverityCritical, "1.0.0", "1.0.1")

	e.sess.AllowAdvisories = []string{first}
	_, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, yes)
	var blocked *hubsync.AdvisoryBlockedError
	if !errors.As(err, &blocked) || blocked.ID != second {
		t.Fatalf("--allow-advisory %s with %s also against 1.0.0: %v, want refused by %s", first, second, err, second)
	}
	if as, _ := e.sess.Station.Store.AdvisoryAllows(ctx, ""); len(as) != 0 {
		t.Errorf("a refused install stored allowances: %+v", as)
	}
	e.sess.AllowAdvisories = []string{first, second}
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, yes); err != nil {
		t.Fatalf("with both allowed: %v", err)
	}

	// 1.0.1 is affected by the first alone, which was allowed for 1.0.0.
	e.sess.AllowAdvisories = nil
	res, err := e.sess.Upgrade(ctx, []string{"dave/hello@1.0.1"}, yes)
	if !errors.As(err, &blocked) || blocked.ID != first || len(res) != 1 || res[0].Status != hubsync.Failed {
		t.Errorf("upgrade to 1.0.1, affected by %s allowed only for 1.0.0: %+v, %v; want refused", first, res, err)
	}
	if rec, _ := e.sess.Station.Store.Module(ctx, "dave/hello"); rec.Version != "1.0.0" {
		t.Errorf("installed %s after the refused upgrade", rec.Version)
	}
}

// TestDaemonApplyOfAnAffectedVersion: a lockfile applied with no approver
// (the daemon, on a relayed push) does not install a version a critical
// advisory affects — it fails, naming the advisory, and is not left as a
// pending change someone might approve without seeing it — and records a
// version a lower one affects as pending; the version installed before
// keeps running in both cases.
func TestDaemonApplyOfAnAffectedVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v1 := e.publish(t, e.signer, "1.0.0", nil, none())
	if rep, err := e.sess.Apply(ctx, lockfile(1, v1), nil); err != nil || len(rep.Installed) != 1 {
		t.Fatalf("apply 1.0.0 = %+v, %v", rep, err)
	}
	v2 := e.publish(t, e.signer, "1.1.0", nil, none())
	v3 := e.publish(t, e.signer, "1.2.0", nil, none())
	crit := e.advise(t, hub.SeverityCritical, "1.1.0", "1.2.0")
	high := e.advise(t, hub.SeverityHigh, "1.2.0", "")

	rep, err := e.sess.Apply(ctx, lockfile(2, v2), nil)
	var blocked *hubsync.AdvisoryBlockedError
	if err != nil || len(rep.Failed) != 1 || !errors.As(rep.Failed[0].Err, &blocked) || blocked.ID != crit || len(rep.Pending) != 0 {
		t.Errorf("apply of 1.1.0, blocked by %s = %+v, %v", crit, rep, err)
	}
	if rec, _ := e.sess.Station.Store.Module(ctx, "dave/hello"); rec.Version != "1.0.0" {
		t.Errorf("installed %s after a blocked apply", rec.Version)
	}
	rep, err = e.sess.Apply(ctx, lockfile(3, v3), nil)
	if err != nil || len(rep.Pending) != 1 || len(rep.Installed) != 0 {
		t.Fatalf("apply of 1.2.0, affected by %s = %+v, %v", high, rep, err)
	}
	ps, _ := e.sess.Station.Store.HubPendings(ctx, "acme")
	if len(ps) != 1 || !strings.Contains(strings.Join(ps[0].Escalations, "\n"), "IS AFFECTED BY ADVISORY "+high) {
		t.Errorf("pending = %+v", ps)
	}
	if err := e.greet(); err != nil {
		t.Errorf("1.0.0 does not run: %v", err)
	}
}

// TestInstallDoesNotFreshenTheFeed: the advisories an install asks the hub
// for (one module's) are stored, but the advisory feed is not read by it:
// the feed's cursor and the time it was last read stay as they were, so
// that station advisories does not say the advisories were read just now
// when the feed never was.
func TestInstallDoesNotFreshenTheFeed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, e.signer, "1.0.0", nil, none())
	id := e.advise(t, hub.SeverityHigh, "1.0.0", "")
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, yes); err != nil {
		t.Fatal(err)
	}
	st := e.sess.Station.Store
	if as, err := st.AdvisoriesFor(ctx, "dave/hello"); err != nil || len(as) != 1 || as[0].OSV.ID != id {
		t.Fatalf("the install stored %+v, %v; want %s", as, err, id)
	}
	if f, err := st.AdvisoryCursor(ctx, e.sess.Login.URL); err != nil || f.Cursor != 0 || !f.SyncedAt.IsZero() {
		t.Errorf("after an install, the feed = %+v, %v; want never read", f, err)
	}
	found, err := hubsync.CheckAdvisories(ctx, e.sess.Station, "(devel)")
	if err != nil || !found.SyncedAt.IsZero() {
		t.Errorf("CheckAdvisories says the feed was read at %v (%v); it never was", found.SyncedAt, err)
	}
}

// TestPushRefusesAnAffectedOrYankedVersion: team push refuses to pin a
// version an advisory of any severity affects, or one that is yanked,
// unless the operator overrides that advisory or yanked versions; the
// lockfile is not changed by a refused push.
func TestPushRefusesAnAffectedOrYankedVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(t, e.signer, "1.0.0", nil, none())
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, yes); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.sess.CreateTeam(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	id := e.advise(t, hub.SeverityLow, "0", "")

	_, _, err := e.sess.Push(ctx, "acme", []string{"dave/hello"}, nil)
	if err == nil || !strings.Contains(err.Error(), "IS AFFECTED BY ADVISORY "+id+" (low)") || !strings.Contains(err.Error(), "--allow-advisory") {
		t.Fatalf("push of an affected version: %v", err)
	}
	if tl, err := e.sess.Client.Lockfile(ctx, "acme"); err != nil || tl.Revision != 0 {
		t.Fatalf("a refused push changed the lockfile: %+v, %v", tl, err)
	}
	e.sess.AllowAdvisories = []string{id}
	if tl, _, err := e.sess.Push(ctx, "acme", []string{"dave/hello"}, nil); err != nil || tl.Revision != 1 {
		t.Fatalf("push with --allow-advisory: %+v, %v", tl, err)
	}

	if _, err := e.dave.Yank(ctx, "dave/hello", "1.0.0", "leaks the greeting"); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.sess.Push(ctx, "acme", []string{"dave/hello"}, nil)
	if err == nil || !strings.Contains(err.Error(), "is yanked") || !strings.Contains(err.Error(), "leaks the greeting") || !strings.Contains(err.Error(), "--allow-yanked") {
		t.Fatalf("push of a yanked version: %v", err)
	}
	e.sess.AllowYanked = true
	if tl, _, err := e.sess.Push(ctx, "acme", []string{"dave/hello"}, nil); err != nil || tl.Revision != 2 {
		t.Fatalf("push with --allow-yanked: %+v, %v", tl, err)
	}
}
