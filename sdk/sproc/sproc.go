// Package sproc starts programs through the station's subprocess gate. A
// module may start only the programs its manifest grants
// (requires.subprocess.allow), each resolved by the station at install; the
// arguments are passed without a shell, the environment holds only the
// variables the manifest declares, and the program runs confined (no
// network, writes only in the module's writable directories) and is killed
// with its whole process group when the call ends.
//
//	out, err := sproc.Command("git", "log", "-1", "--format=%H").Output(ctx)
//
// A program the module may not start fails with a *sdk.HostError whose
// Denied method reports true.
package sproc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/station-dev/station/abi"
	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/internal/hostcall"
)

// Cmd is a program to run.
type Cmd struct {
	// Args holds the program name (as granted in the manifest) and its
	// arguments.
	Args []string
	// Env holds variables to pass; only those the manifest declares are
	// allowed.
	Env map[string]string
	// Stdin is the program's standard input.
	Stdin []byte
	// Dir is the working directory; it must be inside one of the module's
	// writable directories. Empty: a fresh scratch directory.
	Dir string
}

// Command returns a Cmd that runs name with args.
func Command(name string, args ...string) *Cmd {
	return &Cmd{Args: append([]string{name}, args...)}
}

// Result is what a finished program produced.
type Result struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Truncated bool // output exceeded the station's cap
}

// ExitError is returned by Output for a program that exited non-zero.
type ExitError struct{ Result *Result }

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("exit status %d", e.Result.ExitCode)
	if len(e.Result.Stderr) > 0 {
		msg += ": " + firstLine(e.Result.Stderr)
	}
	return msg
}

// Run runs the program and waits for it. A non-zero exit is not an error of
// Run: check Result.ExitCode (or use Output).
func (c *Cmd) Run(ctx context.Context) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(abi.ProcessRequest{Argv: c.Args, Env: c.Env, Stdin: c.Stdin, Dir: c.Dir})
	if err != nil {
		return nil, err
	}
	s, answer := run(doc)
	if s != abi.StatusOK {
		e := hostcall.ParseError(s, answer)
		return nil, &sdk.HostError{Status: s, Code: e.Code, Capability: e.Capability, Target: e.Target, Reason: e.Reason, Message: e.Message}
	}
	var resp abi.ProcessResponse
	if err := json.Unmarshal(answer, &resp); err != nil {
		return nil, fmt.Errorf("sproc: decode the station's answer: %w", err)
	}
	return &Result{ExitCode: resp.ExitCode, Stdout: resp.Stdout, Stderr: resp.Stderr, Truncated: resp.Truncated}, nil
}

// Output runs the program and returns its standard output; a non-zero exit
// is an *ExitError.
func (c *Cmd) Output(ctx context.Context) ([]byte, error) {
	r, err := c.Run(ctx)
	if err != nil {
		return nil, err
	}
	if r.ExitCode != 0 {
		return r.Stdout, &ExitError{Result: r}
	}
	return r.Stdout, nil
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
