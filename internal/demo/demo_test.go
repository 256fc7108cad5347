package demo

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/wasmbuild"
)

// AsStation, set to 1 in its environment, makes this test binary the
// station CLI (TestMain): the copy Start puts in a demo's bin/station then
// runs the commands Try prints, without building a station binary.
const AsStation = "STATION_DEMO_TEST_AS_STATION"

// prebuilt builds examples with wasmbuild.ForTest, cached across test
// processes, instead of running go build for each setup.
func prebuilt(t *testing.T) func(ctx context.Context, dir, out string) error {
	return func(_ context.Context, dir, out string) error {
		return os.WriteFile(out, wasmbuild.ForTest(t, "examples/"+filepath.Base(dir)), 0o600)
	}
}

// recorder is a Progress that keeps what it heard.
type recorder struct {
	mu     sync.Mutex
	events []string
	ended  []Step
	errs   []error
}

func (r *recorder) Begin(s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "begin "+string(s.Kind)+" "+s.Dir)
}

func (r *recorder) End(s Step, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "end "+string(s.Kind)+" "+s.Dir)
	r.ended = append(r.ended, s)
	r.errs = append(r.errs, err)
}

func TestRun(t *testing.T) {
	home := t.TempDir()
	rec := &recorder{}
	// The station's own compilation cache, on disk in home, so that the
	// second setup below and the station binary find the modules compiled;
	// its directory is the one the other packages' tests share across test
	// processes, so that the examples are compiled once, not per run.
	if err := os.MkdirAll(filepath.Join(home, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(os.TempDir(), "station-test-wazero-cache")
	if err := os.MkdirAll(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(home, "cache", "wazero")); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Home: home, Progress: rec, Build: prebuilt(t)})
	if err != nil {
		t.Fatal(err)
	}

	// Every step is reported before and after its work, in order, with how
	// long it took; installs carry the plan the demo approved.
	want := []string{
		"begin build examples/hello", "end build examples/hello",
		"begin build examples/stripe-invoicing", "end build examples/stripe-invoicing",
		"begin apis ", "end apis ",
		"begin install examples/hello", "end install examples/hello",
		"begin install examples/stripe-invoicing", "end install examples/stripe-invoicing",
	}
	if !slices.Equal(rec.events, want) {
		t.Errorf("progress\n%s\nwant\n%s", strings.Join(rec.events, "\n"), strings.Join(want, "\n"))
	}
	for i, s := range rec.ended {
		if rec.errs[i] != nil || s.Took <= 0 {
			t.Errorf("step %d %s %s: took %v, error %v", i, s.Kind, s.Dir, s.Took, rec.errs[i])
		}
		if (s.Kind == StepInstall) != (s.Plan != nil) {
			t.Errorf("step %s %s: plan %v", s.Kind, s.Dir, s.Plan)
		}
	}
	if len(res.Steps) != len(rec.ended) || res.Steps[0].Module != "station/hello" || res.Steps[4].Module != "dave/stripe-invoicing" {
		t.Errorf("result steps %+v", res.Steps)
	}
	if apis := res.Steps[2]; apis.Kind != StepAPIs || !strings.Contains(apis.Config, apis.Addr) || apis.LLMAddr == "" {
		t.Errorf("apis step %+v", apis)
	}
	if res.Home != home || res.Took <= 0 {
		t.Errorf("home %q, took %v", res.Home, res.Took)
	}

	// The calls: a greeting, an invoice from the stand-in Stripe, a denial.
	if len(res.Calls) != 3 {
		t.Fatalf("calls %+v", res.Calls)
	}
	var greeting struct{ Greeting string }
	if json.Unmarshal(res.Calls[0].Output, &greeting); greeting.Greeting != "Hello, Ada!" || res.Calls[0].Err != nil {
		t.Errorf("greet: %s %v", res.Calls[0].Output, res.Calls[0].Err)
	}
	var inv struct{ ID, Status string }
	if json.Unmarshal(res.Calls[1].Output, &inv); inv.ID != "in_demo_0001" || inv.Status != "draft" || res.Calls[1].Err != nil {
		t.Errorf("create-invoice: %s %v", res.Calls[1].Output, res.Calls[1].Err)
	}
	var v *sandbox.Violation
	if c := res.Calls[2]; !c.Deny || !errors.As(c.Err, &v) || v.Capability != sandbox.Network || !strings.Contains(v.Target, "evil.example") {
		t.Errorf("fetch: %s %v, want the network gate's denial", c.Output, c.Err)
	}
	// Only the allowed call reached the stand-ins.
	if res.APIRequests != 1 {
		t.Errorf("the stand-ins saw %d requests, want 1", res.APIRequests)
	}
	var allowed, denied bool
	for _, r := range res.Audit {
		allowed = allowed || r.Allowed && r.Module == "dave/stripe-invoicing" && strings.Contains(r.Target, "api.stripe.com")
		denied = denied || !r.Allowed && r.Module == "dave/stripe-invoicing" && r.Capability == sandbox.Network && strings.Contains(r.Target, "evil.example")
	}
	if !allowed || !denied {
		t.Errorf("audit log (allowed stripe %v, denied evil.example %v): %+v", allowed, denied, res.Audit)
	}

	// The demo wrote its own configuration; a second setup in the same home
	// (serve --demo again) takes it over.
	cfg, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	if !strings.HasPrefix(string(cfg), configHeader) {
		t.Errorf("config.yaml:\n%s", cfg)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(context.Background(), Options{Home: home, Build: prebuilt(t), Executable: exe})
	if err != nil {
		t.Fatalf("a second setup in the same home: %v", err)
	}
	defer d.Close(context.Background())
	if cfg2, _ := os.ReadFile(filepath.Join(home, "config.yaml")); !strings.Contains(string(cfg2), d.APIs.Addr()) {
		t.Errorf("the second setup did not route to its own stand-ins:\n%s", cfg2)
	}
	if d.Binary != filepath.Join(home, "bin", "station") {
		t.Errorf("binary %q", d.Binary)
	}
	if fi, err := os.Stat(d.Binary); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("binary: %v %v", fi, err)
	}

	// The commands Try prints, word for word, in a shell in another
	// directory, with bin/station a copy of this test binary (which is the
	// station CLI under AsStation, TestMain): the greeting works, the
	// denied call shows exit code 3, the workflow reaches the stand-ins and
	// the audit log shows the denial.
	var script []string
	for _, c := range d.Try() {
		script = append(script, c.Line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", strings.Join(script, "\n"))
	sh.Dir = t.TempDir()
	sh.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), AsStation + "=1"}
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`"greeting": "Hello, Ada!"`, "sandbox violation", "\nexit code 3\n", `"invoice": "in_demo_0001"`, `"note": "Noted: Invoice in_demo_0001`, "DENY"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the commands' output lacks %q:\n%s", want, out)
		}
	}
}

