package store

import (
	"context"
	"errors"
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
	s.PutHubKey(ctx, HubKey{Owner: "dave", KeyID: "K1", PublicKey: "RW...", PinnedAt: at})
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
	keys, _ := s.HubKeys(ctx, "dave")
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
