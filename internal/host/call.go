package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// ErrorKind classifies a failed call.
type ErrorKind string

// The kinds of call failure.
const (
	KindCommand  ErrorKind = "command"  // the guest returned an error
	KindUnknown  ErrorKind = "unknown"  // no such command
	KindInput    ErrorKind = "input"    // the input was refused before the guest ran
	KindBusy     ErrorKind = "busy"     // the caller's context ended while waiting for a slot
	KindTimeout  ErrorKind = "timeout"  // the call's deadline passed
	KindCrash    ErrorKind = "crash"    // the guest trapped or exited
	KindFault    ErrorKind = "fault"    // the guest passed a bad pointer or length to a host call
	KindInternal ErrorKind = "internal" // the station failed
)

// CallError is the error a failed call returns. It always names the module.
type CallError struct {
	Module    string
	Command   string
	Kind      ErrorKind
	Msg       string
	Violation *sandbox.Violation // the first denial during the call, if any
	// Limit is the first refusal over a limit during the call, if any:
	// which module, which limit.
	Limit *sandbox.LimitError
}

// Error renders the failure; a denial that made the call fail comes first,
// because that is what the operator needs to see.
func (e *CallError) Error() string {
	if e.Violation != nil {
		if e.Msg != "" && !strings.Contains(e.Msg, e.Violation.Target) {
			return e.Violation.Error() + " (module reported: " + e.Msg + ")"
		}
		return e.Violation.Error()
	}
	if l := e.Limit; l != nil {
		switch {
		case l.Key != "" && strings.Contains(e.Msg, l.Key):
			// The message says what raises the limit already (out of memory).
		case !strings.Contains(e.Msg, l.Reason):
			return fmt.Sprintf("module %s: %s: %s (%s)", e.Module, e.Command, e.Msg, l.Error())
		default:
			// The message is the refusal's reason: add the limit and its key.
			return fmt.Sprintf("module %s: %s: %s%s", e.Module, e.Command, e.Msg, l.Detail())
		}
	}
	return fmt.Sprintf("module %s: %s: %s", e.Module, e.Command, e.Msg)
}

// Unwrap exposes the violation to errors.As.
func (e *CallError) Unwrap() error {
	if e.Violation != nil {
		return e.Violation
	}
	if e.Limit != nil {
		return e.Limit
	}
	return nil
}

// callState is the per-call state of an instance: what the host functions
// may touch while a call is active. It is reset after each call.
type callState struct {
	// parent is the caller's context and deadline the call's; host calls
	// that wait use context(), made from both at the first that needs it.
	parent    context.Context
	deadline  time.Time
	ctx       context.Context
	cancel    context.CancelFunc
	call      *sandbox.Call // attribution of the call in progress; nil between calls
	bufs      [MaxBuffers][]byte
	live      [MaxBuffers]bool
	output    []byte
	outputErr string // output_set was refused: a CallOK becomes a failure
	violation *sandbox.Violation
	limit     *sandbox.LimitError // the first refusal over a limit this call
	fault     string
	logLines  int // log records this call; over MaxLogLinesPerCall they are dropped
	logBytes  int
	bufBytes  int // bytes held in live buffers
	bufBudget int // the module's bufBudget, set when the instance is created
}

// context returns the call's context: the caller's, ending at the call's
// deadline. Only host calls that wait (a request, a program, a sleep) need
// one, so most calls never make it.
func (st *callState) context() context.Context {
	if st.ctx == nil {
		st.ctx, st.cancel = context.WithDeadline(st.parent, st.deadline)
	}
	return st.ctx
}

func (st *callState) reset() {
	if st.cancel != nil {
		st.cancel()
	}
	st.parent, st.ctx, st.cancel = nil, nil, nil
	st.call = nil
	for i := range st.bufs {
		st.bufs[i] = nil
		st.live[i] = false
	}
	st.output = st.output[:0]
	if cap(st.output) > 64<<10 {
		st.output = nil // do not pin a huge output buffer in a pooled instance
	}
	st.outputErr = ""
	st.violation = nil
	st.limit = nil
	st.fault = ""
	st.logLines = 0
	st.logBytes = 0
	st.bufBytes = 0
}

// newBuf stores b and returns its handle (1-based), or 0 when the call has
// too many live buffers or they would hold more than the call's budget.
func (st *callState) newBuf(b []byte) uint32 {
	if st.bufBytes+len(b) > st.bufBudget {
		return 0
	}
	for i := range st.live {
		if !st.live[i] {
			st.live[i] = true
			st.bufs[i] = b
			st.bufBytes += len(b)
			return uint32(i + 1)
		}
	}
	return 0
}

func (st *callState) buf(h uint32) ([]byte, bool) {
	if h == 0 || h > MaxBuffers || !st.live[h-1] {
		return nil, false
	}
	return st.bufs[h-1], true
}