func TestStartRefuses(t *testing.T) {
	ctx := context.Background()
	built := 0
	build := func(context.Context, string, string) error { built++; return nil }

	// An operator's own station: its configuration is not the demo's.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("network:\n  grant: [internal.example]\n"), 0o600)
	if _, err := Start(ctx, Options{Home: home, Build: build}); !errors.Is(err, ErrNotDemoHome) || !strings.Contains(err.Error(), home) {
		t.Errorf("a foreign home: %v, want ErrNotDemoHome", err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "config.yaml")); string(b) != "network:\n  grant: [internal.example]\n" || built != 0 {
		t.Errorf("the refusal touched the home (config %q, %d builds)", b, built)
	}

	if _, err := Start(ctx, Options{Build: build}); err == nil {
		t.Error("no home: no error")
	}

	// Not in a checkout.
	t.Chdir(t.TempDir())
	if _, err := Start(ctx, Options{Home: t.TempDir(), Build: build}); !errors.Is(err, ErrNoCheckout) {
		t.Errorf("outside a checkout: %v, want ErrNoCheckout", err)
	}
}

func TestStartBuildFails(t *testing.T) {
	root, err := wasmbuild.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	boom := errors.New("compiler says no")
	_, err = Start(context.Background(), Options{Home: t.TempDir(), Root: root, Progress: rec,
		Build: func(_ context.Context, dir, _ string) error {
			if filepath.Base(dir) == "stripe-invoicing" {
				return boom
			}
			return nil
		}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "build dave/stripe-invoicing") {
		t.Errorf("error %v", err)
	}
	// The failed step is reported ended, with its error; nothing after it ran.
	if n := len(rec.ended); n != 2 || !errors.Is(rec.errs[1], boom) || rec.events[len(rec.events)-1] != "end build examples/stripe-invoicing" {
		t.Errorf("progress %v, errors %v", rec.events, rec.errs)
	}
}

func TestStartInstallFails(t *testing.T) {
	rec := &recorder{}
	home := t.TempDir()
	_, err := Start(context.Background(), Options{Home: home, Progress: rec,
		Build: func(_ context.Context, _, out string) error { return os.WriteFile(out, []byte("not wasm"), 0o600) }})
	if err == nil || !strings.Contains(err.Error(), "station/hello") {
		t.Fatalf("installing a module that is not wasm: %v", err)
	}
	if last := rec.events[len(rec.events)-1]; last != "end install examples/hello" || rec.errs[len(rec.errs)-1] == nil {
		t.Errorf("progress %v, errors %v", rec.events, rec.errs)
	}
	// What was started is stopped: the stand-ins no longer answer.
	apis := rec.ended[2]
	if apis.Kind != StepAPIs {
		t.Fatalf("steps %+v", rec.ended)
	}
	for _, addr := range []string{apis.Addr, apis.LLMAddr} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("the stand-in on %s still answers after the failed setup", addr)
		}
	}
}

