package cmdutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

func TestCheckJSONNames(t *testing.T) {
	type inner struct {
		OK  string `json:"ok_name"`
		Bad string // no tag: encoded as "Bad"
	}
	type embedded struct {
		Also string `json:"also"`
	}
	type good struct {
		embedded
		Name    string            `json:"name"`
		When    time.Time         `json:"when"`   // a Marshaler: not walked
		Raw     json.RawMessage   `json:"raw"`    // data
		Labels  map[string]string `json:"labels"` // map keys are data
		Skipped string            `json:"-"`      // not encoded
		private string            // not encoded
		List    []struct {
			V2Thing int `json:"v2_thing,omitempty"`
		} `json:"list"`
	}
	if err := CheckJSONNames(good{private: "not encoded"}); err != nil {
		t.Errorf("good: %v", err)
	}
	if err := CheckJSONNames([]*good{}); err != nil {
		t.Errorf("[]*good: %v", err)
	}
	type bad struct {
		HubURL string `json:"hubURL"`
		Inner  map[string][]inner
	}
	err := CheckJSONNames(bad{})
	if err == nil {
		t.Fatal("bad: no error")
	}
	for _, want := range []string{".hubURL", ".Inner", ".Inner.Bad"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ok_name") {
		t.Errorf("the error names a good key: %v", err)
	}
	// WriteJSON refuses it in a test binary, and writes nothing.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, bad{}); err == nil || buf.Len() > 0 {
		t.Errorf("WriteJSON(bad) = %v, wrote %q", err, buf.String())
	}
	if err := WriteJSON(&buf, good{Name: "x"}); err != nil || !json.Valid(buf.Bytes()) {
		t.Errorf("WriteJSON(good) = %v, %q", err, buf.String())
	}
}

func TestGroup(t *testing.T) {
	root := &cobra.Command{Use: "station"}
	g := Group(&cobra.Command{Use: "module", Short: "modules"})
	for _, n := range []string{"install", "list", "show"} {
		g.AddCommand(&cobra.Command{Use: n, Run: func(*cobra.Command, []string) {}})
	}
	root.AddCommand(g)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"module"}, ExitOK, ""},
		{[]string{"module", "instal"}, ExitUsage, `unknown command "instal" for "station module"; did you mean "install"?`},
		{[]string{"module", "sohw"}, ExitUsage, `did you mean "show"?`},
		{[]string{"module", "frobnicate"}, ExitUsage, `its commands are install, list, show`},
	} {
		root.SetArgs(tc.args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SilenceErrors, root.SilenceUsage = true, true
		err := root.Execute()
		if ExitCode(err) != tc.code || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%q: %v (exit %d), want exit %d and %q", tc.args, err, ExitCode(err), tc.code, tc.want)
		}
	}
}

func TestExitCodeAndHint(t *testing.T) {
	hubErr := &hub.Error{Code: hub.CodeUnauthenticated, Message: "bad token"}
	for _, tc := range []struct {
		err  error
		code int
		hint string
	}{
		{nil, ExitOK, ""},
		{errors.New("x"), ExitError, ""},
		{Usagef("bad %s", "flag"), ExitUsage, ""},
		{fmt.Errorf("run: %w", &sandbox.Violation{}), ExitViolation, ""},
		{fmt.Errorf("install: %w", station.ErrNotApproved), ExitDeclined, ""},
		{ErrDeclined, ExitDeclined, ""},
		{fmt.Errorf("login: %w", hubErr), ExitError, "station hub login"},
		{fmt.Errorf("search: %w", hubsync.ErrNotLoggedIn), ExitError, "log in first: station hub login --url URL"},
	} {
		if got := ExitCode(tc.err); got != tc.code {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
		if got := Hint(tc.err); (tc.hint == "") != (got == "") || !strings.Contains(got, tc.hint) {
			t.Errorf("Hint(%v) = %q, want %q", tc.err, got, tc.hint)
		}
	}
}

func TestProgressSilentWithoutATerminal(t *testing.T) {
	var errb bytes.Buffer
	f := New(IOStreams{Err: &errb})
	p := f.StartProgress("building x")
	time.Sleep(2 * spinEvery)
	if d := p.Stop(); d <= 0 || errb.Len() != 0 {
		t.Errorf("no terminal: took %v, printed %q", d, errb.String())
	}
	f.IO.ErrIsTerminal = true
	p = f.StartProgress("building \x1b[2Jx")
	time.Sleep(2 * spinEvery)
	p.Stop()
	p.Stop() // twice is fine
	out := errb.String()
	if !strings.Contains(out, "building \\x1b[2Jx") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("terminal: printed %q (want the escaped label, and the line cleared at the end)", out)
	}
}

