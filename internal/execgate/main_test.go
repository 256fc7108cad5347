package execgate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
)

// helperVar, when set in the environment, turns the test binary into a
// helper program that the tests run through the gate (granted by name, as
// the station binary must be).
const helperVar = "EXECGATE_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperVar); mode != "" {
		// The helper is a program the gate runs, not a test: it exits
		// without the test binary's exit hooks, so that what it writes is
		// only what its mode writes (under -cover, the coverage runtime's
		// hook would add "warning: GOCOVERDIR not set" to its standard
		// error; the gate passes the helper no GOCOVERDIR). Its output is
		// unbuffered, so nothing is lost.
		syscall.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helper(mode string, args []string) int {
	switch mode {
	case "args":
		json.NewEncoder(os.Stdout).Encode(os.Args)
	case "env":
		env := os.Environ()
		slices.Sort(env)
		fmt.Print(strings.Join(env, "\n"))
	case "pwd":
		wd, err := os.Getwd()
		if err != nil {
			fmt.Print("error: ", err)
			return 1
		}
		fmt.Print(wd)
	case "connect":
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		if err != nil {
			fmt.Print("error: ", err)
			return 1
		}
		c.Close()
		fmt.Print("connected")
	case "spew":
		n, _ := strconv.Atoi(args[0])
		chunk := []byte(strings.Repeat("x", 4096))
		for ; n > 0; n -= len(chunk) {
			if n < len(chunk) {
				chunk = chunk[:n]
			}
			os.Stdout.Write(chunk)
			os.Stderr.Write(chunk)
		}
	case "write":
		if err := os.WriteFile(args[0], []byte("x"), 0o644); err != nil {
			fmt.Print("error: ", err)
			return 1
		}
		fmt.Print("wrote")
	case "status":
		b, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "CapEff:") || strings.HasPrefix(l, "CapBnd:") || strings.HasPrefix(l, "NoNewPrivs:") {
				fmt.Println(strings.Join(strings.Fields(l), " "))
			}
		}
	case "read":
		b, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Print("error: ", err)
			return 1
		}
		os.Stdout.Write(b)
	case "unix":
		c, err := net.DialTimeout("unix", args[0], 5*time.Second)
		if err != nil {
			fmt.Print("error: ", err)
			return 1
		}
		c.Close()
		fmt.Print("connected")
	case "stdin":
		io.Copy(os.Stdout, os.Stdin)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}

// recorder collects decisions.
type recorder struct{ fixture.Recorder }

func (r *recorder) last(t *testing.T) sandbox.Decision {
	t.Helper()
	ds := r.All()
	if len(ds) == 0 {
		t.Fatal("no decision recorded")
	}
	return ds[len(ds)-1]
}

// helperProgram returns the test binary's name and an operator that finds
// and grants it, with the given trees excluded.
func helperProgram(t *testing.T, excluded ...string) (string, Operator) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(exe)
	return name, Operator{SearchPath: []string{filepath.Dir(exe)}, GrantPrograms: []string{name}, Excluded: excluded}
}

// helperGate builds a gate that may run the test binary as a helper.
func helperGate(t *testing.T, rec sandbox.Recorder, workDirs []string, env ...string) (*Gate, string) {
	t.Helper()
	name, op := helperProgram(t, workDirs...)
	progs, err := Resolve([]string{name}, op)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", name, err)
	}
	g, err := New(Options{
		Module:   "test/helper",
		Programs: progs,
		Env:      append([]string{helperVar}, env...),
		WorkDirs: workDirs,
		Operator: op,
		Recorder: rec,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g, name
}

// callCtx is a context carrying a command name, bounded so that a broken
// test cannot hang.
func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return sandbox.WithCall(ctx, &sandbox.Call{Module: "test/mod", Command: "cmd"})
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// realPath resolves symlinks or fails the test.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
