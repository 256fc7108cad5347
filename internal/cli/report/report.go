// Package report is `station report`: the reporter's and the maintainer's
// side of the hub's security reports — file, list, show, comment, triage,
// and the credits reporters earn (credits, fame). Each command is a file:
// its options, its constructor (with a run hook for tests of its flags) and
// its run function, which calls one method of the station's hub client and
// prints a typed result as text or, with --json, as JSON.
//
// What a command can check without the hub (a state's name, an award
// without a reason, a body too large to send) it checks first, as a usage
// error or an error before any request; the hub checks the rest (who may do
// what, which state changes are allowed).
package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/yamlx"
)

// NewCmdReport returns `station report` with its subcommands.
func NewCmdReport(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Report a security flaw in a module or the station, and triage reports",
		Long: `Report files and follows security reports on the hub this station is logged
in to (station hub login): against a module (OWNER/SLUG) or against the
station itself (station).

A report is private until it is published: only its reporter, the owner of
the module (for the station: the hub's admins) and the hub's admins read it.
The owner triages it — new, triaged, confirmed, fixed, or closed as duplicate,
wontfix or invalid — may award the reporter credits, publishes it and an
advisory, which stations that run an affected version then show. Reporter and
owner talk in the report's thread.`,
		Example: `  station report file --target alice/hello --title "greet leaks the token" \
      --severity high --body-file report.md --reproduction-file repro.sh
  station report list --mine
  station report show R-7kq2m4xw3pna
  station report triage R-7kq2m4xw3pna --state confirmed --award 5 --reason "clear reproduction"
  station report fame`,
	}
	c.AddCommand(NewCmdFile(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdComment(f, nil),
		NewCmdTriage(f, nil), NewCmdCredits(f, nil), NewCmdFame(f, nil))
	return cmdutil.Group(c)
}

// Service is what the report commands ask of the station's hub client
// (*hubclient.Client).
type Service interface {
	FileReport(ctx context.Context, req hub.FileReportRequest) (hub.Report, error)
	Reports(ctx context.Context, o hubclient.ReportListOptions) (hub.ReportList, error)
	Report(ctx context.Context, id string) (hub.Report, error)
	Comment(ctx context.Context, id string, req hub.CommentRequest) (hub.Report, error)
	Triage(ctx context.Context, id string, req hub.TriageRequest) (hub.Report, error)
	Credits(ctx context.Context, account string) (hub.Credits, error)
	HallOfFame(ctx context.Context) (hub.HallOfFame, error)
}

// Login is the station's hub login as the report commands use it.
type Login struct {
	Hub Service
	// URL is the hub's URL and Account the account the station is logged
	// in as (as the hub named it at login).
	URL, Account string
}

// session opens the Factory's station and its hub login: not logged in,
// it is hubsync.ErrNotLoggedIn, whose hint says how to log in.
func session(f *cmdutil.Factory) func(context.Context) (*Login, error) {
	return func(ctx context.Context) (*Login, error) {
		s, err := f.HubSession(ctx)
		if err != nil {
			return nil, err
		}
		return &Login{Hub: s.Client, URL: s.Login.URL, Account: s.Login.Account}, nil
	}
}

// timeFormat is how the commands show a time: local, to the minute.
const timeFormat = "2006-01-02 15:04"

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(timeFormat)
}

// checkID is the usage error of an argument that is not a report id.
func checkID(what, id string) error {
	if !hub.ValidReportID(id) {
		return cmdutil.Usagef("%s %q is not a report id (R- and 12 letters or digits, as station report list shows)", what, id)
	}
	return nil
}

// checkTarget is the usage error of a --target that is neither a module id
// nor the station.
func checkTarget(target string) error {
	if target == hub.Product {
		return nil
	}
	if id, v, ok := strings.Cut(target, "@"); ok && hub.CheckModuleID(id) == "" {
		return cmdutil.Usagef("--target %q: name the module alone (%s) and its versions with --versions %s", target, id, v)
	}
	if msg := hub.CheckModuleID(target); msg != "" {
		return cmdutil.Usagef("--target %q is neither a module id (OWNER/SLUG: %s) nor %q (the station itself)", target, msg, hub.Product)
	}
	return nil
}

// checkState is the usage error of a --state that is no report state.
func checkState(state string) error {
	for _, s := range hub.ReportStates() {
		if state == s {
			return nil
		}
	}
	return cmdutil.Usagef("--state %q is no report state; pass one of %s", state, strings.Join(hub.ReportStates(), ", "))
}