func TestDefaultHome(t *testing.T) {
	if h, err := DefaultHome("/x/y"); h != "/x/y" || err != nil {
		t.Errorf("DefaultHome(/x/y) = %q, %v", h, err)
	}
	t.Setenv("HOME", "/home/ada")
	t.Setenv("STATION_HOME", "/home/ada/.station")
	if h, err := DefaultHome(""); h != "/home/ada/.station-demo" || err != nil {
		t.Errorf("DefaultHome() = %q, %v, want ~/.station-demo (never $STATION_HOME)", h, err)
	}
}

func TestTry(t *testing.T) {
	d := &Demo{Home: "/home/ada/.station-demo", Root: "/src/station", Binary: "/home/ada/.station-demo/bin/station"}
	var lines []string
	for _, c := range d.Try() {
		lines = append(lines, c.Line+"  # "+c.Note)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"export STATION_HOME=/home/ada/.station-demo PATH=/home/ada/.station-demo/bin:$PATH",
		`station run station/hello greet --input '{"name":"Ada"}'`,
		`station run dave/stripe-invoicing fetch --input '{"url":"https://evil.example/"}'; echo "exit code $?"  # denied by the network gate: exit code 3`,
		"station workflow run /src/station/examples/workflows/invoice.yaml --input customer=cus_demo",
		"station secret list",
		"station audit --denied",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Try lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "go run") {
		t.Errorf("with a binary, Try still says go run:\n%s", got)
	}

	// Without a binary: go run from the checkout, and what go run makes of
	// the exit code, said plainly.
	d = &Demo{Home: "/tmp/it's here", Root: "/src/station"}
	lines = nil
	for _, c := range d.Try() {
		lines = append(lines, c.Line+"  # "+c.Note)
	}
	got = strings.Join(lines, "\n")
	for _, want := range []string{"cd /src/station", `export STATION_HOME='/tmp/it'\''s here'`, "go run ./cmd/station run station/hello", `go run reports as "exit status 3" (go run itself exits 1)`} {
		if !strings.Contains(got, want) {
			t.Errorf("Try without a binary lacks %q:\n%s", want, got)
		}
	}
}
