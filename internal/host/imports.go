package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/llm"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// The station imports are registered with the stack-based API
// (WithGoModuleFunction): no reflection per call, see BENCHMARKS.md.
// Every argument is hostile: handles are looked up in the call's own table,
// lengths are checked against limits before anything is allocated, and
// pointers are checked by api.Memory's bounds-checked Read/Write.

// offered is the set of station imports linked into this module. A capability
// that is not granted has no import at all.
func (m *Module) offered() map[string]bool { return offeredImports(m.exec != nil, m.llm != nil) }

// offeredImports is the set of station imports a module is offered: every
// one stationImports lists without a grant, and the granted ones.
func offeredImports(subprocess, llm bool) map[string]bool {
	o := make(map[string]bool, len(stationImports))
	for name, imp := range stationImports {
		switch imp.grant {
		case "":
			o[name] = true
		case "requires.subprocess":
			o[name] = subprocess
		case "requires.llm":
			o[name] = llm
		}
	}
	return o
}

// link instantiates this module's "station" host module. Its functions close
// over m: the policy is bound here, once.
func (m *Module) link(ctx context.Context) error {
	fns := map[string]api.GoModuleFunc{
		abi.ImportBufLen:      m.bufLen,
		abi.ImportBufRead:     m.bufRead,
		abi.ImportBufFree:     m.bufFree,
		abi.ImportOutputSet:   m.outputSet,
		abi.ImportLog:         m.logLine,
		abi.ImportHTTPRequest: m.httpRequest,
		abi.ImportProcessRun:  m.processRun,
		abi.ImportLLMComplete: m.llmComplete,
	}
	b := m.rt.NewHostModuleBuilder(abi.ImportModule)
	for name, offered := range m.offered() {
		if !offered {
			continue
		}
		imp := stationImports[name] // the signatures Inspect checks too
		b.NewFunctionBuilder().WithGoModuleFunction(fns[name], imp.params, imp.results).Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// active returns the calling instance's state while a call of this module is
// running, or nil (during _initialize, or if anything is inconsistent).
func (m *Module) active(ctx context.Context, mod api.Module) *instance {
	inst := instanceFrom(ctx)
	if inst == nil || inst.m != m || inst.mod != mod || inst.st.call == nil {
		return nil
	}
	return inst
}

// GuestLogMessage is the message of every log record that carries a guest's
// text (in the "text" attribute, with "module" and "command").
const GuestLogMessage = "guest log"

// sanitizeLog escapes control bytes, C1 controls, invalid UTF-8 and bidi
// overrides in a guest log line of at most MaxLogLine bytes. It keeps the
// whole line: an escape is at most four times the bytes it replaces, so the
// bound is never reached and the escaping cannot cut a line silently.
func sanitizeLog(b []byte) string { return sandbox.SanitizeLimit(string(b), maxEscapedLogLine) }

// maxEscapedLogLine bounds an escaped guest log line: four bytes for each
// byte of a MaxLogLine line, and room for SanitizeLimit's "...".
const maxEscapedLogLine = 4*MaxLogLine + 3

func negStatus(s abi.Status) uint64 { return uint64(uint32(-int32(s))) }

// fault records a bad pointer or length: the guest gets StatusFault, the
// audit log gets a host-boundary denial, and the call fails.
func (m *Module) fault(inst *instance, fn string, ptr, length uint32) {
	target := fmt.Sprintf("%s(ptr=%#x, len=%d)", fn, ptr, length)
	reason := fmt.Sprintf("is outside guest memory (%d bytes)", inst.mem.Size())
	m.rec.Record(sandbox.Decision{Time: time.Now(), Module: m.id, Command: inst.st.call.CommandName(), Trace: inst.st.call.TraceName(), Capability: sandbox.Host, Target: target, Reason: reason})
	if inst.st.fault == "" {
		inst.st.fault = fmt.Sprintf("host call %s: pointer %#x and length %d are outside guest memory (%d bytes)", fn, ptr, length, inst.mem.Size())
	}
}

// buf_len(h i32) -> i32
func (m *Module) bufLen(ctx context.Context, mod api.Module, stack []uint64) {
	inst := m.active(ctx, mod)
	if inst == nil {
		stack[0] = uint64(0xffffffff)
		return
	}
	b, ok := inst.st.buf(uint32(stack[0]))
	if !ok {
		stack[0] = uint64(0xffffffff)
		return
	}
	stack[0] = uint64(uint32(len(b)))
}

// buf_read(h i32, ptr i32, len i32) -> i32
func (m *Module) bufRead(ctx context.Context, mod api.Module, stack []uint64) {
	h, ptr, n := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	inst := m.active(ctx, mod)
	if inst == nil {
		stack[0] = negStatus(abi.StatusUnavailable)
		return
	}
	b, ok := inst.st.buf(h)
	if !ok {
		stack[0] = negStatus(abi.StatusInvalid)
		return
	}
	if uint64(n) < uint64(len(b)) {
		stack[0] = negStatus(abi.StatusTooLarge)
		return
	}
	if !inst.mem.Write(ptr, b) {
		m.fault(inst, abi.ImportBufRead, ptr, uint32(len(b)))
		stack[0] = negStatus(abi.StatusFault)
		return
	}
	inst.st.free(h)
	stack[0] = uint64(uint32(len(b)))
}

// buf_free(h i32)
func (m *Module) bufFree(ctx context.Context, mod api.Module, stack []uint64) {
	if inst := m.active(ctx, mod); inst != nil {
		inst.st.free(uint32(stack[0]))
	}
}

// output_set(ptr i32, len i32) -> i32
func (m *Module) outputSet(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	inst := m.active(ctx, mod)
	if inst == nil {
		stack[0] = negStatus(abi.StatusUnavailable)
		return
	}
	if int64(n) > int64(m.limits.MaxOutput) {
		stack[0] = negStatus(abi.StatusTooLarge)
		e := m.exceed(&inst.st, abi.ImportOutputSet, fmt.Sprintf("the module's result of %d bytes exceeds the limit of %d", n, m.limits.MaxOutput), int64(m.limits.MaxOutput), "limits.max_output")
		inst.st.outputErr = e.Reason
		return
	}
	b, ok := inst.mem.Read(ptr, n)
	if !ok {
		m.fault(inst, abi.ImportOutputSet, ptr, n)
		stack[0] = negStatus(abi.StatusFault)
		return
	}
	inst.st.output = append(inst.st.output[:0], b...)
	inst.st.outputErr = ""
	stack[0] = 0
}

// log(level i32, ptr i32, len i32) -> i32
func (m *Module) logLine(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	inst := m.active(ctx, mod)
	if inst == nil {
		stack[0] = negStatus(abi.StatusUnavailable)
		return
	}
	if n > MaxLogLine {
		m.exceed(&inst.st, abi.ImportLog, fmt.Sprintf("line of %d bytes exceeds the limit of %d; nothing was logged", n, MaxLogLine), MaxLogLine, "")
		stack[0] = negStatus(abi.StatusTooLarge)
		return
	}
	b, ok := inst.mem.Read(ptr, n)
	if !ok {
		m.fault(inst, abi.ImportLog, ptr, n)
		stack[0] = negStatus(abi.StatusFault)
		return
	}
	inst.st.logLines++
	if inst.st.logLines > MaxLogLinesPerCall {
		stack[0] = 0 // dropped, and counted in the warning at the end of the call
		return
	}
	lvl := slog.LevelInfo
	switch level {
	case abi.LogDebug:
		lvl = slog.LevelDebug
	case abi.LogWarn:
		lvl = slog.LevelWarn
	case abi.LogError:
		lvl = slog.LevelError
	}
	// The guest's text is never the message: a module must not be able to
	// write a line that reads like the station's own.
	m.log.Log(ctx, lvl, GuestLogMessage, "command", inst.st.call.CommandName(), "text", inst.st.call.Scrub(sanitizeLog(b)))
	stack[0] = 0
}

// http_request(ptr i32, len i32) -> i64
func (m *Module) httpRequest(ctx context.Context, mod api.Module, stack []uint64) {
	docCall(m, ctx, mod, stack, abi.ImportHTTPRequest, httpShape, func(ctx context.Context, req *abi.HTTPRequest) (any, error) {
		return m.net.Do(ctx, req)
	})
}

// process_run(ptr i32, len i32) -> i64, linked only when subprocess is granted.
func (m *Module) processRun(ctx context.Context, mod api.Module, stack []uint64) {
	docCall(m, ctx, mod, stack, abi.ImportProcessRun, processShape, func(ctx context.Context, req *abi.ProcessRequest) (any, error) {
		return m.exec.Run(ctx, req)
	})
}

// The shapes of the request documents, for checkDoc.
var (
	httpShape    = shapeOf(reflect.TypeFor[abi.HTTPRequest]())
	processShape = shapeOf(reflect.TypeFor[abi.ProcessRequest]())
	llmShape     = shapeOf(reflect.TypeFor[abi.LLMRequest]())
)

// docCall is the one shape of every host call that takes a JSON request
// document and returns a document in a buffer: size check before reading,
// bounds-checked read (a fault otherwise), strict decode (shape is Req's
// docShape), the gate, and the packed result. Req is the request document
// type. Every limit it meets is a recorded *sandbox.LimitError.
func docCall[Req any](m *Module, ctx context.Context, mod api.Module, stack []uint64, name string, shape *docShape, gate func(context.Context, *Req) (any, error)) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	inst := m.active(ctx, mod)
	if inst == nil {
		// No call is active (the guest's start function): there is no
		// buffer table to put an error in.
		stack[0] = abi.Pack(abi.StatusUnavailable, 0)
		return
	}
	st := &inst.st
	if int64(n) > int64(m.limits.MaxArg) {
		e := m.exceed(st, name, fmt.Sprintf("request document of %d bytes exceeds the limit of %d", n, m.limits.MaxArg), int64(m.limits.MaxArg), "limits.max_request")
		stack[0] = m.errResult(st, abi.StatusTooLarge, errorDoc(e))
		return
	}
	raw, ok := inst.mem.Read(ptr, n)
	if !ok {
		m.fault(inst, name, ptr, n)
		stack[0] = m.errResult(st, abi.StatusFault, &abi.Error{Message: "request pointer and length are outside guest memory"})
		return
	}
	var req Req
	// Unmarshal copies out of guest memory; the guest cannot change the
	// request after this point.
	// It also refuses trailing data after the document; checkDoc then
	// refuses unknown fields, keys in another case and duplicate keys.
	if err := json.Unmarshal(raw, &req); err != nil {
		stack[0] = m.errResult(st, abi.StatusInvalid, &abi.Error{Message: "request document: " + err.Error()})
		return
	}
	if err := checkDoc(raw, shape); err != nil {
		stack[0] = m.errResult(st, abi.StatusInvalid, &abi.Error{Message: "request document: " + err.Error()})
		return
	}
	resp, err := gate(st.context(), &req)
	if err != nil {
		stack[0] = m.errResult(st, statusOf(err), errorDoc(err))
		var v *sandbox.Violation
		var le *sandbox.LimitError
		switch {
		case errors.As(err, &v):
			if st.violation == nil {
				st.violation = v
			}
		case errors.As(err, &le):
			if st.limit == nil {
				st.limit = le // the gate recorded it
			}
		}
		return
	}
	doc, err := json.Marshal(resp)
	if err != nil {
		stack[0] = m.errResult(st, abi.StatusFailed, &abi.Error{Message: "encode response: " + err.Error()})
		return
	}
	h := st.newBuf(doc)
	if h == 0 {
		// Too many live buffers, or too many bytes held for this call:
		// the guest must read or free its earlier results first.
		live := 0
		for _, l := range st.live {
			if l {
				live++
			}
		}
		m.exceed(st, name, fmt.Sprintf("result document of %d bytes does not fit: %d live buffers hold %d bytes, and a call may hold at most %d buffers and %d bytes (the result was dropped)", len(doc), live, st.bufBytes, MaxBuffers, st.bufBudget), int64(st.bufBudget), "")
		stack[0] = abi.Pack(abi.StatusTooLarge, 0)
		return
	}
	stack[0] = abi.Pack(abi.StatusOK, h)
}

// errResult stores an Error document and packs the result. If the buffer
// table is full the guest still learns the status.
func (m *Module) errResult(st *callState, s abi.Status, e *abi.Error) uint64 {
	e.Code = s.String()
	doc, _ := json.Marshal(e)
	return abi.Pack(s, st.newBuf(doc))
}

// exceed records a refusal over one of the host boundary's limits, of limit
// bytes, and returns it; the first of a call is attached to the call's
// error. key is the manifest key that sets the limit ("" for the station's
// own limits).
func (m *Module) exceed(st *callState, target, reason string, limit int64, key string) *sandbox.LimitError {
	e := m.overLimit(target, reason, limit, key)
	m.rec.Record(e.Decision(st.call))
	if st.limit == nil {
		st.limit = e
	}
	return e
}

// overLimit is the refusal of a host-boundary limit of limit bytes that the
// manifest's key sets (none: ""). At the station's maximum the key cannot
// raise it, and the error does not say it can.
func (m *Module) overLimit(target, reason string, limit int64, key string) *sandbox.LimitError {
	e := sandbox.Exceed(m.id, sandbox.Host, target, reason, limit, nil)
	e.Bytes = true
	if key != "" && limit < manifest.MaxDocument {
		e.Key, e.KeyIn = key, sandbox.InManifest
	}
	return e
}

func statusOf(err error) abi.Status {
	var v *sandbox.Violation
	var le *sandbox.LimitError
	switch {
	case errors.As(err, &v):
		return abi.StatusDenied
	case errors.As(err, &le):
		return abi.StatusTooLarge
	case errors.Is(err, netgate.ErrInvalid), errors.Is(err, execgate.ErrInvalid), errors.Is(err, llm.ErrInvalid):
		return abi.StatusInvalid
	case errors.Is(err, netgate.ErrTooLarge), errors.Is(err, execgate.ErrTooLarge):
		return abi.StatusTooLarge
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return abi.StatusTimeout
	}
	return abi.StatusFailed
}

func errorDoc(err error) *abi.Error {
	var v *sandbox.Violation
	if errors.As(err, &v) {
		return &abi.Error{Capability: string(v.Capability), Target: v.Target, Reason: v.Reason, Message: v.Error()}
	}
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		return &abi.Error{Capability: string(le.Capability), Target: le.Target, Reason: le.Reason, Message: le.Error()}
	}
	return &abi.Error{Message: err.Error()}
}