func (st *callState) free(h uint32) {
	if h != 0 && h <= MaxBuffers && st.live[h-1] {
		st.bufBytes -= len(st.bufs[h-1])
		st.live[h-1] = false
		st.bufs[h-1] = nil
	}
}

type instKey struct{}

// instanceFrom returns the instance a host function serves. Host functions
// are only reachable through a call (or an instance's start), and a dispatch
// always puts the instance in the context it passes to wazero.
func instanceFrom(ctx context.Context) *instance {
	inst, _ := ctx.Value(instKey{}).(*instance)
	return inst
}

func (m *Module) call(ctx context.Context, command string, input []byte) ([]byte, error) {
	fail := func(kind ErrorKind, format string, args ...any) error {
		return &CallError{Module: m.id, Command: command, Kind: kind, Msg: fmt.Sprintf(format, args...)}
	}
	ci := m.commandIndex(command)
	if ci < 0 {
		return nil, fail(KindUnknown, "no such command (commands: %s)", strings.Join(m.commands, ", "))
	}
	call := &sandbox.Call{Module: m.id, Command: command, Trace: sandbox.TraceFrom(ctx), Redact: sandbox.RedactFrom(ctx)}
	if len(input) > m.limits.MaxInput {
		e := m.overLimit("input", fmt.Sprintf("input of %d bytes exceeds the limit of %d", len(input), m.limits.MaxInput), int64(m.limits.MaxInput), "limits.max_input")
		m.rec.Record(e.Decision(call))
		return nil, &CallError{Module: m.id, Command: command, Kind: KindInput, Msg: e.Reason, Limit: e}
	}
	if err := m.lim.acquire(ctx); err != nil {
		return nil, fail(KindBusy, "waiting for a free slot (concurrency %d): %v", m.limits.Concurrency, err)
	}
	defer m.lim.release()
	// In the module's slot: the check's cost is bounded (manifest.MaxSchemaWork),
	// and the module's concurrency bounds how many run at once.
	if schema := m.inputSchemas[ci]; schema != nil {
		if msg := checkInput(schema, input); msg != "" {
			return nil, fail(KindInput, "the input does not match the command's input_schema: %s", msg)
		}
	}

	if err := ctx.Err(); err != nil {
		return nil, m.endedError(command, err) // the caller gave up while it waited for a slot
	}
	deadline := time.Now().Add(m.limits.Timeout)
	inst := m.pool.get()
	for inst != nil && inst.mod.IsClosed() {
		inst.close()        // closed behind our back (a deadline that fired as a call returned)
		inst = m.pool.get() // its files are closed now too
	}
	if inst == nil || m.limits.Fresh {
		var err error
		inst, err = m.instantiate(ctx, deadline)
		if err != nil {
			if ctx.Err() != nil {
				return nil, m.endedError(command, ctx.Err()) // the caller gave up while it started
			}
			return nil, &CallError{Module: m.id, Command: command, Kind: KindCrash, Msg: err.Error()}
		}
	}

	ctx = sandbox.WithCall(ctx, call)
	st := &inst.st
	st.violation, st.limit, st.fault = nil, nil, "" // nothing from the start function is this call's
	st.parent, st.deadline = ctx, deadline
	st.call = call
	cmdH := st.newBuf(m.commandBytes[ci]) // shared and never written: buf_read only copies out
	var inH uint32
	if len(input) > 0 {
		inH = st.newBuf(input)
	}
	inst.gctx.Context, inst.gctx.inst = ctx, inst
	stack := inst.stack[:] // the instance's own: no allocation per call
	stack[0], stack[1] = uint64(cmdH), uint64(inH)
	inst.memory.reset() // a grow refused in the start function is not this call's
	var callErr error
	ended := inst.wd.arm(ctx, deadline)
	ran := ended == nil // else the caller gave up before the guest ran
	if ran {
		callErr = inst.fn.CallWithStack(&inst.gctx, stack)
		ended = inst.wd.disarm()
	}
	inst.gctx.Context, inst.gctx.inst = nil, nil
	oom := m.outOfMemory(inst, call)
	if oom != nil && st.limit == nil {
		st.limit = oom
	}

	var out []byte
	var err error
	switch {
	case !ran:
		err = m.endedError(command, ended) // the instance is as it was
	case callErr != nil && ended != nil:
		inst.dead = true
		err = m.endedError(command, ended)
	case callErr != nil:
		inst.dead = true
		err = m.trapError(command, callErr, inst, oom)
	case st.fault != "":
		inst.dead = true // its memory is suspect
		err = &CallError{Module: m.id, Command: command, Kind: KindFault, Msg: st.fault}
	default:
		switch uint32(stack[0]) {
		case abi.CallOK:
			switch {
			case st.outputErr != "":
				err = &CallError{Module: m.id, Command: command, Kind: KindCommand, Msg: st.outputErr}
			case len(st.output) == 0:
				out = []byte("null")
			case !json.Valid(st.output):
				err = &CallError{Module: m.id, Command: command, Kind: KindCommand, Msg: "the module returned a result that is not JSON"}
			default:
				out = append([]byte(nil), st.output...)
			}
		case abi.CallUnknownCommand:
			err = &CallError{Module: m.id, Command: command, Kind: KindUnknown, Msg: guestText(st.output, "the module does not implement this command")}
		case abi.CallFailed:
			err = &CallError{Module: m.id, Command: command, Kind: KindCommand, Msg: guestText(st.output, "failed")}
		default:
			inst.dead = true
			err = &CallError{Module: m.id, Command: command, Kind: KindCrash, Msg: fmt.Sprintf("%s returned %d, which is not a defined result", abi.ExportCall, uint32(stack[0]))}
		}
	}
	if ce, ok := err.(*CallError); ok {
		ce.Violation, ce.Limit = st.violation, st.limit
	}
	if st.logLines > MaxLogLinesPerCall {
		m.log.Warn(fmt.Sprintf("module %s: %s: dropped %d log lines over the limit of %d per call", m.id, command, st.logLines-MaxLogLinesPerCall, MaxLogLinesPerCall))
	}
	if inst.mod.IsClosed() {
		inst.dead = true // the watchdog may have closed it as it returned
	}
	if inst.fsys != nil && fsgate.OpenIn(inst.fsys) > 0 {
		// It kept files open past its call: close it, and them, rather
		// than pool descriptors no call is using (RATIONALE.md, "Why is an
		// instance that holds files not pooled?").
		inst.dead = true
	}
	st.reset()

	if inst.dead || m.limits.Fresh {
		inst.close()
	} else {
		m.pool.put(inst)
	}
	return out, err
}

