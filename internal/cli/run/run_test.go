package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

func TestFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*RunOptions) error) *cobra.Command { return NewCmdRun(clitest.Factory(), runF) }, []clitest.FlagCase[RunOptions]{
		{Args: []string{"a/b", "greet"}, Want: RunOptions{Module: "a/b", Command: "greet"}},
		{Args: []string{"a/b", "greet", "-i", `{"x":1}`, "--compact"}, Want: RunOptions{Module: "a/b", Command: "greet", Input: `{"x":1}`, Compact: true}},
		{Args: []string{"a/b", "greet", "--json"}, Want: RunOptions{Module: "a/b", Command: "greet", JSON: true}},
		{Args: []string{"a/b"}, Code: cmdutil.ExitUsage},
		{Args: []string{"a/b", "greet", "--frob"}, Code: cmdutil.ExitUsage},
	})
}

type fakeCaller struct {
	module, command string
	input           []byte
	out             []byte
	err             error
}

func (f *fakeCaller) Run(_ context.Context, module, command string, input []byte) ([]byte, error) {
	f.module, f.command, f.input = module, command, input
	return f.out, f.err
}

func run(t *testing.T, stdin string, c *fakeCaller, opts RunOptions) (string, error) {
	t.Helper()
	var out bytes.Buffer
	opts.IO = &cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &bytes.Buffer{}}
	opts.Caller = func(context.Context) (cmdutil.Caller, error) { return c, nil }
	err := runRun(context.Background(), &opts)
	return out.String(), err
}

func TestRun(t *testing.T) {
	c := &fakeCaller{out: []byte(`{"greeting":"Hello, Ada"}`)}
	out, err := run(t, `{"name":"Ada"}`, c, RunOptions{Module: "a/b", Command: "greet", Input: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if c.module != "a/b" || c.command != "greet" || string(c.input) != `{"name":"Ada"}` {
		t.Errorf("called %s %s with %s", c.module, c.command, c.input)
	}
	if out != "{\n  \"greeting\": \"Hello, Ada\"\n}\n" {
		t.Errorf("printed %q", out)
	}

	out, err = run(t, "", c, RunOptions{Module: "a/b", Command: "greet", JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Module, Command string
		Result          map[string]string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Module != "a/b" || res.Result["greeting"] != "Hello, Ada" {
		t.Errorf("--json printed %s (%v)", out, err)
	}
	if string(c.input) != "{}" {
		t.Errorf("no --input sent %s, want {}", c.input)
	}

	// Not JSON: a usage error before the module is called.
	c = &fakeCaller{}
	if _, err := run(t, "", c, RunOptions{Module: "a/b", Command: "greet", Input: "{nope"}); cmdutil.ExitCode(err) != cmdutil.ExitUsage || c.module != "" {
		t.Errorf("bad input: %v (called %q)", err, c.module)
	}

	// The module's error is the command's.
	want := errors.New("boom")
	if _, err := run(t, "", &fakeCaller{err: want}, RunOptions{Module: "a/b", Command: "greet"}); !errors.Is(err, want) {
		t.Errorf("error %v, want %v", err, want)
	}
}
