package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/wasmbuild"
)

type result struct {
	code     int
	out, err string
}

// station runs the CLI with buffers, as main would with real streams.
func station(t *testing.T, home string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"STATION_HOME": home}
	code := cli.Run(context.Background(), args, cli.IO{Cache: testCache,
		In: strings.NewReader(stdin), Out: &out, Err: &errb,
		Getenv: func(k string) string { return env[k] },
	})
	return result{code, out.String(), errb.String()}
}

func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.out, r.err)
	}
	return r
}

// moduleDir builds the example in examples/name into a fresh directory with
// its module.yaml, as `station module build` would leave it.
func moduleDir(t *testing.T, name string) string {
	t.Helper()
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(root, "examples", name, "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "module.yaml"), raw, 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/"+name), 0o600)
	return dir
}

func TestUsage(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "station run station/hello greet"},
		{[]string{"run", "--help"}, 0, "3 sandbox violation"},
		{[]string{"run", "only-one"}, cli.ExitUsage, "needs 2 argument(s): ID COMMAND"},
		{[]string{"run", "a/b", "c", "--input", "{not json"}, cli.ExitUsage, "--input is not valid JSON"},
		{[]string{"run", "a/b", "c", "--bogus"}, cli.ExitUsage, "unknown flag: --bogus"},
		{[]string{"module", "install"}, cli.ExitUsage, "needs 1 argument(s): DIR"},
		{[]string{"run", "station/missing", "greet"}, cli.ExitError, "module station/missing is not installed"},
		{[]string{"module", "show", "station/missing"}, cli.ExitError, "not installed"},
		{[]string{"version"}, 0, "guest ABI 1"},
		{[]string{"module", "schema"}, 0, `"$schema"`},
		{[]string{"--version"}, 0, "guest ABI 1"},
		{[]string{"version", "--json"}, 0, `"guest_abi": 1`},
		{[]string{"module"}, 0, "Available Commands"},
		// A script must not think an unknown command worked.
		{[]string{"module", "frobnicate"}, cli.ExitUsage, `unknown command "frobnicate" for "station module"`},
		{[]string{"module", "instal", "x"}, cli.ExitUsage, `did you mean "install"?`},
		{[]string{"frobnicate"}, cli.ExitUsage, `unknown command "frobnicate" for "station"`},
		{[]string{"team", "stauts"}, cli.ExitUsage, `did you mean "status"?`},
		// A usage error points to the subcommand's own help.
		{[]string{"run", "only-one"}, cli.ExitUsage, "Run 'station run --help' for usage."},
		{[]string{"module", "install", "a", "b"}, cli.ExitUsage, "Run 'station module install --help' for usage."},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := station(t, home, "", c.args...).want(t, c.code)
			if got := r.out + r.err; !strings.Contains(got, c.want) {
				t.Errorf("output does not contain %q:\n%s", c.want, got)
			}
		})
	}
	// Commands that never open a station home do not offer its flags.
	for _, args := range [][]string{{"hub", "serve", "--help"}, {"hub", "user", "create", "--help"}, {"version", "--help"}, {"module", "build", "--help"}, {"module", "schema", "--help"}} {
		if r := station(t, home, "", args...).want(t, 0); strings.Contains(r.out, "--home") || strings.Contains(r.out, "--no-daemon") {
			t.Errorf("%v lists the station's flags:\n%s", args, r.out)
		}
	}
	for _, args := range [][]string{{"run", "--help"}, {"module", "list", "--help"}, {"workflow", "run", "--help"}} {
		if r := station(t, home, "", args...).want(t, 0); !strings.Contains(r.out, "--home") || !strings.Contains(r.out, "--no-daemon") {
			t.Errorf("%v does not list --home and --no-daemon:\n%s", args, r.out)
		}
	}
	// serve is the daemon: it has a home, and no daemon to skip.
	if r := station(t, home, "", "serve", "--help").want(t, 0); !strings.Contains(r.out, "      --home") || strings.Contains(r.out, "      --no-daemon") {
		t.Errorf("serve --help lists --no-daemon, or not --home:\n%s", r.out)
	}
	station(t, home, "", "serve", "--no-daemon").want(t, cli.ExitUsage)
}

