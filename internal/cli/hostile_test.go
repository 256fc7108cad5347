package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/probe"
)

// hostileText is what a hostile hub or module puts in every string it
// supplies (clitest.Hostile).
const hostileText = clitest.Hostile

// terminalSafe fails if out holds a character a terminal would act on, or a
// line that starts with the hostile text's pretend station line. Unlike
// clitest.CheckPrinted it does not ask for the hostile text to be shown:
// not every command prints every string the hub sent.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if c := clitest.RawControl(out); c != "" {
		t.Errorf("%s: %s reaches the terminal:\n%q", what, c, out)
	}
	if clitest.Forged(out) {
		t.Errorf("%s: a line of the hostile text stands on its own:\n%s", what, out)
	}
}

// hostileHub answers every request as a hostile hub would: every string of
// every answer is hostileText, and every other request gets a hub error
// whose name and message are hostileText.
func hostileHub(t *testing.T) *httptest.Server {
	h := hostileText
	answers := map[string]any{
		"GET /whoami":              hub.Account{Name: h},
		"GET /modules":             hub.SearchResponse{Modules: []hub.Module{{ID: h, Owner: h, Description: h, Latest: h}, {ID: h, Description: h}}, Next: 20},
		"POST /keys":               hub.Key{ID: h, Account: h, PublicKey: h},
		"POST /modules":            hub.Version{Module: h, Version: h, ManifestDigest: h, WasmDigest: h, KeyID: h, YankReason: h},
		"POST /teams":              hub.Team{Name: h, Role: h},
		"GET /teams":               []hub.Team{{Name: h, Role: h}},
		"POST /teams/acme/invites": hub.Invite{ID: h, Team: h, Code: h, Role: h, Account: h},
		"POST /invites/accept":     hub.Team{Name: h, Role: h},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if a, ok := answers[r.Method+" "+strings.TrimPrefix(r.URL.Path, hub.PathPrefix)]; ok {
			json.NewEncoder(w).Encode(a)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(hub.ErrorResponse{Error: &hub.Error{Code: hub.CodeBadRequest, Name: h, Message: h}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHostileTextReachesNoTerminal runs every command that prints what a
// hub, a module or a workflow file supplies, against a hub and modules
// whose every string carries control sequences, and checks that none
// reaches standard output or standard error raw, and that --json output is
// still JSON.
func TestHostileTextReachesNoTerminal(t *testing.T) {
	h := hostileText
	home := t.TempDir()
	env := map[string]string{"STATION_HOME": home, "STATION_NO_DAEMON": "1"}
	// run runs a command and checks its exit code (any, for -1) and what
	// it printed.
	run := func(code int, stdin string, args ...string) result {
		t.Helper()
		var r result
		if stdin != "" {
			r = station(t, home, stdin, args...)
		} else {
			r = stationEnv(t, env, args...)
		}
		if code >= 0 {
			r.want(t, code)
		}
		terminalSafe(t, strings.Join(args, " ")+" (stdout)", r.out)
		terminalSafe(t, strings.Join(args, " ")+" (stderr)", r.err)
		if strings.Contains(strings.Join(args, " "), "--json") {
			dec := json.NewDecoder(strings.NewReader(r.out))
			for dec.More() {
				var v any
				if err := dec.Decode(&v); err != nil {
					t.Errorf("%v: stdout is not JSON: %v\n%s", args, err, r.out)
					break
				}
			}
		}
		return r
	}
	// shown checks that a command did print the hostile text (escaped):
	// the field was on its way to the terminal.
	shown := func(r result) {
		t.Helper()
		if !strings.Contains(r.out+r.err, "logged in as root") {
			t.Errorf("the hostile text is not shown:\nstdout: %s\nstderr: %s", r.out, r.err)
		}
	}

	// A module: its manifest may carry newlines and tabs in its
	// descriptions (the validator refuses every other control character).
	hello := moduleDir(t, "hello")
	raw, _ := os.ReadFile(filepath.Join(hello, "module.yaml"))
	raw = []byte(strings.Replace(string(raw), "description: Greets", `description: "Greets\n\tstation: logged in as root\n"`+"\n#", 1))
	os.WriteFile(filepath.Join(hello, "module.yaml"), raw, 0o600)
	shown(run(0, "", "module", "install", "--yes", hello))
	shown(run(0, "", "module", "show", "station/hello"))
	run(0, "", "module", "show", "station/hello", "--json")
	run(0, "", "module", "list")

	// Its results, errors, log lines and prints.
	in, _ := json.Marshal(map[string]string{"name": h})
	shown(run(0, "", "run", "station/hello", "greet", "--input", string(in)))
	shown(run(0, "", "run", "station/hello", "greet", "--compact", "--input", string(in)))
	probeDir := t.TempDir()
	os.WriteFile(filepath.Join(probeDir, "module.yaml"), []byte("id: test/probe\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\nrequires: {network: {allow: []}, filesystem_reads: [\""+probeDir+"/**\"]}\n"), 0o600)
	os.WriteFile(filepath.Join(probeDir, "module.wasm"), probe.Wasm(t, probe.NoNetworkTag), 0o600)
	run(0, "", "module", "install", "--yes", probeDir)
	shown(run(cli.ExitViolation, "", "-v", "run", "test/probe", "run", "--input", string(probe.Run(probe.Log(h), probe.Print("stdout", h), probe.Print("stderr", h), probe.Read("/"+h), probe.Panic(h)))))

	// A workflow file and the runs it makes.
	// The file itself may hold no control character, and names are one
	// line of plain text; its strings carry them as escapes.
	panicIn, _ := json.Marshal(probe.Input{Actions: []probe.Action{probe.Panic(h)}})
	var ascii strings.Builder
	for _, r := range string(panicIn) {
		if r < 0x7f {
			ascii.WriteRune(r)
		} else {
			fmt.Fprintf(&ascii, `\u%04x`, r)
		}
	}
	wf := filepath.Join(t.TempDir(), "hostile.yaml")
	src := fmt.Sprintf(`name: hostile
inputs:
  who: {required: true}
steps:
  - id: greet
    uses: station/hello greet
    with: {name: "${{ inputs.who }}"}
  - id: boom
    uses: test/probe run
    continue_on_error: true
    with: %s
output:
  greeting: ${{ steps.greet.output.greeting }}
`, ascii.String())
	os.WriteFile(wf, []byte(src), 0o600)
	run(0, "", "workflow", "check", wf)
	run(0, "", "workflow", "check", wf, "--json")
	shown(run(0, "", "workflow", "run", wf, "--input", "who="+h))
	run(0, "", "workflow", "run", wf, "--json", "--input", "who="+h)
	run(0, "", "workflow", "runs")
	run(0, "", "workflow", "runs", "--json")
	shown(run(0, "", "workflow", "show", "1"))
	run(0, "", "workflow", "show", "1", "--json")
	shown(run(0, "", "audit"))
	run(0, "", "audit", "--json")

	// A hub. The station refuses some of its answers (a team name that is
	// not one); whatever it does, what it prints is checked.
	hubURL := hostileHub(t).URL
	shown(run(0, hub.TokenPrefix+"hostile\n", "hub", "login", "--url", hubURL, "--token-stdin"))
	shown(run(-1, "", "hub", "whoami"))
	run(-1, "", "hub", "whoami", "--json")
	shown(run(-1, "", "module", "search"))
	run(-1, "", "module", "search", "--json")
	shown(run(-1, "", "hub", "key", "create"))
	shown(run(-1, "", "module", "publish", hello))
	run(-1, "", "module", "publish", hello, "--json")
	shown(run(-1, "", "module", "install", "dave/x@1.0.0"))
	run(-1, "", "module", "install", "--yes", "dave/x@1.0.0")
	run(-1, "", "team", "create", "acme")
	shown(run(-1, "", "team", "invite", "acme"))
	shown(run(-1, "", "team", "join", "code"))
	run(-1, "", "team", "sync")
	run(-1, "", "team", "status")
	run(-1, "", "team", "status", "--json")
	shown(run(-1, "", "team", "push", "acme"))
	run(-1, "", "team", "leave", "acme")
	run(0, "", "hub", "logout")
}
