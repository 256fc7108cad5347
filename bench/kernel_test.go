package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/station-dev/station/bench/kernels"
)

// kernelCommands are the kernels as the shared greet module declares them.
const kernelCommands = "{name: sha256}, {name: json}, {name: sort}, {name: loop}"

// BenchmarkKernel is module code at full speed: the compute kernels of
// bench/kernels (SHA-256 of 64 KiB, encoding/json decoding 10 KB, sorting
// 10,000 ints, a tight loop), the same Go code every way it runs, in one
// run. The rows:
//
//   - native: the kernel compiled for the host;
//   - wazero: the station guest's command in bare wazero, no deadline
//     (the speed the runtime has);
//   - wazero-deadline: the same with WithCloseOnContextDone and a
//     per-call context.WithTimeout, as upstream wazero makes a guest
//     killable (a call into Go at every loop header);
//   - wazero-inline: the same with the station's inline termination check
//     and no watcher (the patched wazero alone);
//   - station: station.Run of the command on the shared station
//     (dispatch, pool, watchdog, audit);
//   - extism: the Extism plug-in's export, with a manifest timeout.
//
// The target (BENCHMARKS.md): station within 1.2× of wazero.
func BenchmarkKernel(b *testing.B) {
	ctx := context.Background()
	for _, name := range kernels.Names {
		sum, _ := kernels.Run(name)
		want := kernels.Result(sum)
		command := []byte(name)
		b.Run(name+"/native", func(b *testing.B) {
			kernels.Run(name)
			var got uint32
			for b.Loop() {
				got, _ = kernels.Run(name)
			}
			if got != sum {
				b.Fatalf("got %d, want %d", got, sum)
			}
		})
		for _, mode := range []string{"wazero", "wazero-deadline", "wazero-inline"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				h, fn := kernelGuest(b, mode)
				var stack [2]uint64
				callRaw(ctx, h, fn, command, &stack) // the guest makes the kernel's input at its first run
				for b.Loop() {
					cctx, cancel := ctx, context.CancelFunc(nil)
					if mode == "wazero-deadline" {
						cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
					}
					out, err := callRaw(cctx, h, fn, command, &stack)
					if cancel != nil {
						cancel()
					}
					checkResult(b, out, err, want)
				}
			})
		}
		b.Run(name+"/station", func(b *testing.B) {
			st := sharedStation(b)
			st.Run(ctx, greetID, name, nil)
			for b.Loop() {
				out, err := st.Run(ctx, greetID, name, nil)
				checkResult(b, out, err, want)
			}
		})
		b.Run(name+"/extism", func(b *testing.B) {
			p := extismPlugin(b, 30*time.Second)
			p.CallWithContext(ctx, name, nil)
			for b.Loop() {
				rc, out, err := p.CallWithContext(ctx, name, nil)
				if rc != 0 {
					b.Fatalf("rc %d", rc)
				}
				checkResult(b, out, err, want)
			}
		})
	}
}

// kernelGuest instantiates the station guest in a bare wazero runtime:
// without a deadline ("wazero"), with WithCloseOnContextDone
// ("wazero-deadline"), or with it and the inline termination check
// ("wazero-inline").
func kernelGuest(tb testing.TB, mode string) (*rawHost, api.Function) {
	if mode == "wazero-deadline" {
		return rawGuest(tb, true)
	}
	if mode == "wazero" {
		return rawGuest(tb, false)
	}
	ctx := experimental.WithInlineTerminationCheck(context.Background())
	return rawGuestOn(tb, wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true)))
}
