package cmdutil_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

func TestTermTextAndTermBlock(t *testing.T) {
	if got := cmdutil.TermText(hostile); rawControl(got) != "" || strings.Contains(got, "\n") {
		t.Errorf("cmdutil.TermText(hostile) = %q", got)
	}
	got := cmdutil.TermBlock("first "+hostile+"\nthird", "  ")
	if rawControl(got) != "" || forged(got) || strings.Count(got, "\n") != 2 || !strings.Contains(got, "\n  third") {
		t.Errorf("cmdutil.TermBlock keeps the newlines, indented, and nothing else: %q", got)
	}
	long := cmdutil.TermBlock(strings.Repeat(strings.Repeat("x", 100)+"\n", 1000), "")
	if len(long) > 2*cmdutil.MaxTermText+8 || !strings.HasSuffix(long, "...") {
		t.Errorf("cmdutil.TermBlock of a long text: %d bytes, ends %q", len(long), long[len(long)-8:])
	}
}

// TestJSONTextKeepsTheValue: cmdutil.JSONText escapes exactly what cmdutil.TermText
// escapes, and the JSON still decodes to the same value — for every rune.
func TestJSONTextKeepsTheValue(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := string(r)
		b, _ := json.Marshal(map[string]string{"k": "a" + s + "b"})
		out := cmdutil.JSONText(b)
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil || back["k"] != "a"+s+"b" {
			t.Fatalf("%U: cmdutil.JSONText(%s) = %s, decodes to %q, %v", r, b, out, back["k"], err)
		}
		if raw := bytes.Contains(out, []byte(s)); raw && cmdutil.TermText(s) != s && r >= 0x20 {
			t.Fatalf("%U: cmdutil.TermText escapes it, cmdutil.JSONText leaves it raw: %s", r, out)
		}
	}
	// A module's output may hold what encoding/json never writes: a byte
	// that is not UTF-8, raw C1 and bidi controls in a RawMessage.
	raw := json.RawMessage("{\"a\":\"\xff\u009b\u202e\",\"b\":[1,2]}")
	b, err := json.Marshal(map[string]any{"output": raw})
	if err != nil {
		t.Fatal(err)
	}
	out := cmdutil.JSONText(b)
	var back struct {
		Output struct{ A string }
	}
	if err := json.Unmarshal(out, &back); err != nil || back.Output.A != "\ufffd\u009b\u202e" || rawControl(string(out)) != "" {
		t.Errorf("cmdutil.JSONText(%q) = %q (%q, %v)", b, out, back.Output.A, err)
	}
	if plain := []byte(`{"a":"héllo ✓"}`); !bytes.Equal(cmdutil.JSONText(plain), plain) {
		t.Errorf("cmdutil.JSONText changed JSON with nothing to escape: %s", cmdutil.JSONText(plain))
	}
}

// TestPrintersEscape feeds the hostile text through every field of what
// cmdutil's printers show: an install plan (a manifest built around the
// validator, as a stored one could be), a hub plan, results, JSON and the
// log lines.
func TestPrintersEscape(t *testing.T) {
	h := hostile
	man := &manifest.Manifest{ID: h, Version: h, Description: h, Commands: []manifest.Command{{Name: h, Description: h}}}
	perms := station.Permissions{Network: []string{h}, FilesystemWrites: []string{h}, FilesystemReads: []string{h}, Env: []string{h}, Subprocess: map[string][]string{"allow": {h}}}
	plan := station.Plan{Manifest: man, Digest: "sha256:x", Permissions: perms, Replaces: &store.Module{ID: h, Version: h, Digest: h}, Children: h}
	var buf bytes.Buffer
	cmdutil.PrintPlan(&buf, plan)
	checkPrinted(t, "cmdutil.PrintPlan", buf.String())

	for _, approved := range []*station.Permissions{nil, &station.Permissions{}} {
		buf.Reset()
		cmdutil.PrintHubPlan(&buf, hubsync.Plan{Plan: plan, Hub: h, Team: h, Approved: approved, Escalations: []string{h}, KeyChange: true,
			Version: hub.Version{Module: h + "/" + h, Version: h, Yanked: true, YankReason: h, KeyID: h}})
		checkPrinted(t, "cmdutil.PrintHubPlan", buf.String())
	}

	doc, _ := json.Marshal(map[string]string{"k": h})
	rawDoc := json.RawMessage("{\"k\":\"\u009b\u202e\xff\"}")
	for _, compact := range []bool{false, true} {
		buf.Reset()
		cmdutil.PrintResult(&buf, append(append([]byte(nil), doc...), rawDoc...), compact) // not JSON: two documents
		checkPrinted(t, "cmdutil.PrintResult of text", buf.String())
		buf.Reset()
		cmdutil.PrintResult(&buf, []byte("{\"k\":\r\"\u009b\u202e\xff\",\"h\":"+string(doc)+"}"), compact)
		if out := buf.String(); rawControl(out) != "" || !json.Valid([]byte(out)) {
			t.Errorf("cmdutil.PrintResult(compact=%v) = %q: want JSON with nothing raw", compact, out)
		}
	}

	buf.Reset()
	if err := cmdutil.WriteJSON(&buf, map[string]any{"s": h, "raw": rawDoc, "list": []string{h}}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); rawControl(out) != "" || !json.Valid([]byte(out)) {
		t.Errorf("cmdutil.WriteJSON = %q", out)
	}

	buf.Reset()
	log := slog.New(cmdutil.NewLineHandler(&buf, slog.LevelDebug))
	log.Info(host.GuestLogMessage, "module", h, "command", h, "text", h)
	log.With("module", h).Warn("hub relay: "+h, "err", h)
	checkPrinted(t, "log lines", buf.String())
}

var (
	hostile      = clitest.Hostile
	rawControl   = clitest.RawControl
	checkPrinted = clitest.CheckPrinted
	forged       = clitest.Forged
)
