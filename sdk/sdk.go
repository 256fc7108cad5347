// Package sdk is the Go SDK for Station modules: WebAssembly programs the
// station runs confined by their manifests. A module registers its commands
// in an init function and has an empty main:
//
//	package main
//
//	import (
//		"context"
//
//		"github.com/station-dev/station/sdk"
//	)
//
//	type greetIn struct{ Name string `json:"name"` }
//	type greetOut struct{ Greeting string `json:"greeting"` }
//
//	func greet(ctx context.Context, in greetIn) (greetOut, error) {
//		return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
//	}
//
//	func init() { sdk.Handle("greet", greet) }
//
//	func main() {}
//
// and is built as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o module.wasm .
//
// The package exports the functions the station calls (station_abi_1 and
// station_call, see docs/abi.md): it reads the command name and input from
// the station's buffers, runs the registered handler, and hands back its
// JSON result or its error. A handler that panics fails its call with the
// panic message; the instance stays usable.
//
// Network access goes through package shttp, whose *http.Client sends every
// request through the station's network gate. A request the module's
// manifest does not allow fails with a *HostError whose Denied method
// reports true.
//
// Outside the station (any GOOS but wasip1) the package compiles too, so a
// module's handlers can be unit-tested natively with Invoke.
//
// The package also exports station_describe, which `station module build`
// calls to learn the JSON Schemas of each command's input and result,
// derived from Handle's In and Out types (see Describe), and writes them
// into module.yaml: the station checks inputs against them, and MCP
// clients see them. Name fields with json tags and describe them with
// jsonschema tags:
//
//	type greetIn struct {
//		Name     string `json:"name" jsonschema:"who to greet"`
//		Language string `json:"language,omitempty"` // optional: omitempty
//	}
//
// # Version history
//
//   - ABI 1 (abi.Version): Handle, HandleRaw, Invoke, Log, Logger, HostError;
//     package shttp.
//   - Added within ABI 1: Describe and the station_describe export, used
//     at build time only (a module without it builds and runs as before).
package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A handler is one registered command.
type handler struct {
	name string
	// run runs the command. A typed command may append its result to out
	// (a buffer the caller lends it) and never keeps input; a raw command
	// (HandleRaw) owns input and returns a result it may keep.
	run func(ctx context.Context, input, out []byte) ([]byte, error)
	raw bool
	// in and out are a typed command's In and Out, whose JSON Schemas
	// Describe derives; nil for a raw command.
	in, out reflect.Type
}

// registry maps command names to commands. Registering copies the map, so a
// call reads it without a lock (registration happens in init functions,
// calls for the rest of the instance's life).
var registry struct {
	sync.Mutex // serializes registration
	commands   atomic.Pointer[map[string]*handler]
}

// Handle registers the command name. Its input (a JSON document) is decoded
// into an In strictly: an unknown field, a value of the wrong type or data
// after the document fail the call before fn runs. An empty input leaves In
// at its zero value. The Out that fn returns is encoded as the command's
// JSON result; an error fails the call with the error's text.
//
// Handle is meant to be called from an init function. It panics if name is
// empty or already registered.
func Handle[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error)) {
	if fn == nil {
		panic("sdk: Handle " + name + ": nil function")
	}
	// Plans for the JSON fast path (fastjson.go); nil: encoding/json only.
	inType, outType := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	inPlan, outPlan := planFor(inType), planFor(outType)
	register(&handler{name: name, in: inType, out: outType, run: func(ctx context.Context, input, buf []byte) ([]byte, error) {
		var in In
		if inPlan == nil || !decodeFast(input, unsafe.Pointer(&in), inPlan) {
			// A fresh value, so that encoding/json sees nothing the fast
			// path wrote, and in itself stays on the stack.
			p := new(In)
			if err := decodeInput(input, p); err != nil {
				return nil, err
			}
			in = *p
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		if outPlan != nil {
			if b, ok := encodeFast(buf[:0], unsafe.Pointer(&out), outPlan); ok {
				return b, nil
			}
		}
		return encodeOutput(out)
	}})
}

// HandleRaw registers the command name with a handler that receives the
// input bytes as the station passed them and returns the result bytes
// unchanged. The station expects a JSON document (or nothing) as a result.
// The input slice belongs to fn.
//
// HandleRaw is meant to be called from an init function. It panics if name is
// empty or already registered.
func HandleRaw(name string, fn func(ctx context.Context, input []byte) ([]byte, error)) {
	if fn == nil {
		panic("sdk: HandleRaw " + name + ": nil function")
	}
	register(&handler{name: name, raw: true, run: func(ctx context.Context, input, _ []byte) ([]byte, error) {
		return fn(ctx, input)
	}})
}

func register(c *handler) {
	if c.name == "" {
		panic("sdk: a command needs a name")
	}
	registry.Lock()
	defer registry.Unlock()
	next := map[string]*handler{}
	if cur := registry.commands.Load(); cur != nil {
		if _, dup := (*cur)[c.name]; dup {
			panic("sdk: command " + c.name + " registered twice")
		}
		maps.Copy(next, *cur)
	}
	next[c.name] = c
	registry.commands.Store(&next)
}

// ErrUnknownCommand is returned (wrapped) by Invoke for a command no handler
// is registered for.
var ErrUnknownCommand = errors.New("unknown command")

// Invoke runs the handler registered for command on input in-process, exactly
// as a call from the station would (strict input decoding, JSON encoding of
// the result, a panic turned into an error), and returns the result or the
// handler's error unchanged. It is the entry point for testing a module's
// commands with go test, natively:
//
//	out, err := sdk.Invoke(ctx, "greet", []byte(`{"name":"Ada"}`))
func Invoke(ctx context.Context, command string, input []byte) ([]byte, error) {
	return dispatch(ctx, command, input)
}

// dispatch is Invoke's path from a command name to its handler. station_call
// looks the command up itself (it reuses buffers across calls) and shares
// call.
func dispatch(ctx context.Context, command string, input []byte) (out []byte, err error) {
	var c *handler
	if cur := registry.commands.Load(); cur != nil {
		c = (*cur)[command]
	}
	if c == nil {
		return nil, unknownCommand(command)
	}
	return c.call(ctx, input, nil)
}

// call runs c, turning a panic into an error. A typed command may append its
// result to buf.
func (c *handler) call(ctx context.Context, input, buf []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			Log(slog.LevelError, "command panicked", "command", c.name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			out, err = nil, &panicError{value: r}
		}
	}()
	return c.run(ctx, input, buf)
}

func unknownCommand(command string) error {
	var names []string
	if cur := registry.commands.Load(); cur != nil {
		names = slices.Sorted(maps.Keys(*cur))
	}
	if len(names) == 0 {
		return fmt.Errorf("%w %q: this module registers no commands", ErrUnknownCommand, command)
	}
	return fmt.Errorf("%w %q (commands: %s)", ErrUnknownCommand, command, strings.Join(names, ", "))
}

// panicError is the error a handler's panic becomes.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// decodeInput decodes a command's input into v strictly.
func decodeInput(input []byte, v any) error {
	if len(bytes.TrimSpace(input)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %w", err)
	}
	if len(bytes.TrimSpace(input[dec.InputOffset():])) != 0 {
		return errors.New("invalid input: data after the JSON document")
	}
	return nil
}

// encodeOutput encodes a command's result as JSON, without escaping HTML
// characters and without a trailing newline.
func encodeOutput(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
