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
//
// The station keeps at most a limit of each stream (1 MiB by default) and
// discards the rest. Output never returns less than the program wrote as a
// success: when stdout was cut it fails with a *TruncatedError, which
// errors.Is reports as ErrTruncated. Run does the same when either stream
// was cut. A module that can use the first part of a long output sets
// Cmd.Partial and checks Result.Truncated:
//
//	cmd := sproc.Command("git", "log")
//	cmd.Partial = true
//	r, err := cmd.Run(ctx)
//	// r.Stdout is at most r.Limit bytes; r.StdoutDropped more were discarded
package sproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
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
	// Partial accepts output the station cut at its limit: Run and Output
	// return it without a *TruncatedError, and Result.Truncated says it is
	// incomplete. Without Partial a cut output is an error.
	Partial bool
}

// Command returns a Cmd that runs name with args.
func Command(name string, args ...string) *Cmd {
	return &Cmd{Args: append([]string{name}, args...)}
}

// Result is what a finished program produced.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// Truncated reports that the program wrote more than Limit bytes to
	// stdout or stderr: the station kept the first Limit bytes of each
	// and discarded StdoutDropped and StderrDropped bytes.
	Truncated     bool
	Limit         int64 // the station's cap on each stream, in bytes
	StdoutDropped int64
	StderrDropped int64
}

// ErrTruncated is the error a *TruncatedError matches with errors.Is.
var ErrTruncated = errors.New("output truncated at the station's limit")

// TruncatedError is returned, with the partial Result, when the station cut
// the program's output and the Cmd did not set Partial.
type TruncatedError struct {
	Program string
	Result  *Result
}

func (e *TruncatedError) Error() string {
	r := e.Result
	var cut []string
	if r.StdoutDropped > 0 {
		cut = append(cut, fmt.Sprintf("stdout by %d bytes", r.StdoutDropped))
	}
	if r.StderrDropped > 0 {
		cut = append(cut, fmt.Sprintf("stderr by %d bytes", r.StderrDropped))
	}
	msg := fmt.Sprintf("sproc: %s: output truncated at the station's limit of %d bytes per stream", e.Program, r.Limit)
	if len(cut) > 0 {
		msg += ": " + strings.Join(cut, " and ") + " over it"
	}
	return msg
}

// Is reports whether target is ErrTruncated.
func (e *TruncatedError) Is(target error) bool { return target == ErrTruncated }

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
// Run: check Result.ExitCode (or use Output). When the station cut stdout or
// stderr and c.Partial is not set, Run returns the partial Result with a
// *TruncatedError.
func (c *Cmd) Run(ctx context.Context) (*Result, error) {
	r, err := c.run(ctx)
	if err == nil && r.Truncated && !c.Partial {
		return r, c.truncated(r)
	}
	return r, err
}

func (c *Cmd) truncated(r *Result) error {
	name := ""
	if len(c.Args) > 0 {
		name = c.Args[0]
	}
	return &TruncatedError{Program: name, Result: r}
}

func (c *Cmd) run(ctx context.Context) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(abi.ProcessRequest{Argv: c.Args, Env: c.Env, Stdin: c.Stdin, Dir: c.Dir})
	if err != nil {
		return nil, err
	}
	s, answer := send(doc)
	if s != abi.StatusOK {
		e := hostcall.ParseError(s, answer)
		return nil, &sdk.HostError{Status: s, Code: e.Code, Capability: e.Capability, Target: e.Target, Reason: e.Reason, Message: e.Message}
	}
	var resp abi.ProcessResponse
	if err := json.Unmarshal(answer, &resp); err != nil {
		return nil, fmt.Errorf("sproc: decode the station's answer: %w", err)
	}
	return &Result{
		ExitCode: resp.ExitCode, Stdout: resp.Stdout, Stderr: resp.Stderr,
		// Dropped bytes mean truncation whatever the flag says.
		Truncated: resp.Truncated || resp.StdoutDropped > 0 || resp.StderrDropped > 0,
		Limit:     resp.Limit, StdoutDropped: resp.StdoutDropped, StderrDropped: resp.StderrDropped,
	}, nil
}

// Output runs the program and returns its standard output; a non-zero exit
// is an *ExitError. When the station cut stdout and c.Partial is not set,
// Output returns the partial stdout with a *TruncatedError (stderr, which
// Output does not return, may be cut without one).
func (c *Cmd) Output(ctx context.Context) ([]byte, error) {
	r, err := c.run(ctx)
	if err != nil {
		return nil, err
	}
	if (r.StdoutDropped > 0 || r.Truncated && r.StderrDropped == 0) && !c.Partial {
		return r.Stdout, c.truncated(r)
	}
	if r.ExitCode != 0 {
		return r.Stdout, &ExitError{Result: r}
	}
	return r.Stdout, nil
}

// send delivers a request to the station; tests replace it.
var send = run

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
