package hubserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
)

// storeConcurrency checks the rules of the Store contract that only
// concurrent writers can break: where one must win, exactly one does, and
// the event log comes out gapless in commit order to a reader polling it
// while writers append. storeContract runs it; it runs against every
// implementation.
func storeConcurrency(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	const n = 8
	digest := func(s string) string { return hub.Digest([]byte(s)) }
	version := func(id, v string) Version {
		return Version{Version: hub.Version{Module: id, Version: v, ManifestDigest: digest("m" + v), WasmDigest: digest("w" + v), WasmSize: 10, KeyID: "0000000000000001", PublishedAt: at}, Signature: "sig", Description: "d"}
	}
	setup := func(t *testing.T, accounts ...string) Store {
		st := open(t)
		for _, a := range append([]string{"dave", "erin", "mallory"}, accounts...) {
			if _, err := st.CreateAccount(ctx, a, at); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	// race runs f(i) for i in [0, n) at once and returns the errors.
	race := func(f func(i int) error) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = f(i)
			}()
		}
		close(start)
		wg.Wait()
		return errs
	}
	// oneWins checks that exactly one of errs is nil and every other is
	// want.
	oneWins := func(t *testing.T, what string, errs []error, want error) {
		t.Helper()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, want):
				t.Errorf("%s: %v, want nil or %v", what, err, want)
			}
		}
		if wins != 1 {
			t.Errorf("%s: %d succeeded, want exactly 1", what, wins)
		}
	}

	t.Run("concurrent publishes of one precedence: one wins", func(t *testing.T) {
		st := setup(t)
		errs := race(func(i int) error {
			v := "1.0.0"
			if i%2 == 1 {
				v = fmt.Sprintf("1.0.0+build%d", i) // equal precedence
			}
			_, err := st.Publish(ctx, version("dave/x", v))
			return err
		})
		oneWins(t, "Publish(1.0.0 and 1.0.0+build)", errs, ErrExists)
		if m, err := st.Module(ctx, "dave/x"); err != nil || len(m.Versions) != 1 {
			t.Errorf("Module = %d versions, %v; want 1", len(m.Versions), err)
		}
		if last, _ := st.LastSeq(ctx); last != 1 {
			t.Errorf("last seq %d, want 1 (one event for the one publish)", last)
		}
	})

	t.Run("concurrent accepts of one invite: one joins", func(t *testing.T) {
		var guests []string
		for i := range n {
			guests = append(guests, fmt.Sprintf("guest%d", i))
		}
		st := setup(t, guests...)
		st.CreateTeam(ctx, "acme", "dave", at)
		hash := sha256.Sum256([]byte("code"))
		if err := st.AddInvite(ctx, Invite{Hash: hash, ID: "0000000000000001", Team: "acme", Role: hub.RoleMember, CreatedBy: "dave", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		errs := race(func(i int) error {
			_, _, err := st.AcceptInvite(ctx, hash, guests[i], at)
			return err
		})
		oneWins(t, "AcceptInvite", errs, ErrInviteInvalid)
		if tm, _ := st.Team(ctx, "acme"); len(tm.Members) != 2 {
			t.Errorf("acme has %d members, want 2", len(tm.Members))
		}
	})

	t.Run("an accept racing its creator's demotion: never a member by a dead invite", func(t *testing.T) {
		for round := range 4 {
			st := setup(t)
			st.CreateTeam(ctx, "acme", "dave", at)
			hash := sha256.Sum256([]byte("code"))
			st.SetRole(ctx, "acme", "dave", hub.RoleOwner, "dave", at)
			// erin becomes an owner, invites mallory as an owner, and is
			// demoted by dave while mallory accepts.
			erinInv := sha256.Sum256([]byte("erin"))
			st.AddInvite(ctx, Invite{Hash: erinInv, ID: "0000000000000002", Team: "acme", Role: hub.RoleOwner, CreatedBy: "dave", CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
			if _, _, err := st.AcceptInvite(ctx, erinInv, "erin", at); err != nil {
				t.Fatal(err)
			}
			if err := st.AddInvite(ctx, Invite{Hash: hash, ID: "0000000000000001", Team: "acme", Role: hub.RoleOwner, CreatedBy: "erin", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			var acceptErr, demoteErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, _, acceptErr = st.AcceptInvite(ctx, hash, "mallory", at) }()
			go func() { defer wg.Done(); _, _, demoteErr = st.SetRole(ctx, "acme", "erin", hub.RoleMember, "dave", at) }()
			wg.Wait()
			if demoteErr != nil {
				t.Fatalf("round %d: SetRole = %v", round, demoteErr)
			}
			if acceptErr != nil && !errors.Is(acceptErr, ErrInviteInvalid) {
				t.Errorf("round %d: AcceptInvite = %v", round, acceptErr)
			}
			// Either mallory joined first (while erin was an owner) or
			// not at all; and the invite is gone either way.
			tm, _ := st.Team(ctx, "acme")
			joined := false
			for _, m := range tm.Members {
				joined = joined || m.Account == "mallory"
			}
			if joined != (acceptErr == nil) {
				t.Errorf("round %d: mallory joined %v, but AcceptInvite = %v", round, joined, acceptErr)
			}
			if _, _, err := st.AcceptInvite(ctx, hash, "mallory", at); !errors.Is(err, ErrInviteInvalid) && !errors.Is(err, ErrAlreadyMember) {
				t.Errorf("round %d: the invite of a demoted owner still works: %v", round, err)
			}
		}
	})

	t.Run("two owners leaving at once: the team keeps one", func(t *testing.T) {
		for round := range 4 {
			st := setup(t)
			st.CreateTeam(ctx, "acme", "dave", at)
			inv := sha256.Sum256([]byte("erin"))
			st.AddInvite(ctx, Invite{Hash: inv, ID: "0000000000000001", Team: "acme", Role: hub.RoleOwner, CreatedBy: "dave", CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
			if _, _, err := st.AcceptInvite(ctx, inv, "erin", at); err != nil {
				t.Fatal(err)
			}
			owners := []string{"dave", "erin"}
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, who := range owners {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i == 0 {
						_, errs[i] = st.RemoveMember(ctx, "acme", who, who, at) // leaves
					} else {
						_, _, errs[i] = st.SetRole(ctx, "acme", who, hub.RoleMember, who, at) // steps down
					}
				}()
			}
			wg.Wait()
			failed := 0
			for _, err := range errs {
				if err != nil {
					failed++
					if !errors.Is(err, ErrLastOwner) {
						t.Errorf("round %d: %v, want nil or ErrLastOwner", round, err)
					}
				}
			}
			tm, _ := st.Team(ctx, "acme")
			n := 0
			for _, m := range tm.Members {
				if m.Role == hub.RoleOwner {
					n++
				}
			}
			if n != 1 || failed != 1 {
				t.Errorf("round %d: %d owners left, %d refusals; want 1 and 1", round, n, failed)
			}
		}
	})

	t.Run("concurrent advisories and releases: gapless numbers, one release per precedence", func(t *testing.T) {
		st := setup(t)
		st.Publish(ctx, version("dave/x", "1.0.0"))
		st.SetAdmin(ctx, "mallory", true)
		errs := race(func(int) error {
			_, _, err := st.PublishAdvisory(ctx, hub.AdvisoryRequest{Target: "dave/x", Summary: "s", Details: "d",
				Severity: hub.Severity{Level: hub.SeverityLow}, Ranges: []hub.Range{{Introduced: "0"}}}, "dave", at)
			return err
		})
		for _, err := range errs {
			if err != nil {
				t.Fatalf("PublishAdvisory = %v", err)
			}
		}
		as, _ := st.Advisories(ctx, "dave/x")
		seen := map[string]bool{}
		for _, a := range as {
			seen[a.ID] = true
		}
		for i := 1; i <= n; i++ {
			if id := fmt.Sprintf("%s-2026-%04d", hub.AdvisoryPrefix, i); !seen[id] {
				t.Errorf("advisory %s is missing; have %v", id, seen)
			}
		}
		if len(as) != n {
			t.Errorf("%d advisories, want %d", len(as), n)
		}
		errs = race(func(i int) error {
			v := "2.0.0"
			if i%2 == 1 {
				v = "2.0.0+" + fmt.Sprint(i)
			}
			_, err := st.RecordRelease(ctx, v, "mallory", at)
			return err
		})
		oneWins(t, "RecordRelease", errs, ErrExists)
	})

	t.Run("reads while an admin's role flips: no error, only found or not", func(t *testing.T) {
		st := setup(t)
		st.Publish(ctx, version("dave/x", "1.0.0"))
		r, err := st.FileReport(ctx, hub.Report{ID: "R-aaaaaaaaaaaa", Target: "dave/x", Title: "t", Body: "b", Severity: hub.Severity{Level: hub.SeverityLow}, Reporter: "erin", CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 100 {
				if err := st.SetAdmin(ctx, "mallory", i%2 == 0); err != nil {
					t.Errorf("SetAdmin = %v", err)
					return
				}
			}
		}()
		var readErr error
	read:
		for readErr == nil {
			select {
			case <-done:
				break read
			default:
			}
			if _, err := st.Report(ctx, r.ID, "mallory"); err != nil && !errors.Is(err, ErrNotFound) {
				readErr = fmt.Errorf("Report as an admin being made and unmade = %w", err)
			} else if _, err := st.Credits(ctx, "erin"); err != nil {
				readErr = fmt.Errorf("Credits = %w", err)
			}
		}
		<-done // the writer is done with the store before it closes
		if readErr != nil {
			t.Fatal(readErr)
		}
	})

	t.Run("events reach a concurrent reader gapless, in commit order", func(t *testing.T) {
		st := setup(t)
		for i := range n {
			st.CreateTeam(ctx, fmt.Sprintf("team%d", i), "dave", at)
		}
		base, _ := st.LastSeq(ctx)
		const each = 20
		done := make(chan struct{})
		readErr := make(chan error, 1)
		seen := 0
		go func() {
			after := base
			for {
				// finished before the read: this read comes after every
				// writer returned, so an empty one is the end.
				finished := false
				select {
				case <-done:
					finished = true
				default:
				}
				evs, err := st.EventsAfter(ctx, after, 1000)
				if err != nil {
					readErr <- err
					return
				}
				for _, ev := range evs {
					if ev.Seq != after+1 {
						readErr <- fmt.Errorf("after event %d the reader saw %d: an event below it was not visible yet", after, ev.Seq)
						return
					}
					after = ev.Seq
					seen++
				}
				if finished && len(evs) == 0 {
					readErr <- nil
					return
				}
			}
		}()
		errs := race(func(i int) error {
			for j := range each {
				var err error
				if j%2 == 0 {
					_, _, err = st.PushLockfile(ctx, fmt.Sprintf("team%d", i), int64(j/2), hub.Lockfile{}, "dave", at)
				} else {
					_, err = st.Publish(ctx, version(fmt.Sprintf("dave/m%d", i), fmt.Sprintf("1.0.%d", j)))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		close(done)
		if err := <-readErr; err != nil {
			t.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		last, _ := st.LastSeq(ctx)
		if seen != n*each || last != base+n*each {
			t.Errorf("the reader saw %d events, last seq %d; want %d and %d", seen, last, n*each, base+n*each)
		}
	})
}
