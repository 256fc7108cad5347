package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/store"
)

// TestAdvisoriesCommand: on a real hub, dave publishes dave/hello and then
// a critical advisory against 1.0.0 with station advisories publish;
// erin's station, which installed 1.0.0, lists it (table, --json, exit 3),
// refuses to run it (exit 3, saying what to do), records an allowance
// (refusing an unknown id, a version it does not affect and a malformed
// MODULE@VERSION), then runs it with one warning; --offline asks no hub.
func TestAdvisoriesCommand(t *testing.T) {
	h, _ := startHub(t)
	tr := &transcript{}
	dave, erin := t.TempDir(), t.TempDir()
	login(t, tr, h, dave, h.Account(t, "dave"))
	login(t, tr, h, erin, h.Account(t, "erin"))
	tr.add(station(t, dave, "", "hub", "key", "create")).want(t, 0)
	for _, v := range []string{"1.0.0", "1.0.1"} {
		tr.add(station(t, dave, "", "module", "publish", moduleAs(t, "hello", "dave/hello", v))).want(t, 0)
	}
	tr.add(station(t, erin, "", "module", "install", "--yes", "dave/hello@1.0.0")).want(t, 0)
	greet := func(code int) result {
		t.Helper()
		return tr.add(station(t, erin, "", "run", "dave/hello", "greet", "--input", `{"name":"Ada"}`)).want(t, code)
	}
	greet(0)
	if r := tr.add(station(t, erin, "", "advisories")).want(t, 0); !strings.Contains(r.out, "no installed module version is affected") || !strings.Contains(r.out, "(1 module(s) checked; advisories of "+h.URL) {
		t.Errorf("advisories before any:\n%s", r.out)
	}

	// Dave publishes one; the details come from standard input.
	r := tr.add(station(t, dave, "The greeting is logged.\n", "advisories", "publish", "--target", "dave/hello", "--introduced", "0", "--fixed", "1.0.1",
		"--severity", "critical", "--summary", "greet logs the name", "--details-file", "-", "--json")).want(t, 0)
	var published hub.OSV
	if err := json.Unmarshal([]byte(r.out), &published); err != nil || !hub.ValidAdvisoryID(published.ID) || published.Details != "The greeting is logged.\n" {
		t.Fatalf("publish --json: %+v, %v\n%s", published, err, r.out)
	}
	id := published.ID

	r = tr.add(station(t, erin, "", "advisories")).want(t, cli.ExitViolation)
	for _, want := range []string{"MODULE", "FIXED IN", "dave/hello", "1.0.0", id, "critical", "1.0.1", "BLOCKED", id + ": greet logs the name",
		"station advisories allow " + id + " dave/hello@1.0.0 --reason TEXT"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the table does not show %q:\n%s", want, r.out)
		}
	}
	if !strings.Contains(r.err, "1 installed version(s) affected by advisories or yanked, 1 of them blocked") {
		t.Errorf("stderr: %s", r.err)
	}
	r = tr.add(station(t, erin, "", "advisories", "--json", "--offline")).want(t, cli.ExitViolation)
	var res struct {
		Hub       string `json:"hub"`
		SyncedAt  string `json:"synced_at"`
		Refreshed bool   `json:"refreshed"`
		Affected  bool   `json:"affected"`
		Modules   []struct {
			Module, Version, Origin, Status string
			Advisories                      []struct {
				ID       string `json:"id"`
				Severity string `json:"severity"`
				FixedIn  string `json:"fixed_in"`
				Status   string `json:"status"`
				Allowed  bool   `json:"allowed"`
			} `json:"advisories"`
		} `json:"modules"`
		Station struct {
			Module, Status, Note string
		} `json:"station"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.out)
	}
	if res.Hub != h.URL || res.SyncedAt == "" || res.Refreshed || !res.Affected || len(res.Modules) != 1 || res.Station.Module != hub.Product {
		t.Errorf("--json --offline: %+v", res)
	} else if m := res.Modules[0]; m.Module != "dave/hello" || m.Origin != "hub" || m.Status != "blocked" || len(m.Advisories) != 1 ||
		m.Advisories[0].ID != id || m.Advisories[0].FixedIn != "1.0.1" || m.Advisories[0].Status != "blocked" || m.Advisories[0].Allowed {
		t.Errorf("--json module: %+v", m)
	}
	if res.Station.Status != "unknown" || !strings.Contains(res.Station.Note, "unknown") {
		t.Errorf("a test binary's station version is not a release, and must not be guessed: %+v", res.Station)
	}
	if strings.Contains(r.out, "FixedIn") || strings.Contains(r.out, "fixedIn") {
		t.Errorf("--json keys are not snake_case:\n%s", r.out)
	}

	r = greet(cli.ExitViolation)
	for _, want := range []string{id, "critical", "upgrade to 1.0.1", "station advisories allow " + id + " dave/hello@1.0.0"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("the refused run does not say %q:\n%s", want, r.err)
		}
	}
	if r := tr.add(station(t, erin, "", "audit", "--denied", "--json")).want(t, 0); !strings.Contains(r.out, `"capability": "advisory"`) || !strings.Contains(r.out, `"target": "`+id+`"`) {
		t.Errorf("the refusal is not in the audit log:\n%s", r.out)
	}

	// Bad input.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"advisories", "allow", "STATION-2026-9999", "dave/hello@1.0.0", "--reason", "r"}, cli.ExitError, "knows no advisory STATION-2026-9999"},
		{[]string{"advisories", "allow", id, "dave/hello@1.0.1", "--reason", "r"}, cli.ExitError, "does not affect dave/hello@1.0.1"},
		{[]string{"advisories", "allow", id, "dave/hello", "--reason", "r"}, cli.ExitUsage, "is not MODULE@VERSION"},
		{[]string{"advisories", "allow", id, "dave/hello@1.0.0"}, cli.ExitUsage, "--reason is required"},
		{[]string{"advisories", "allow", "not-an-id", "dave/hello@1.0.0", "--reason", "r"}, cli.ExitUsage, "is not an advisory id"},
		{[]string{"advisories", "show", "STATION-2026-9999", "--offline"}, cli.ExitError, "knows no advisory STATION-2026-9999"},
		{[]string{"advisories", "show", "STATION-2026-9999"}, cli.ExitError, "advisory_not_found"},
		{[]string{"advisories", "withdraw", id, "--reason", "mine to withdraw?"}, cli.ExitError, ""},
	} {
		r := tr.add(station(t, erin, "", c.args...)).want(t, c.code)
		if !strings.Contains(r.err, c.want) {
			t.Errorf("%q: stderr does not say %q:\n%s", c.args, c.want, r.err)
		}
	}

	if r := tr.add(station(t, erin, "", "advisories", "show", id)).want(t, 0); !strings.Contains(r.out, "dave/hello: < 1.0.1 (fixed in 1.0.1)") || !strings.Contains(r.out, "The greeting is logged.") {
		t.Errorf("show:\n%s", r.out)
	}
	tr.add(station(t, erin, "", "advisories", "allow", id, "dave/hello@1.0.0", "--reason", "names are public here")).want(t, 0)
	if r := greet(0); strings.Count(r.err, "is affected by advisory "+id) != 1 || !strings.Contains(r.err, "names are public here") {
		t.Errorf("the allowed run does not warn once:\n%s", r.err)
	}
	r = tr.add(station(t, erin, "", "advisories", "--offline")).want(t, cli.ExitViolation)
	if !strings.Contains(r.out, "allowed") || strings.Contains(r.out, "BLOCKED") {
		t.Errorf("after the allowance:\n%s", r.out)
	}
	if strings.Contains(r.err, "not logged in") || strings.Contains(r.err, "could not read") {
		t.Errorf("--offline spoke of the hub: %s", r.err)
	}
	// Withdrawn, it is refused again; allowed again, it runs.
	tr.add(station(t, erin, "", "advisories", "allow", id, "dave/hello@1.0.0", "--revoke")).want(t, 0)
	if r := tr.add(station(t, erin, "", "run", "dave/hello", "greet", "--input", `{"name":"Ada"}`)).want(t, cli.ExitViolation); !strings.Contains(r.err, id) {
		t.Errorf("the run after the allowance was withdrawn:\n%s", r.err)
	}
	if r := tr.add(station(t, erin, "", "advisories", "allow", id, "dave/hello@1.0.0", "--revoke")).want(t, cli.ExitError); !strings.Contains(r.err, "is not allowed for dave/hello@1.0.0") {
		t.Errorf("withdrawing an allowance twice:\n%s", r.err)
	}
	tr.add(station(t, erin, "", "advisories", "allow", id, "dave/hello@1.0.0", "--reason", "names are public here")).want(t, 0)

	// The upgrade to the fixed version clears it.
	tr.add(station(t, erin, "", "module", "upgrade", "dave/hello")).want(t, 0)
	tr.add(station(t, erin, "", "advisories")).want(t, 0)
}

// TestAdvisoriesHostileAndUnreachable: what a hub's advisories say is
// printed escaped by the table and by show; a hub that cannot be reached
// is said on stderr with how old the stored advisories are, and the stored
// ones are listed.
func TestAdvisoriesHostileAndUnreachable(t *testing.T) {
	h, _ := startHub(t)
	tr := &transcript{}
	dave, erin := t.TempDir(), t.TempDir()
	login(t, tr, h, dave, h.Account(t, "dave"))
	login(t, tr, h, erin, h.Account(t, "erin"))
	tr.add(station(t, dave, "", "hub", "key", "create")).want(t, 0)
	tr.add(station(t, dave, "", "module", "publish", moduleAs(t, "hello", "dave/hello", "1.0.0"))).want(t, 0)
	tr.add(station(t, erin, "", "module", "install", "--yes", "dave/hello@1.0.0")).want(t, 0)

	// What a hostile hub's feed would have brought, as the station stores
	// it.
	ctx := context.Background()
	st, err := store.Open(filepath.Join(erin, "station.db"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.HubLogin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	evil := hub.OSV{SchemaVersion: hub.OSVSchemaVersion, ID: "STATION-2099-0001", Modified: hub.OSVTime{Time: now}, Published: hub.OSVTime{Time: now},
		Summary: clitest.Hostile, Details: clitest.Hostile, Aliases: []string{clitest.Hostile},
		Affected: []hub.OSVAffect{{Package: hub.OSVPackage{Ecosystem: hub.Ecosystem, Name: "dave/hello"},
			Ranges: []hub.OSVRange{{Type: "SEMVER", Events: []hub.OSVEvent{{Introduced: "0"}}}}}},
		References: []hub.OSVRef{{Type: clitest.Hostile, URL: clitest.Hostile}}, Database: &hub.OSVDatabase{Severity: "HIGH"}}
	err = st.PutAdvisories(ctx, l.URL, []hub.OSV{evil}, []hub.Yank{{Module: "dave/hello", Version: "1.0.0", Yanked: true, Reason: clitest.Hostile, Time: now}}, 0)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := tr.add(station(t, erin, "", "advisories", "--offline")).want(t, cli.ExitViolation)
	clitest.CheckPrinted(t, "station advisories", r.out+r.err)
	if !strings.Contains(r.out, "yanked") || !strings.Contains(r.out, "STATION-2099-0001") {
		t.Errorf("the table:\n%s", r.out)
	}
	r = tr.add(station(t, erin, "", "advisories", "show", "STATION-2099-0001")).want(t, 0)
	clitest.CheckPrinted(t, "station advisories show", r.out+r.err)
	r = tr.add(station(t, erin, "", "run", "dave/hello", "greet", "--input", `{"name":"Ada"}`)).want(t, 0)
	clitest.CheckPrinted(t, "the run's warnings", r.err)
	r = tr.add(station(t, erin, "", "advisories", "--json", "--offline")).want(t, cli.ExitViolation)
	if c := clitest.RawControl(r.out); c != "" || !json.Valid([]byte(r.out)) {
		t.Errorf("--json: %s reaches the terminal, or it is not JSON:\n%q", c, r.out)
	}

	// A hub that answered at login and is gone now.
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(hub.Account{Name: "frank"})
	}))
	frank := t.TempDir()
	tr.add(station(t, frank, "sth_frank\n", "hub", "login", "--url", gone.URL, "--token-stdin")).want(t, 0)
	gone.Close()
	r = tr.add(station(t, frank, "", "advisories")).want(t, 0)
	if !strings.Contains(r.err, "could not read the advisories of "+gone.URL) || !strings.Contains(r.err, "it has never read them") {
		t.Errorf("an unreachable hub is not said:\n%s", r.err)
	}
	r = tr.add(station(t, frank, "", "advisories", "--json")).want(t, 0)
	var res struct {
		Refreshed    bool   `json:"refreshed"`
		RefreshError string `json:"refresh_error"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil || res.Refreshed || res.RefreshError == "" {
		t.Errorf("--json of an unreachable hub: %+v, %v", res, err)
	}
	if r := tr.add(station(t, frank, "", "advisories", "--offline")).want(t, 0); r.err != "" {
		t.Errorf("--offline still asked the hub: %s", r.err)
	}
}
