package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// callers is how many goroutines per core call at once: with -cpu 2 that
// is eight, the default per-module concurrency, so no caller queues for a
// slot and the benchmark measures the pool and the cores, not the cap.
const callers = 4

// BenchmarkParallel is throughput with many concurrent callers: run it with
// -cpu 1,2 and compare (ns/op is wall time per call, so 1-core ns/op divided
// by 2-core ns/op is the speed-up).
func BenchmarkParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("one-module", func(b *testing.B) {
		st := sharedStation(b)
		ids := []string{greetID}
		warm(b, ids)
		b.SetParallelism(callers)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := checked(st.Run(ctx, greetID, "greet", in)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("four-modules", func(b *testing.B) {
		st := sharedStation(b)
		ids := append([]string{greetID}, otherIDs...)
		warm(b, ids)
		var next atomic.Uint32
		b.SetParallelism(callers)
		b.RunParallel(func(pb *testing.PB) {
			id := ids[int(next.Add(1))%len(ids)] // each caller sticks to one module
			for pb.Next() {
				if err := checked(st.Run(ctx, id, "greet", in)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// warm makes each module create the instances the benchmark's callers will
// use, so that starting instances (milliseconds each) is not timed.
func warm(b *testing.B, ids []string) {
	st := sharedStation(b)
	var wg sync.WaitGroup
	for range callers * 2 {
		for _, id := range ids {
			wg.Go(func() { st.Run(context.Background(), id, "greet", in) })
		}
	}
	wg.Wait()
	b.ResetTimer()
}

// checked is check for goroutines other than the benchmark's own.
func checked(out []byte, err error) error {
	if err != nil {
		return err
	}
	if !bytes.Equal(out, want) {
		return fmt.Errorf("got %s, want %s", out, want)
	}
	return nil
}