func TestInputForms(t *testing.T) {
	home := t.TempDir()
	station(t, home, "", "module", "install", "--yes", moduleDir(t, "hello")).want(t, 0)
	file := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(file, []byte(`{"name":"File"}`), 0o600)
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"--input", `{"name":"Ada"}`}, "Hello, Ada!"},
		{"", []string{"--input", "@" + file}, "Hello, File!"},
		{`{"name":"Pipe"}`, []string{"--input", "-"}, "Hello, Pipe!"},
	} {
		r := station(t, home, c.stdin, append([]string{"run", "station/hello", "greet"}, c.args...)...).want(t, 0)
		if !strings.Contains(r.out, c.want) {
			t.Errorf("%v: got %q, want %q", c.args, r.out, c.want)
		}
	}
	r := station(t, home, "", "run", "station/hello", "greet", "--json", "--input", `{"name":"Ada"}`).want(t, 0)
	var res struct {
		Module, Command string
		Result          struct{ Greeting string }
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil || res.Module != "station/hello" || res.Command != "greet" || !strings.Contains(res.Result.Greeting, "Ada") {
		t.Errorf("run --json: %s (%v)", r.out, err)
	}
	r = station(t, home, "", "run", "station/hello", "greet").want(t, cli.ExitError)
	if !strings.Contains(r.err, "module station/hello: greet:") {
		t.Errorf("command error does not name the module and command: %q", r.err)
	}
	r = station(t, home, "", "run", "station/hello", "greet", "--input", `{"nmae":"typo"}`).want(t, cli.ExitError)
	if !strings.Contains(r.err, "nmae") {
		t.Errorf("unknown input field: %q does not name it", r.err)
	}
}