// endedError is the error of a call that the watchdog ended: at its
// deadline (context.DeadlineExceeded), or because its caller gave up (the
// caller's context's error).
func (m *Module) endedError(command string, reason error) error {
	e := &CallError{Module: m.id, Command: command, Kind: KindTimeout}
	if errors.Is(reason, context.Canceled) {
		e.Msg = "canceled"
	} else {
		e.Msg = fmt.Sprintf("did not finish within its deadline (%s); the instance was stopped", roundDur(m.limits.Timeout))
	}
	return e
}

// trapError is the error of a call that trapped or exited; oom is the
// refusal of a grow past the memory limit earlier in the call, if any.
func (m *Module) trapError(command string, callErr error, inst *instance, oom *sandbox.LimitError) error {
	e := &CallError{Module: m.id, Command: command, Kind: KindCrash}
	trap := describeTrap(callErr, inst.err.tail())
	if oom != nil {
		// The trap follows a grow refused at the limit: a Go guest's runtime
		// aborts (unreachable), others trap or exit. Say what happened.
		trap = m.oomText(oom, trap)
	}
	e.Msg = trap + "; the instance was discarded"
	return e
}

func roundDur(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(time.Millisecond)
	}
	return d
}

// guestText renders a guest-provided error message safely.
func guestText(b []byte, def string) string {
	if len(b) == 0 {
		return def
	}
	if len(b) > 4096 {
		b = b[:4096]
	}
	return sandbox.Sanitize(string(b))
}

// bufBudget is how many bytes one call's live buffers may hold: the module's
// memory limit (so host memory held for a guest scales with what the
// operator granted it), at least enough for one full input or result
// document, at most MaxBufferBytes. It is fixed when the module is loaded.
func bufBudget(l Limits) int {
	b := int(min(l.MemoryBytes, MaxBufferBytes))
	return max(b, l.MaxInput+64<<10, minBufferBudget)
}

// minBufferBudget fits one maximal HTTP response document (16 MiB of body,
// base64-encoded, plus headers).
const minBufferBudget = 24 << 20

// commandIndex returns the index of the manifest command name, or -1.
func (m *Module) commandIndex(name string) int {
	for i, c := range m.commands {
		if c == name {
			return i
		}
	}
	return -1
}

// checkInput checks a call's input against its command's input schema and
// returns what is wrong with it ("" when nothing is). An empty input is the
// empty object.
func checkInput(schema *manifest.CommandSchema, input []byte) string {
	var v any = map[string]any{}
	if len(bytes.TrimSpace(input)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(input))
		if err := dec.Decode(&v); err != nil {
			return "not JSON: " + err.Error()
		}
		if dec.More() {
			return "more than one JSON value"
		}
	}
	if err := schema.Validate(v); err != nil {
		return sandbox.SanitizeLimit(err.Error(), 1024)
	}
	return ""
}
