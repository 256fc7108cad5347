package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestHubLogin: a login round-trips, keeps its cursor on a repeated login
// to the same hub and account, and a login elsewhere forgets the cursor,
// teams and pending changes (never pinned keys or origins).
func TestHubLogin(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	if _, err := s.HubLogin(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("HubLogin before login = %v, want ErrNotFound", err)
	}
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	if err := s.PutHubLogin(ctx, HubLogin{URL: "http://127.0.0.1:1", Account: "dave", LoggedIn: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHubCursor(ctx, 42); err != nil {
		t.Fatal(err)
	}
	s.PutHubTeam(ctx, HubTeam{Name: "acme", HubURL: "http://127.0.0.1:1", Role: "owner", Revision: 3})
	s.ReplaceHubPendings(ctx, "acme", []HubPending{{Module: "dave/x", Version: "2.0.0", Revision: 3, Escalations: []string{"may now connect to a.example"}, RecordedAt: at}})
	s.PutHubKey(ctx, HubKey{HubURL: "http://127.0.0.1:1", Owner: "dave", KeyID: "K1", PublicKey: "RW...", PinnedAt: at})
	s.PutHubOrigin(ctx, HubOrigin{Module: "dave/x", HubURL: "http://127.0.0.1:1", Version: "1.0.0", ManifestDigest: "m", WasmDigest: "w", KeyID: "K1", InstalledAt: at})

	// The same hub and account again: the cursor stays.
	s.PutHubLogin(ctx, HubLogin{URL: "http://127.0.0.1:1", Account: "dave", LoggedIn: at.Add(time.Hour)})
	got, err := s.HubLogin(ctx)
	if want := (HubLogin{URL: "http://127.0.0.1:1", Account: "dave", Cursor: 42, LoggedIn: at.Add(time.Hour)}); err != nil || got != want {
		t.Errorf("HubLogin = %+v, %v; want %+v", got, err, want)
	}
	ps, _ := s.HubPendings(ctx, "")
	if want := []HubPending{{Team: "acme", Module: "dave/x", Version: "2.0.0", Revision: 3, Escalations: []string{"may now connect to a.example"}, RecordedAt: at}}; !reflect.DeepEqual(ps, want) {
		t.Errorf("HubPendings = %+v, want %+v", ps, want)
	}

	// Another account: cursor, teams and pending changes are forgotten.
	s.PutHubLogin(ctx, HubLogin{URL: "http://127.0.0.1:1", Account: "erin", LoggedIn: at})
	got, _ = s.HubLogin(ctx)
	teams, _ := s.HubTeams(ctx)
	ps, _ = s.HubPendings(ctx, "")
	if got.Cursor != 0 || len(teams) != 0 || len(ps) != 0 {
		t.Errorf("after a login as another account: cursor %d, teams %v, pending %v; want all empty", got.Cursor, teams, ps)
	}
	keys, _ := s.HubKeys(ctx, "http://127.0.0.1:1", "dave")
	if _, err := s.HubOrigin(ctx, "dave/x"); err != nil || len(keys) != 1 {
		t.Errorf("pinned keys %v and origin (%v) must survive a new login", keys, err)
	}

	if err := s.DeleteHubLogin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HubLogin(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("HubLogin after logout = %v, want ErrNotFound", err)
	}
}

// TestHubTeamsAndPending: teams and their pending sets are replaced as a
// whole and forgotten with the team.
func TestHubTeamsAndPending(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	for _, name := range []string{"beta", "acme"} {
		if err := s.PutHubTeam(ctx, HubTeam{Name: name, HubURL: "u", Role: "member", Revision: -1}); err != nil {
			t.Fatal(err)
		}
	}
	s.PutHubTeam(ctx, HubTeam{Name: "acme", HubURL: "u", Role: "owner", Revision: 2, SyncedAt: at, LastError: "x"})
	teams, _ := s.HubTeams(ctx)
	want := []HubTeam{{Name: "acme", HubURL: "u", Role: "owner", Revision: 2, SyncedAt: at, LastError: "x"}, {Name: "beta", HubURL: "u", Role: "member", Revision: -1}}
	if !reflect.DeepEqual(teams, want) {
		t.Errorf("HubTeams = %+v, want %+v", teams, want)
	}
	p := HubPending{Module: "a/b", Version: "1.0.0", Escalations: []string{"e"}, RecordedAt: at}
	s.ReplaceHubPendings(ctx, "acme", []HubPending{p, {Module: "a/c", Version: "1.0.0", Escalations: []string{}, RecordedAt: at}})
	s.ReplaceHubPendings(ctx, "beta", []HubPending{p})
	s.ReplaceHubPendings(ctx, "acme", []HubPending{p})
	if ps, _ := s.HubPendings(ctx, "acme"); len(ps) != 1 || ps[0].Module != "a/b" {
		t.Errorf("acme pending after replace = %+v, want only a/b", ps)
	}
	s.DeleteHubTeam(ctx, "acme")
	ps, _ := s.HubPendings(ctx, "")
	if len(ps) != 1 || ps[0].Team != "beta" {
		t.Errorf("pending after forgetting acme = %+v, want beta's only", ps)
	}
	if _, err := s.HubTeam(ctx, "acme"); !errors.Is(err, ErrNotFound) {
		t.Errorf("HubTeam(acme) after delete = %v", err)
	}
}

// TestHubKeysPerHub: a key is pinned for an owner on one hub; the same
// owner on another hub has no pins until one is made there, and the pins
// of every hub are listed apart from those trusted.
func TestHubKeysPerHub(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	a, b := "https://a.example", "https://b.example"
	for _, k := range []HubKey{
		{HubURL: a, Owner: "dave", KeyID: "K1", PublicKey: "RWK1", PinnedAt: at},
		{HubURL: a, Owner: "dave", KeyID: "K1", PublicKey: "RWK1", PinnedAt: at.Add(time.Hour)},    // again: a no-op
		{HubURL: a, Owner: "dave", KeyID: "K1", PublicKey: "RWother", PinnedAt: at.Add(time.Hour)}, // the same id, another key
		{HubURL: b, Owner: "dave", KeyID: "K2", PublicKey: "RWK2", PinnedAt: at},
		{HubURL: a, Owner: "erin", KeyID: "K3", PublicKey: "RWK3", PinnedAt: at},
	} {
		if err := s.PutHubKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutHubKey(ctx, HubKey{Owner: "dave", KeyID: "K9", PublicKey: "RWK9", PinnedAt: at}); err == nil {
		t.Error("PutHubKey pinned a key for no hub")
	}
	onA, _ := s.HubKeys(ctx, a, "dave")
	want := []HubKey{{HubURL: a, Owner: "dave", KeyID: "K1", PublicKey: "RWK1", PinnedAt: at}, {HubURL: a, Owner: "dave", KeyID: "K1", PublicKey: "RWother", PinnedAt: at.Add(time.Hour)}}
	if !reflect.DeepEqual(onA, want) {
		t.Errorf("HubKeys(a, dave) = %+v, want %+v", onA, want)
	}
	if onC, err := s.HubKeys(ctx, "https://c.example", "dave"); err != nil || len(onC) != 0 {
		t.Errorf("HubKeys(c, dave) = %+v, %v; want none", onC, err)
	}
	if _, err := s.HubKeys(ctx, "", "dave"); err == nil {
		t.Error("HubKeys without a hub succeeded")
	}
	every, _ := s.HubKeysOnEveryHub(ctx, "dave")
	if len(every) != 3 || every[0].HubURL != a || every[2].HubURL != b {
		t.Errorf("HubKeysOnEveryHub(dave) = %+v", every)
	}
}

// TestHubKeysMigration: a pin made before schema 7 goes to every hub an
// installed module of its owner signed by it came from, and a pin no
// origin names to no hub ("").
func TestHubKeysMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:6]
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO hub_keys (owner, key_id, public_key, pinned_at) VALUES ('dave', 'K1', 'RWK1', 1), ('dave', 'K2', 'RWK2', 2), ('erin', 'K1', 'RWE1', 3)`,
		`INSERT INTO hub_origins (module, hub_url, version, manifest_digest, wasm_digest, key_id, team, installed_at) VALUES
			('dave/a', 'https://a.example', '1.0.0', 'm', 'w', 'K1', '', 1),
			('dave/b', 'https://a.example', '1.0.0', 'm', 'w', 'K1', '', 1),
			('dave/c', 'https://b.example', '1.0.0', 'm', 'w', 'K1', '', 1),
			('davey/d', 'https://c.example', '1.0.0', 'm', 'w', 'K2', '', 1)`,
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	migrations = saved
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	type pin struct{ hub, owner, id, key string }
	var got []pin
	for _, owner := range []string{"dave", "erin"} {
		ks, err := s.HubKeysOnEveryHub(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			got = append(got, pin{k.HubURL, k.Owner, k.KeyID, k.PublicKey})
		}
	}
	want := []pin{
		{"", "dave", "K2", "RWK2"}, // davey/d is not dave's
		{"https://a.example", "dave", "K1", "RWK1"},
		{"https://b.example", "dave", "K1", "RWK1"},
		{"", "erin", "K1", "RWE1"}, // dave's modules name K1, not erin's
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pins after the migration:\n got %v\nwant %v", got, want)
	}
	if ks, _ := s.HubKeys(ctx, "https://c.example", "dave"); len(ks) != 0 {
		t.Errorf("a pin no origin names is trusted on a hub: %+v", ks)
	}
}

// TestRejectHubPending: a rejection is recorded for one module version,
// survives a replace that records the same version again, and is dropped
// by a replace that records another version of the module; rejecting a
// change that is not recorded is ErrNotFound.
func TestRejectHubPending(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	rejectedAt := at.Add(time.Hour)
	hello := HubPending{Module: "a/hello", Version: "1.1.0", Revision: 2, FromVersion: "1.0.0", Escalations: []string{"may now connect to api.stripe.com"}, RecordedAt: at}
	other := HubPending{Module: "a/other", Version: "2.0.0", Revision: 2, Escalations: []string{"e"}, RecordedAt: at}
	if err := s.ReplaceHubPendings(ctx, "acme", []HubPending{hello, other}); err != nil {
		t.Fatal(err)
	}
	s.ReplaceHubPendings(ctx, "beta", []HubPending{hello})
	for _, c := range []struct{ team, module, version string }{
		{"acme", "a/hello", "1.2.0"}, // another version
		{"acme", "a/nope", "1.1.0"},
		{"gamma", "a/hello", "1.1.0"},
	} {
		if err := s.RejectHubPending(ctx, c.team, c.module, c.version, rejectedAt); !errors.Is(err, ErrNotFound) {
			t.Errorf("RejectHubPending(%s, %s@%s) = %v, want ErrNotFound", c.team, c.module, c.version, err)
		}
	}
	if err := s.RejectHubPending(ctx, "acme", "a/hello", "1.1.0", time.Time{}); err == nil {
		t.Error("RejectHubPending with no time succeeded")
	}
	if err := s.RejectHubPending(ctx, "acme", "a/hello", "1.1.0", rejectedAt); err != nil {
		t.Fatal(err)
	}
	want := hello
	want.Team, want.RejectedAt = "acme", rejectedAt
	wantOther := other
	wantOther.Team = "acme"
	if ps, _ := s.HubPendings(ctx, "acme"); !reflect.DeepEqual(ps, []HubPending{want, wantOther}) {
		t.Errorf("after the rejection: %+v, want %+v", ps, []HubPending{want, wantOther})
	}
	if ps, _ := s.HubPendings(ctx, "beta"); len(ps) != 1 || !ps[0].RejectedAt.IsZero() {
		t.Errorf("beta's change of the same version: %+v, want it pending", ps)
	}

	// The same version again, at a later revision: still rejected.
	again := hello
	again.Revision, again.RecordedAt = 3, at.Add(2*time.Hour)
	s.ReplaceHubPendings(ctx, "acme", []HubPending{again, other})
	want.Revision, want.RecordedAt = 3, again.RecordedAt
	if ps, _ := s.HubPendings(ctx, "acme"); len(ps) != 2 || !reflect.DeepEqual(ps[0], want) || !ps[1].RejectedAt.IsZero() {
		t.Errorf("after a replace with the same version: %+v, want %+v first", ps, want)
	}

	// Another version: pending, and the rejection is gone for good.
	newer := hello
	newer.Version, newer.Revision = "1.2.0", 4
	s.ReplaceHubPendings(ctx, "acme", []HubPending{newer})
	if ps, _ := s.HubPendings(ctx, "acme"); len(ps) != 1 || ps[0].Version != "1.2.0" || !ps[0].RejectedAt.IsZero() {
		t.Errorf("after a replace with a newer version: %+v, want 1.2.0 pending", ps)
	}
	s.ReplaceHubPendings(ctx, "acme", []HubPending{hello})
	if ps, _ := s.HubPendings(ctx, "acme"); len(ps) != 1 || !ps[0].RejectedAt.IsZero() {
		t.Errorf("1.1.0 once more after 1.2.0: %+v, want it pending (the rejection was of a change no longer recorded)", ps)
	}
}

// TestHubPendingMigration: a change recorded before schema 11 waits for
// approval after the migration.
func TestHubPendingMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "station.db")
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = saved[:10]
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`INSERT INTO hub_pending (team, module, version, revision, from_version, escalations, recorded_at)
		VALUES ('acme', 'a/hello', '1.1.0', 2, '1.0.0', CAST('["e"]' AS BLOB), 1)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	migrations = saved
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps, err := s.HubPendings(context.Background(), "acme")
	if err != nil || len(ps) != 1 || ps[0].Version != "1.1.0" || !ps[0].RejectedAt.IsZero() {
		t.Fatalf("after the migration: %+v, %v; want 1.1.0 pending", ps, err)
	}
	if err := s.RejectHubPending(context.Background(), "acme", "a/hello", "1.1.0", time.Unix(5, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestPutHubPending: one held change per team and module; the same
// version keeps its rejection, another version waits afresh; delete
// forgets it, and an upgrade's row (UpgradeTeam) is no team's.
func TestPutHubPending(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	put := func(version string) {
		t.Helper()
		if err := s.PutHubPending(ctx, HubPending{Team: UpgradeTeam, Module: "dave/hello", Version: version, FromVersion: "1.0.0", Escalations: []string{"may now connect to x.example"}, RecordedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	get := func() []HubPending {
		t.Helper()
		ps, err := s.HubPendings(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	put("1.1.0")
	if err := s.RejectHubPending(ctx, UpgradeTeam, "dave/hello", "1.1.0", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	put("1.1.0")
	if ps := get(); len(ps) != 1 || ps[0].Team != UpgradeTeam || ps[0].RejectedAt.IsZero() {
		t.Errorf("the same version again: %+v, want it still rejected", ps)
	}
	put("1.2.0")
	if ps := get(); len(ps) != 1 || ps[0].Version != "1.2.0" || !ps[0].RejectedAt.IsZero() {
		t.Errorf("another version: %+v, want one row, waiting", ps)
	}
	if err := s.ReplaceHubPendings(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if ps := get(); len(ps) != 1 {
		t.Errorf("a team's sync touched the upgrade's row: %+v", ps)
	}
	if err := s.DeleteHubPending(ctx, UpgradeTeam, "dave/hello"); err != nil {
		t.Fatal(err)
	}
	if ps := get(); len(ps) != 0 {
		t.Errorf("after delete: %+v", ps)
	}
}