// The operator's whole path: install (with and without approval), list,
// show (where it came from), run, a denial with its exit code and message,
// audit, remove (which needs --yes without a terminal).
func TestOperatorFlow(t *testing.T) {
	home := t.TempDir()
	ca := fixture.NewCA(t)
	stripe := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"in_1","status":"draft","amount_due":100,"currency":"eur"}`)
	}), "api.stripe.com")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.stripe.com:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n", stripe.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	dir := moduleDir(t, "stripe-invoicing")

	// No terminal and no --yes: nothing is installed.
	r := station(t, home, "", "module", "install", dir).want(t, cli.ExitUsage)
	for _, want := range []string{"may connect to api.stripe.com (https, port 443)", "may not start programs", "rerun with --yes"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("install prompt does not contain %q:\n%s", want, r.err)
		}
	}
	station(t, home, "", "module", "show", "dave/stripe-invoicing").want(t, cli.ExitError)

	station(t, home, "", "module", "install", "--yes", dir).want(t, 0)
	var list []map[string]any
	if err := json.Unmarshal([]byte(station(t, home, "", "module", "list", "--json").want(t, 0).out), &list); err != nil || len(list) != 1 || list[0]["id"] != "dave/stripe-invoicing" {
		t.Fatalf("module list --json: %v %v", list, err)
	}
	r = station(t, home, "", "module", "show", "dave/stripe-invoicing").want(t, 0)
	for _, want := range []string{"sha256:", "create-invoice", "may connect to api.groq.com", "from       directory " + dir + "\n",
		"limits\n  memory 128 MiB, timeout 30s, 8 calls at once, warm instances, reused\n  input 16 MiB, output 16 MiB, host-call request 16 MiB, HTTP response 16 MiB\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("module show does not contain %q:\n%s", want, r.out)
		}
	}
	var shown struct{ Limits map[string]any }
	if err := json.Unmarshal([]byte(station(t, home, "", "module", "show", "--json", "dave/stripe-invoicing").want(t, 0).out), &shown); err != nil ||
		shown.Limits["memory_bytes"] != float64(128<<20) || shown.Limits["timeout"] != "30s" || shown.Limits["files"] != nil {
		t.Errorf("module show --json limits: %v (%v)", shown.Limits, err)
	}

	station(t, home, "sk_test_1", "secret", "set", "STRIPE_KEY", "--module", "dave/stripe-invoicing").want(t, 0)
	r = station(t, home, "", "run", "dave/stripe-invoicing", "create-invoice", "--input", `{"customer":"cus_1"}`).want(t, 0)
	if !strings.Contains(r.out, `"id": "in_1"`) {
		t.Errorf("create-invoice output: %s", r.out)
	}

	r = station(t, home, "", "run", "dave/stripe-invoicing", "fetch", "--input", `{"url":"https://evil.example/"}`).want(t, cli.ExitViolation)
	want := `station: sandbox violation: module dave/stripe-invoicing: network: "evil.example:443" is not in its allowlist (api.stripe.com, api.groq.com)`
	if got := strings.TrimSpace(r.err); !strings.HasPrefix(got, want) {
		t.Errorf("denial:\n got %s\nwant %s", got, want)
	}

	var recs []map[string]any
	if err := json.Unmarshal([]byte(station(t, home, "", "audit", "--denied", "--json").want(t, 0).out), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0]["module"] != "dave/stripe-invoicing" || recs[0]["command"] != "fetch" || recs[0]["target"] != "evil.example:443" || recs[0]["allowed"] != false {
		t.Errorf("audit --denied --json: %v", recs)
	}
	r = station(t, home, "", "audit", "--module", "dave/stripe-invoicing").want(t, 0)
	if !strings.Contains(r.out, "allow") || !strings.Contains(r.out, "DENY") {
		t.Errorf("audit table lacks allow and DENY rows:\n%s", r.out)
	}
	// The gates each load applied are on record in station.log.
	log, _ := os.ReadFile(filepath.Join(home, "station.log"))
	if !strings.Contains(string(log), "network gate active — allow: api.stripe.com, api.groq.com") ||
		!strings.Contains(string(log), "subprocess gate CLOSED") ||
		!strings.Contains(string(log), "filesystem-write gate active — allow: (none)") {
		t.Errorf("station.log does not record the gates:\n%s", log)
	}

	// Remove: without a terminal it needs --yes, and removes nothing.
	r = station(t, home, "", "module", "remove", "dave/stripe-invoicing").want(t, cli.ExitUsage)
	if !strings.Contains(r.err, "rerun with --yes") {
		t.Errorf("remove without --yes: %s", r.err)
	}
	station(t, home, "", "module", "show", "dave/stripe-invoicing").want(t, 0)
	station(t, home, "", "module", "remove", "--yes", "dave/stripe-invoicing").want(t, 0)
	station(t, home, "", "run", "dave/stripe-invoicing", "create-invoice").want(t, cli.ExitError)
}

// A module whose file changed after approval is refused.
func TestTamperedModuleRefused(t *testing.T) {
	home := t.TempDir()
	station(t, home, "", "module", "install", "--yes", moduleDir(t, "hello")).want(t, 0)
	matches, _ := filepath.Glob(filepath.Join(home, "modules", "station", "hello", "*.wasm"))
	if len(matches) != 1 {
		t.Fatalf("installed wasm: %v", matches)
	}
	os.Chmod(matches[0], 0o600)
	f, _ := os.OpenFile(matches[0], os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0})
	f.Close()
	r := station(t, home, "", "run", "station/hello", "greet").want(t, cli.ExitError)
	if !strings.Contains(r.err, "refusing to run it") {
		t.Errorf("tampered module: %s", r.err)
	}
}

// testCache is the compilation cache every station these tests open
// shares, on disk with every package's tests (wasmbuild.CacheForTest): a
// module is compiled once, not once per home or per test binary (the probe
// takes about a minute to compile under the race detector).
var testCache = wasmbuild.CacheForTest()