// checkSeverity is the usage error of a --severity (and --cvss) the hub
// would refuse.
func checkSeverity(s hub.Severity) error {
	if msg := s.Check(); msg != "" {
		return cmdutil.Usagef("--severity/--cvss: %s", msg)
	}
	return nil
}

// version reads a version flag: a semantic version, also written as a
// station release is named ("station-v0.72.0") or with a "v" ("v0.72.0").
func version(flag, s string) (string, error) {
	v := s
	if rest, ok := strings.CutPrefix(v, "station-v"); ok {
		v = rest
	} else if rest, ok := strings.CutPrefix(v, "v"); ok {
		v = rest
	}
	if msg := hub.CheckVersion(v); msg != "" {
		return "", cmdutil.Usagef("%s %q is not a version: %s", flag, s, msg)
	}
	return v, nil
}

// readText reads the text a flag names: the file at path, or standard
// input for "-", as checkText takes it. A file larger than max, or that is
// not text the hub takes, is an error before anything is sent.
func readText(stdin io.Reader, flag, path, what string, max int) (string, error) {
	var r io.Reader = stdin
	name := "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		defer f.Close()
		r, name = f, path
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return "", fmt.Errorf("%s: read %s: %w", flag, name, err)
	}
	if len(b) > max {
		return "", fmt.Errorf("%s: %s is larger than %s, the most %s may be on the hub: shorten it", flag, name, yamlx.FormatSize(uint64(max)), what)
	}
	return checkText(flag+": "+name, what, string(b), true)
}

// checkText returns s as the hub takes a text: UTF-8, without control or
// formatting characters (but, in a multiline text, newlines and tabs).
// CRLF line ends, as an editor on Windows writes them, are read as LF; any
// other character the hub would refuse is an error that says where it is.
func checkText(where, what, s string, multiline bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%s is not UTF-8 text (%s is text: attach a binary as a base64 or hex dump)", where, what)
	}
	if multiline {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	line := 1
	for _, r := range s {
		switch {
		case r == '\n' && multiline:
			line++
		case r == '\t' && multiline:
		case unsafeRune(r):
			return "", fmt.Errorf("%s: line %d holds %U, a control or formatting character the hub refuses in %s (only newlines and tabs may be in a text)", where, line, r, what)
		}
	}
	return s, nil
}

// unsafeRune reports the characters the hub refuses in a report's text:
// control and formatting characters that could rewrite what a terminal
// shows (those cmdutil.TermText escapes).
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f
}

// textFlag is a text given inline (--body) or as a file (--body-file).
type textFlag struct {
	Text, File string
}

// check is the usage error of neither or both being given.
func (t textFlag) check(name string, required bool) error {
	switch {
	case t.Text != "" && t.File != "":
		return cmdutil.Usagef("pass --%s or --%s-file, not both", name, name)
	case required && strings.TrimSpace(t.Text) == "" && t.File == "":
		return cmdutil.Usagef("--%s TEXT or --%s-file FILE (- for standard input) is required", name, name)
	}
	return nil
}

// read returns the text, reading the file if one was named.
func (t textFlag) read(stdin io.Reader, name, what string, max int) (string, error) {
	if t.File == "" {
		if len(t.Text) > max {
			return "", fmt.Errorf("--%s is larger than %s, the most %s may be on the hub: shorten it", name, yamlx.FormatSize(uint64(max)), what)
		}
		return checkText("--"+name, what, t.Text, true)
	}
	s, err := readText(stdin, "--"+name+"-file", t.File, what, max)
	if err == nil && strings.TrimSpace(s) == "" {
		err = fmt.Errorf("--%s-file: %s is empty", name, t.File)
	}
	return s, err
}

// audience says who may read a private report of target: its reporter
// (who), the module's owner and the hub's admins.
func audience(target, who string) string {
	if target == hub.Product {
		return who + " and the hub's admins"
	}
	owner, _, _ := strings.Cut(target, "/")
	return fmt.Sprintf("%s, the owner of %s (%s) and the hub's admins", who, cmdutil.TermText(target), cmdutil.TermText(owner))
}

// versions says which versions a report says are affected.
func versions(r hub.Report) string {
	from, to := cmdutil.TermText(r.Introduced), cmdutil.TermText(r.LastAffected)
	switch {
	case from == "" && to == "":
		return "every version"
	case to == "":
		return from + " and later"
	case from == "":
		return "up to " + to
	}
	return from + " to " + to
}

// severity shows a severity level with its CVSS vector.
func severity(s hub.Severity) string {
	out := cmdutil.TermText(s.Level)
	if s.CVSS != "" {
		out += " (" + cmdutil.TermText(s.CVSS) + ")"
	}
	return out
}
