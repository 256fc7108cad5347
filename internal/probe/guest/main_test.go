package main

import (
	"context"
	"testing"
	"time"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk"
)

// TestRunNative runs the probe's portable actions in-process; the wasm
// build is exercised by package probe's tests.
func TestRunNative(t *testing.T) {
	in := probe.Run(
		probe.Output(3),
		probe.Seq(probe.Sleep(time.Millisecond), probe.Output(1)),
		probe.Spawn(probe.Output(2), true),
		probe.Spawn(probe.Output(4), false),
		probe.Collect(5*time.Second),
		probe.Raw("buf_len", 1),
		probe.Action{Op: "nope"},
	)
	out, err := sdk.Invoke(context.Background(), probe.Command, in)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := probe.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 7 {
		t.Fatalf("got %d results, want 7: %s", len(rs), out)
	}
	if rs[0].Data != "xxx" || rs[1].Results[1].Data != "x" || rs[2].Result.Data != "xx" {
		t.Errorf("output, seq, spawn = %+v %+v %+v", rs[0], rs[1], rs[2])
	}
	if id := rs[3].ID; id == 0 || len(rs[4].Results) != 1 || rs[4].Results[0].ID != id || rs[4].Results[0].Data != "xxxx" {
		t.Errorf("spawn, collect = %+v %+v", rs[3], rs[4])
	}
	if rs[5].OK || rs[6].OK || rs[6].Error.Message != `unknown op "nope"` {
		t.Errorf("raw, unknown op = %+v %+v", rs[5], rs[6])
	}
	if _, err := sdk.Invoke(context.Background(), probe.Command, probe.Run(probe.Panic("boom"))); err == nil || err.Error() != "panic: boom" {
		t.Errorf("panic: error %v", err)
	}
}
