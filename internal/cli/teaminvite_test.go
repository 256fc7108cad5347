package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
)

// TestTeamInvites: an owner lists the team's pending invites (never a
// code) and revokes one or all; a revoked code no longer joins; members,
// outsiders, a revoke twice and malformed arguments get clear errors.
func TestTeamInvites(t *testing.T) {
	h, hubLog := startHub(t)
	tr := &transcript{}
	homeA, homeB := t.TempDir(), t.TempDir()
	alice, bob := h.Account(t, "alice"), h.Account(t, "bob")
	login(t, tr, h, homeA, alice)
	login(t, tr, h, homeB, bob)
	tr.add(station(t, homeA, "", "team", "create", "acme")).want(t, 0)
	// Codes are printed once, on stdout, by design: not in the transcript.
	forBob := strings.TrimSpace(station(t, homeA, "", "team", "invite", "acme", "--account", "bob").want(t, 0).out)
	asOwner := strings.TrimSpace(station(t, homeA, "", "team", "invite", "acme", "--role", "owner").want(t, 0).out)

	r := tr.add(station(t, homeA, "", "team", "invites", "acme")).want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("team invites:\n%s", r.out)
	}
	row := regexp.MustCompile(`^([0-9a-f]{16})\s+(\S+)\s+(.+?)\s+alice\s+\S+\s+\S+$`)
	var ids []string
	for i, want := range [][2]string{{"member", "bob"}, {"owner", "anyone with the code"}} {
		m := row.FindStringSubmatch(lines[i+1])
		if m == nil || m[2] != want[0] || m[3] != want[1] {
			t.Fatalf("row %d = %q, want role %s for %s", i+1, lines[i+1], want[0], want[1])
		}
		ids = append(ids, m[1])
	}
	if !strings.Contains(r.err, "station team invite revoke acme ID") {
		t.Errorf("team invites does not say how to revoke: %s", r.err)
	}
	var listed []map[string]any
	r = tr.add(station(t, homeA, "", "team", "invites", "acme", "--json")).want(t, 0)
	if err := json.Unmarshal([]byte(r.out), &listed); err != nil || len(listed) != 2 || listed[0]["id"] != ids[0] || listed[0]["created_by"] != "alice" || listed[0]["account"] != "bob" {
		t.Fatalf("team invites --json = %s (%v)", r.out, err)
	}
	if _, ok := listed[0]["code"]; ok {
		t.Errorf("team invites --json has a code: %s", r.out)
	}

	// Bob is not a member: the team does not exist for him.
	r = tr.add(station(t, homeB, "", "team", "invites", "acme")).want(t, 1)
	if !strings.Contains(r.err, "team_not_found") {
		t.Errorf("an outsider lists: %s", r.err)
	}
	r = tr.add(station(t, homeB, "", "team", "invite", "revoke", "acme", ids[1])).want(t, 1)
	if !strings.Contains(r.err, "team_not_found") {
		t.Errorf("an outsider revokes: %s", r.err)
	}

	r = tr.add(station(t, homeA, "", "team", "invite", "revoke", "acme", ids[1])).want(t, 0)
	if want := "revoked invite " + ids[1] + " of team acme: owner, for anyone with the code, made by alice"; !strings.Contains(r.out, want) {
		t.Errorf("revoke: %s, want %q", r.out, want)
	}
	r = tr.add(station(t, homeA, "", "team", "invite", "revoke", "acme", ids[1])).want(t, 1)
	if !strings.Contains(r.err, "invite_not_found") || !strings.Contains(r.err, "station team invites acme lists the pending ones") {
		t.Errorf("revoke twice: %s", r.err)
	}
	r = tr.add(station(t, homeB, asOwner+"\n", "team", "join", "-")).want(t, 1)
	if !strings.Contains(r.err, "invite_invalid") {
		t.Errorf("join with a revoked code: %s", r.err)
	}

	// Usage errors, before any request.
	for _, args := range [][]string{
		{"team", "invite", "revoke", "acme"},
		{"team", "invite", "revoke", "acme", ids[0], "--all"},
		{"team", "invite", "revoke"},
		{"team", "invites"},
	} {
		r := tr.add(station(t, homeA, "", args...)).want(t, cli.ExitUsage)
		if !strings.Contains(r.err, "TEAM") {
			t.Errorf("%v: %s", args, r.err)
		}
	}
	r = tr.add(station(t, homeA, "", "team", "invite", "revoke", "acme", "not-an-id")).want(t, 1)
	if !strings.Contains(r.err, "16 hex digits") {
		t.Errorf("a malformed id: %s", r.err)
	}
	r = tr.add(station(t, homeA, "", "team", "invite", "revoke", "acme", forBob)).want(t, 1)
	if !strings.Contains(r.err, "not an invite id") || strings.Contains(r.err, forBob[len(hub.InvitePrefix):]) {
		t.Errorf("the code for an id: %s", r.err)
	}

	// Bob joins; as a member he may not see the invites.
	tr.add(station(t, homeB, forBob+"\n", "team", "join", "-")).want(t, 0)
	r = tr.add(station(t, homeB, "", "team", "invites", "acme")).want(t, 1)
	if !strings.Contains(r.err, "not_team_owner") || !strings.Contains(r.err, "only owners make, see and revoke invites") {
		t.Errorf("a member lists: %s", r.err)
	}

	// --all, and a team with nothing left.
	station(t, homeA, "", "team", "invite", "acme").want(t, 0)
	station(t, homeA, "", "team", "invite", "acme", "--account", "bob").want(t, 0)
	var revoked []hub.PendingInvite
	r = tr.add(station(t, homeA, "", "team", "invite", "revoke", "acme", "--all", "--json")).want(t, 0)
	if err := json.Unmarshal([]byte(r.out), &revoked); err != nil || len(revoked) != 2 {
		t.Errorf("revoke --all --json = %s (%v)", r.out, err)
	}
	r = tr.add(station(t, homeA, "", "team", "invites", "acme")).want(t, 0)
	if r.out != "" || !strings.Contains(r.err, "team acme has no pending invites") {
		t.Errorf("team invites after revoke --all: %q %q", r.out, r.err)
	}
	r = tr.add(station(t, homeA, "", "team", "invite", "revoke", "acme", "--all")).want(t, 0)
	if !strings.Contains(r.out, "nothing was revoked") {
		t.Errorf("revoke --all with nothing pending: %s", r.out)
	}

	// A team named "revoke" is still invited to, after "--".
	tr.add(station(t, homeA, "", "team", "create", "revoke")).want(t, 0)
	code := strings.TrimSpace(station(t, homeA, "", "team", "invite", "--", "revoke").want(t, 0).out)
	if !strings.HasPrefix(code, hub.InvitePrefix) {
		t.Errorf("team invite -- revoke printed %q", code)
	}
	noSecrets(t, tr, hubLog, []string{homeA, homeB}, alice, bob, forBob, asOwner, code)
}
