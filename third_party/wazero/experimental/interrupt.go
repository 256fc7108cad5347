package experimental

import (
	"context"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/internal/expctxkeys"
)

// WithInlineTerminationCheck returns a context for
// wazero.NewRuntimeWithConfig. A compiler runtime made with it and
// RuntimeConfig.WithCloseOnContextDone(true) compiles, at every loop
// header and function entry, a load of the module's closed word and of the
// goroutine's stack guard and a branch, instead of a call into Go at every
// loop header: guest code runs at close to the speed it has without
// WithCloseOnContextDone, and returns to Go only when the module is closed
// (a done context, Close, Terminate) or the Go runtime asks the goroutine
// to stop (a preemption, a stop-the-world). A function's entry is checked
// too, so code without loops that runs for ever in calls (a recursion that
// fans out) stops as well.
//
// A done context still closes the module as documented on
// WithCloseOnContextDone. A context that is never done (context.Background,
// context.WithoutCancel) starts no watcher goroutine for the call: the
// embedder then ends a call with Terminate, from a timer of its own.
//
// This is a patch of the station's copy of wazero; upstream has no such
// option.
func WithInlineTerminationCheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, expctxkeys.InlineTerminationCheckKey{}, true)
}

// terminator is implemented by the modules this runtime instantiates.
type terminator interface {
	TerminateExecution(exitCode uint32) bool
}

// Terminate closes mod with exitCode the way a done context does under
// WithCloseOnContextDone: a running call returns a *sys.ExitError with
// exitCode at its next loop header, and the module's resources are closed
// as it unwinds; a module that was not running keeps its resources (files)
// open until the embedder closes them (Close does nothing more once the
// module is closed). It is safe to call from any goroutine. Terminate
// reports whether this call closed mod (false if it was closed already, or
// is not a module this runtime instantiated).
func Terminate(mod api.Module, exitCode uint32) bool {
	t, ok := mod.(terminator)
	return ok && t.TerminateExecution(exitCode)
}
