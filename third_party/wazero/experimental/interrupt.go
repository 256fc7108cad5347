package experimental

import (
	"context"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/internal/expctxkeys"
)

// WithInlineTerminationCheck returns a context for
// wazero.NewRuntimeWithConfig. A compiler runtime made with it and
// RuntimeConfig.WithCloseOnContextDone(true) compiles, at every loop
// header, a load of the module's interrupt flag and a branch, instead of a
// call into Go: guest code runs at the speed it has without
// WithCloseOnContextDone, and returns to Go only when the flag is raised.
//
// Closing a module from a done context still works as documented on
// WithCloseOnContextDone: the watcher closes the module and raises the
// flag. What the embedder takes on is the Go scheduler: code that never
// returns to Go can hold up the runtime's stop-the-world (a garbage
// collection waits for it). An embedder that runs long calls must call
// Interrupt on them periodically (every millisecond, say), and may then
// call them with a context that is never done (context.Background, or
// context.WithoutCancel), which starts no watcher goroutine, ending them
// with Terminate instead.
//
// This is a patch of the station's copy of wazero; upstream has no such
// option.
func WithInlineTerminationCheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, expctxkeys.InlineTerminationCheckKey{}, true)
}

// interrupter is implemented by the modules this runtime instantiates.
type interrupter interface {
	InterruptExecution()
	TerminateExecution(exitCode uint32) bool
}

// Interrupt makes code of mod that is running return to Go at its next loop
// header, where the goroutine yields (runtime.Gosched) and the code resumes.
// It is safe to call from any goroutine, at any time; a module that is not
// running takes the detour at the next loop header it reaches. Interrupt
// reports false if mod is not a module this runtime instantiated.
func Interrupt(mod api.Module) bool {
	i, ok := mod.(interrupter)
	if ok {
		i.InterruptExecution()
	}
	return ok
}

// Terminate closes mod with exitCode the way a done context does under
// WithCloseOnContextDone: a running call returns a *sys.ExitError with
// exitCode at its next loop header, and the module's resources are closed as it unwinds or by Close. It is
// safe to call from any goroutine. Terminate reports whether this call
// closed mod (false if it was closed already, or is not a module this
// runtime instantiated).
func Terminate(mod api.Module, exitCode uint32) bool {
	i, ok := mod.(interrupter)
	return ok && i.TerminateExecution(exitCode)
}
