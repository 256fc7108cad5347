package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
)

// FuzzHostCallArguments calls every station import with arbitrary integer
// arguments (and an arbitrary request document) from inside a guest. Whatever
// they are, the station must not crash or hang, the call must either succeed
// or fail with a CallError naming the module, and the module must keep
// working.
func FuzzHostCallArguments(f *testing.F) {
	imports := []string{"buf_len", "buf_read", "buf_free", "output_set", "log", "http_request"}
	seeds := []struct {
		imp     uint8
		a, b, c uint32
		doc     string
	}{
		{0, 1, 0, 0, ""},
		{1, 1, 0xffffffff, 10, ""},
		{1, 0, 16, 1 << 31, ""},
		{2, 0xffffffff, 0, 0, ""},
		{3, 0xfffffff0, 64, 0, ""},
		{3, 16, 0x7fffffff, 0, ""},
		{4, 7, 0xffffffff, 100, ""},
		{5, 16, 0x7fffffff, 0, ""},
		{5, 0, 0, 0, `{"method":"GET","url":"https://evil.example/"}`},
		{5, 0, 0, 0, `{"method":"CONNECT","url":"https://127.0.0.1:1/","headers":{"Host":["x"]}}`},
		{5, 0, 0, 0, `{"url":"\u0000"}`},
		{5, 0, 0, 0, `[`},
	}
	for _, s := range seeds {
		f.Add(s.imp, s.a, s.b, s.c, s.doc)
	}
	// Set up once per process (the coordinator and each worker): the probe
	// build and its compiled code are cached on disk.
	fuzzHost := newHost(f, host.Options{})
	if _, err := fuzzHost.Load(context.Background(), parse(f, probeNoNet+"limits: {timeout: 5s}\n"), probe.Wasm(f)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, imp uint8, a, b, c uint32, doc string) {
		name := imports[int(imp)%len(imports)]
		var act probe.Action
		if name == "http_request" && doc != "" {
			act = probe.RawData(name, doc, probe.DataPtr, probe.DataLen).ReadBuffer()
		} else {
			act = probe.Raw(name, int64(a), int64(b), int64(c))
		}
		_, err := fuzzHost.Call(context.Background(), "test/probe", probe.Command, probe.Run(act))
		var ce *host.CallError
		if err != nil && (!errors.As(err, &ce) || ce.Module != "test/probe") {
			t.Fatalf("%s(%#x, %#x, %#x, %q): error %v is not a CallError naming the module", name, a, b, c, doc, err)
		}
		if ce != nil && ce.Kind == host.KindInternal {
			t.Fatalf("%s(%#x, %#x, %#x): internal error %v", name, a, b, c, err)
		}
		if _, err := fuzzHost.Call(context.Background(), "test/probe", probe.Command, probe.Run()); err != nil {
			t.Fatalf("the module stopped working after %s(%#x, %#x, %#x): %v", name, a, b, c, err)
		}
	})
}