// TestWriteJSONPrintsTextAsItIs: --json output is not for a web page, so
// "<", ">" and "&" (in a module's description, in its output) are printed
// as they are, not as \u003c, \u003e and \u0026 — in a value the command
// built and in a document a module returned alike.
func TestWriteJSONPrintsTextAsItIs(t *testing.T) {
	v := map[string]any{"description": `{"name": "Ada"} -> <greeting> & more`, "result": json.RawMessage(`{"html":"<b>&</b>"}`)}
	for name, write := range map[string]func(io.Writer, any) error{"WriteJSON": WriteJSON, "WriteJSONLine": WriteJSONLine} {
		var buf bytes.Buffer
		if err := write(&buf, v); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, `\u00`) || !strings.Contains(out, `-> <greeting> & more`) || !strings.Contains(out, `"<b>&</b>"`) || !strings.HasSuffix(out, "}\n") {
			t.Errorf("%s = %q", name, out)
		}
		var back map[string]any
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["description"] != v["description"] {
			t.Errorf("%s: decodes to %v, %v", name, back, err)
		}
		if lines := strings.Count(out, "\n"); (name == "WriteJSONLine") != (lines == 1) {
			t.Errorf("%s wrote %d lines: %q", name, lines, out)
		}
	}
}

// TestAsk: --yes approves without asking, a terminal asks, and without one
// the refusal is a usage error (exit 2) and nothing is asked.
func TestAsk(t *testing.T) {
	for _, tc := range []struct {
		yes, terminal, answer bool
		want, asked           bool
		code                  int
	}{
		{yes: true, want: true},
		{yes: true, terminal: true, want: true},
		{terminal: true, answer: true, want: true, asked: true},
		{terminal: true, asked: true},
		{code: ExitUsage},
	} {
		asked := ""
		ok, err := Ask(tc.yes, tc.terminal, func(q string) bool { asked = q; return tc.answer }, "Remove x?", "remove x needs confirmation: rerun with --yes")
		if ok != tc.want || (asked != "") != tc.asked || (tc.asked && asked != "Remove x?") || ExitCode(err) != tc.code {
			t.Errorf("%+v: ok %v, asked %q, err %v", tc, ok, asked, err)
		}
		if tc.code == ExitUsage && err.Error() != "remove x needs confirmation: rerun with --yes" {
			t.Errorf("refusal = %q", err)
		}
	}
}

func TestDecision(t *testing.T) {
	for want, r := range map[string]store.AuditRecord{
		"allow":             {Decision: sandbox.Decision{Allowed: true}},
		"DENY ":             {},
		"DENY  (folded 12)": {Decision: sandbox.Decision{Folded: 12}},
		"allow (folded 3)":  {Decision: sandbox.Decision{Allowed: true, Folded: 3}},
	} {
		if got := Decision(r); got != want {
			t.Errorf("Decision(%+v) = %q, want %q", r, got, want)
		}
	}
}

// TestDaemonLookedForOnce: a command that calls Daemon twice (run, then a
// reload) looks for the daemon once, and says so once.
func TestDaemonLookedForOnce(t *testing.T) {
	var errb bytes.Buffer
	f := New(IOStreams{Err: &errb})
	f.Home, f.Verbose = t.TempDir(), true
	if c := f.Daemon(context.Background()); c != nil {
		t.Fatal("found a daemon in an empty home")
	}
	f.Daemon(context.Background())
	if n := strings.Count(errb.String(), "running in this process"); n != 1 {
		t.Errorf("said %d times that no daemon runs:\n%s", n, errb.String())
	}
}
