package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli"
)

// TestDisclosureLifeCycle is the whole loop, on loopback, as its four
// people run it: rita reports a flaw in dave/hello, which erin runs and
// frank is about to install; oscar, a stranger, cannot see the report;
// dave confirms it with +5 credits and an advisory, publishes the fix and
// marks the report fixed in it. Erin's station sees the advisory in
// station advisories (exit 3), is warned when it runs the module, and is
// clear after the upgrade; frank's, whose advisories.block is high, refuses
// to install the affected version unless he overrides it.
func TestDisclosureLifeCycle(t *testing.T) {
	h, _ := startHub(t)
	tr := &transcript{}
	home := func(token string) string {
		t.Helper()
		dir := t.TempDir()
		login(t, tr, h, dir, token)
		return dir
	}
	dave := home(h.Account(t, "dave"))
	rita := home(h.Account(t, "rita"))
	erin := home(h.Account(t, "erin"))
	frank := home(h.Account(t, "frank"))
	oscar := home(h.Account(t, "oscar"))
	if err := os.WriteFile(filepath.Join(frank, "config.yaml"), []byte("advisories:\n  block: high\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(home string, code int, args ...string) result {
		t.Helper()
		return tr.add(station(t, home, "", args...)).want(t, code)
	}
	greet := func(home string) result {
		t.Helper()
		r := run(home, 0, "run", "dave/hello", "greet", "--input", `{"name":"Ada"}`)
		if !strings.Contains(r.out, "Hello, Ada!") {
			t.Fatalf("greet: %s", r.out)
		}
		return r
	}

	run(dave, 0, "hub", "key", "create")
	run(dave, 0, "module", "publish", moduleAs(t, "hello", "dave/hello", "1.0.0"))
	run(erin, 0, "module", "install", "--yes", "dave/hello@1.0.0")
	greet(erin)

	// Rita files the report, privately.
	body := filepath.Join(t.TempDir(), "report.md")
	os.WriteFile(body, []byte("# Relay I/O\n\nThe Teams relay client inherits a loaded module's network allowlist.\n"), 0o600)
	repro := filepath.Join(t.TempDir(), "repro.sh")
	os.WriteFile(repro, []byte("station run dave/hello greet --input '{}'\n"), 0o600)
	var filed struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	r := run(rita, 0, "report", "file", "--target", "dave/hello", "--title", "Teams relay I/O inherits a loaded module's network allowlist",
		"--body-file", body, "--reproduction-file", repro, "--severity", "high", "--cwe", "CWE-668", "--json")
	if err := json.Unmarshal([]byte(r.out), &filed); err != nil || filed.ID == "" || filed.State != "new" {
		t.Fatalf("report file --json: %v\n%s", err, r.out)
	}

	// Oscar cannot read it, nor tell it from a report that does not exist.
	stranger := tr.add(station(t, oscar, "", "report", "show", filed.ID))
	nobody := tr.add(station(t, oscar, "", "report", "show", "R-aaaaaaaaaaaa"))
	if stranger.code == 0 || stranger.code != nobody.code || strings.ReplaceAll(stranger.err, filed.ID, "ID") != strings.ReplaceAll(nobody.err, "R-aaaaaaaaaaaa", "ID") {
		t.Errorf("a stranger tells a private report from none:\n%d %s\n%d %s", stranger.code, stranger.err, nobody.code, nobody.err)
	}
	if r := run(oscar, 0, "report", "list", "--json"); strings.Contains(r.out, filed.ID) {
		t.Errorf("a stranger lists the private report: %s", r.out)
	}
	// Nor can he triage it; and a fix in a version that does not exist
	// changes nothing.
	if r := tr.add(station(t, oscar, "", "report", "triage", filed.ID, "--state", "confirmed")); r.code == 0 {
		t.Errorf("a stranger triaged the report: %s", r.out)
	}
	if r := tr.add(station(t, dave, "", "report", "triage", filed.ID, "--state", "fixed", "--fixed-in", "9.9.9")); r.code == 0 {
		t.Errorf("fixed out of order, in a version that does not exist: %s", r.out)
	}
	if r := tr.add(station(t, dave, "", "report", "triage", filed.ID, "--award", "5", "--reason", "too early")); r.code == 0 {
		t.Errorf("credits on an unconfirmed report: %s", r.out)
	}
	state := func() (string, int64, string) {
		t.Helper()
		var rep struct {
			State    string `json:"state"`
			Credits  int64  `json:"credits"`
			Advisory string `json:"advisory"`
			FixedIn  string `json:"fixed_in"`
		}
		json.Unmarshal([]byte(run(rita, 0, "report", "show", filed.ID, "--json").out), &rep)
		return rep.State, rep.Credits, rep.Advisory + "/" + rep.FixedIn
	}
	if s, c, _ := state(); s != "new" || c != 0 {
		t.Fatalf("after refused changes the report is %s with %d credits", s, c)
	}

	// Dave confirms it, awards +5 and publishes an advisory.
	run(dave, 0, "report", "triage", filed.ID, "--state", "confirmed", "--comment", "Reproduced.", "--award", "5", "--reason", "relay isolation bug", "--advisory")
	s, c, adv := state()
	advisory := strings.TrimSuffix(adv, "/")
	if s != "confirmed" || c != 5 || !strings.HasPrefix(advisory, "STATION-") {
		t.Fatalf("after confirming: state %s, credits %d, advisory %q", s, c, advisory)
	}
	run(rita, 0, "report", "comment", filed.ID, "--body", "Thanks!")

	// Erin's station sees it, and runs the module with a warning.
	r = run(erin, cli.ExitViolation, "advisories")
	for _, want := range []string{"dave/hello", "1.0.0", advisory, "high"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("station advisories does not show %q:\n%s", want, r.out)
		}
	}
	var report struct {
		Modules []struct {
			Module     string `json:"module"`
			Version    string `json:"version"`
			Advisories []struct {
				ID string `json:"id"`
			} `json:"advisories"`
		} `json:"modules"`
	}
	r = run(erin, cli.ExitViolation, "advisories", "--json")
	if err := json.Unmarshal([]byte(r.out), &report); err != nil {
		t.Fatalf("advisories --json: %v\n%s", err, r.out)
	}
	found := false
	for _, m := range report.Modules {
		for _, a := range m.Advisories {
			found = found || m.Module == "dave/hello" && m.Version == "1.0.0" && a.ID == advisory
		}
	}
	if !found {
		t.Errorf("advisories --json does not list %s against dave/hello@1.0.0:\n%s", advisory, r.out)
	}
	if r := greet(erin); !strings.Contains(r.err, advisory) {
		t.Errorf("running an affected module does not warn:\n%s", r.err)
	}

	// Frank's threshold is high: the install is refused, unless he
	// overrides it.
	r = run(frank, cli.ExitViolation, "module", "install", "--yes", "dave/hello@1.0.0")
	if !strings.Contains(r.err, advisory) || !strings.Contains(r.err, "--allow-advisory") {
		t.Errorf("install of an affected version at the threshold:\n%s", r.err)
	}
	if r := run(frank, 0, "module", "list", "--json"); strings.Contains(r.out, "dave/hello") {
		t.Errorf("the refused version is installed: %s", r.out)
	}

	// The fix: published, the report fixed in it, the advisory says so.
	run(dave, 0, "module", "publish", moduleAs(t, "hello", "dave/hello", "1.1.0"))
	run(dave, 0, "report", "triage", filed.ID, "--state", "fixed", "--fixed-in", "1.1.0", "--publish")
	if s, _, adv := state(); s != "fixed" || adv != advisory+"/1.1.0" {
		t.Fatalf("after fixing: state %s, advisory/fixed-in %s", s, adv)
	}
	if r := run(oscar, 0, "report", "show", filed.ID); !strings.Contains(r.out, "fixed") {
		t.Errorf("the published report:\n%s", r.out)
	}
	run(frank, 0, "module", "install", "--yes", "dave/hello@1.1.0")

	// Erin upgrades: clear.
	r = run(erin, 0, "module", "upgrade", "--yes", "dave/hello")
	if !strings.Contains(r.out, "1.1.0") {
		t.Errorf("upgrade: %s", r.out)
	}
	run(erin, 0, "advisories")
	if r := greet(erin); strings.Contains(r.err, advisory) {
		t.Errorf("the fixed version still warns:\n%s", r.err)
	}

	// Credit where it is due.
	if r := run(oscar, 0, "report", "credits", "rita"); !strings.Contains(r.out, "5") {
		t.Errorf("rita's credits:\n%s", r.out)
	}
	if r := run(oscar, 0, "report", "fame"); !strings.Contains(r.out, "rita") {
		t.Errorf("hall of fame:\n%s", r.out)
	}
}
