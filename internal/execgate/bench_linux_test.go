package execgate

import (
	"context"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// BenchmarkPlainExec is the baseline: starting /bin/true with os/exec, no
// confinement at all.
func BenchmarkPlainExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun is a granted program through the gate: digest check,
// namespaces, the launcher and its Landlock and seccomp confinement, the
// group kill.
func BenchmarkRun(b *testing.B) {
	g := systemGate(b, nil, []string{"true"}, Options{Module: "bench/true"})
	ctx := sandbox.WithCall(context.Background(), &sandbox.Call{Module: "bench/true", Command: "bench"})
	req := &abi.ProcessRequest{Argv: []string{"true"}}
	for b.Loop() {
		if resp, err := g.Run(ctx, req); err != nil || resp.ExitCode != 0 {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkPrepare is building a gate's Landlock ruleset, which New does
// once and every child's launcher then enforces.
func BenchmarkPrepare(b *testing.B) {
	g := systemGate(b, nil, []string{"true"}, Options{Module: "bench/true"})
	scratch := b.TempDir()
	for b.Loop() {
		r, err := g.conf.prepare(scratch)
		if err != nil {
			b.Fatal(err)
		}
		if r != nil {
			unix.Close(r.fd)
		}
	}
	b.ReportMetric(float64(len(g.conf.readRoots)+len(g.conf.execRoots)), "rules")
}
