// Command guest is the probe module (package probe describes it): its
// command run performs a list of actions and returns the result of each. It
// is built for the station with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared .
//
// The tests supply its manifest. Build tags make variants:
//
//   - probe_extra_import also imports station.exec, which the station never
//     offers, so instantiating it must fail cleanly;
//   - probe_no_network leaves out everything that imports
//     station.http_request, which the station links only into modules with
//     a network allowlist: this variant loads under any manifest;
//   - probe_exec and probe_llm add the exec and llm actions, which import
//     station.process_run and station.llm_complete: these variants load only
//     where the manifest grants subprocess or llm.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk"
)

func init() { sdk.Handle(probe.Command, run) }

func main() {}

func run(ctx context.Context, in probe.Input) (probe.Results, error) {
	out := probe.Results{Results: make([]probe.Result, 0, len(in.Actions))}
	for _, a := range in.Actions {
		out.Results = append(out.Results, do(ctx, a))
	}
	return out, nil
}

// do performs one action.
func do(ctx context.Context, a probe.Action) probe.Result {
	r := probe.Result{Op: a.Op}
	var err error
	switch a.Op {
	case probe.OpHTTP:
		err = doHTTP(ctx, a, &r)
	case probe.OpSpawn:
		err = spawn(ctx, a, &r)
	case probe.OpCollect:
		r.Results = collect(time.Duration(a.WaitMS) * time.Millisecond)
	case probe.OpSeq:
		for _, b := range a.Actions {
			r.Results = append(r.Results, do(ctx, b))
		}
	case probe.OpRaw:
		err = raw(a, &r)
	case probe.OpAlloc:
		alloc(a.Bytes, a.Keep)
	case probe.OpLoop:
		loop()
	case probe.OpPanic:
		panic(a.Message)
	case probe.OpTrap:
		err = trap()
	case probe.OpExit:
		os.Exit(a.Code)
	case probe.OpOutput:
		r.Data = strings.Repeat("x", max(a.Bytes, 0))
	case probe.OpSleep:
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
	case probe.OpLog:
		var l slog.Level
		if err = l.UnmarshalText([]byte(cmp.Or(a.Level, "info"))); err == nil {
			sdk.Log(l, a.Message)
		}
	case probe.OpPrint:
		switch a.Stream {
		case "stdout":
			_, err = fmt.Fprintln(os.Stdout, a.Message)
		case "stderr":
			_, err = fmt.Fprintln(os.Stderr, a.Message)
		default:
			err = fmt.Errorf("print: unknown stream %q", a.Stream)
		}
	case probe.OpEnv:
		r.Args, r.Env = os.Args, os.Environ()
	case probe.OpRead, probe.OpWrite, probe.OpAppend, probe.OpTruncate, probe.OpRemove, probe.OpRename,
		probe.OpMkdir, probe.OpRmdir, probe.OpSymlink, probe.OpLink, probe.OpChtimes, probe.OpReadlink, probe.OpList,
		probe.OpHold, probe.OpCreateMany:
		err = file(a, &r)
	case probe.OpOpenat:
		err = openat(a)
	case probe.OpExec:
		err = doExec(ctx, a, &r)
	case probe.OpLLM:
		err = doLLM(ctx, a, &r)
	default:
		err = fmt.Errorf("unknown op %q", a.Op)
	}
	if err != nil {
		r.Error = toError(err)
	} else {
		r.OK = true
	}
	return r
}

// toError describes err, with the fields of a station error if it is one.
func toError(err error) *probe.Error {
	var he *sdk.HostError
	if errors.As(err, &he) {
		return &probe.Error{Status: int32(he.Status), Code: he.Code, Capability: he.Capability, Target: he.Target, Reason: he.Reason, Message: he.Message}
	}
	return &probe.Error{Message: err.Error()}
}

// background holds the results of spawned actions until a collect.
var background struct {
	sync.Mutex
	next int
	done []probe.Result
}

func spawn(ctx context.Context, a probe.Action, r *probe.Result) error {
	if a.Action == nil {
		return errors.New("spawn: no action")
	}
	child := *a.Action
	if a.Wait {
		ch := make(chan probe.Result)
		go func() { ch <- do(ctx, child) }()
		res := <-ch
		r.Result = &res
		return nil
	}
	background.Lock()
	background.next++
	id := background.next
	background.Unlock()
	r.ID = id
	go func() {
		// Not the call's context: the action may outlive the call.
		res := do(context.Background(), child)
		res.ID = id
		background.Lock()
		background.done = append(background.done, res)
		background.Unlock()
	}()
	return nil
}

// collect returns and forgets the finished background results, waiting up
// to wait for at least one.
func collect(wait time.Duration) []probe.Result {
	deadline := time.Now().Add(wait)
	for {
		background.Lock()
		done := background.done
		background.done = nil
		background.Unlock()
		if len(done) > 0 || !time.Now().Before(deadline) {
			return done
		}
		time.Sleep(time.Millisecond)
	}
}

// kept holds allocations made with keep.
var kept [][]byte

// held are the files hold opened, never closed.
var held []*os.File

func alloc(n int, keep bool) {
	b := make([]byte, max(n, 0))
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if keep {
		kept = append(kept, b)
	}
}

// spins is written by loop so the loop has an effect.
//
//lint:ignore U1000 only written, on purpose: a loop with an effect the compiler cannot drop
var spins uint64

func loop() {
	for {
		spins++
	}
}

func file(a probe.Action, r *probe.Result) error {
	switch a.Op {
	case probe.OpRead:
		b, err := os.ReadFile(a.Path)
		r.Data = string(b[:min(len(b), probe.MaxBody)])
		return err
	case probe.OpWrite:
		return os.WriteFile(a.Path, []byte(a.Data), 0o644)
	case probe.OpAppend:
		f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(a.Data)
		return errors.Join(err, f.Close())
	case probe.OpTruncate:
		return os.Truncate(a.Path, int64(a.Bytes))
	case probe.OpRemove:
		return os.Remove(a.Path)
	case probe.OpRename:
		return os.Rename(a.Path, a.To)
	case probe.OpMkdir:
		return os.Mkdir(a.Path, 0o755)
	case probe.OpRmdir:
		return os.Remove(a.Path)
	case probe.OpSymlink:
		return os.Symlink(a.To, a.Path)
	case probe.OpLink:
		return os.Link(a.Path, a.To)
	case probe.OpChtimes:
		return os.Chtimes(a.Path, time.Unix(0, 0), time.Unix(0, 0))
	case probe.OpReadlink:
		target, err := os.Readlink(a.Path)
		r.Data = target
		return err
	case probe.OpHold:
		// Opened files stay open in the instance, across calls: the
		// station must bound them and close them when it drops the
		// instance.
		n := 0
		defer func() { r.Data = fmt.Sprint(n) }()
		for ; n < a.Bytes; n++ {
			f, err := os.Open(a.Path)
			if err != nil {
				return err
			}
			held = append(held, f)
		}
		return nil
	case probe.OpCreateMany:
		n := 0
		defer func() { r.Data = fmt.Sprint(n) }()
		for ; n < a.Bytes; n++ {
			f, err := os.OpenFile(fmt.Sprintf("%s/f%d", a.Path, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		}
		return nil
	case probe.OpList:
		es, err := os.ReadDir(a.Path)
		names := make([]string, len(es))
		for i, e := range es {
			names[i] = e.Name()
		}
		r.Data = strings.Join(names, ",") // os.ReadDir sorts
		return err
	}
	return fmt.Errorf("unknown op %q", a.Op)
}
