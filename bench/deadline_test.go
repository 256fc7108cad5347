package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// BenchmarkDeadline is what the per-call deadline costs wazero's compiled
// code, on the smallest Go guest: a call that does nothing, and a loop of
// 1000 iterations, each without and with WithCloseOnContextDone (and a
// context with a deadline per call). With it, wazero starts a goroutine per
// call and calls into Go at every loop header — and a Go guest has a loop
// header in every function that calls another (BENCHMARKS.md).
func BenchmarkDeadline(b *testing.B) {
	for _, deadline := range []bool{false, true} {
		name := map[bool]string{false: "none", true: "deadline"}[deadline]
		for _, c := range []struct {
			fn  string
			arg uint64
		}{{"nop", 0}, {"spin", 1000}} {
			b.Run(c.fn+"/"+name, func(b *testing.B) {
				fn := spinGuest(b, deadline, c.fn)
				ctx := context.Background()
				var stack [1]uint64
				for b.Loop() {
					cctx, cancel := ctx, context.CancelFunc(func() {})
					if deadline {
						cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
					}
					stack[0] = c.arg
					err := fn.CallWithStack(cctx, stack[:])
					cancel()
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func spinGuest(tb testing.TB, deadline bool, export string) api.Function {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(deadline))
	tb.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, guestBytes(tb, "spin"), wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		tb.Fatal(err)
	}
	return mod.ExportedFunction(export)
}
