package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/manifest"
)

// BenchmarkCold is a call when nothing is warm yet: the first call after an
// install (the module is compiled), the first call after a restart (the
// compiled code comes from the on-disk compilation cache), and a call on a
// fresh instance.
func BenchmarkCold(b *testing.B) {
	ctx := context.Background()
	b.Run("first-call-after-install", func(b *testing.B) {
		// A host with an empty compilation cache: compile, link, start one
		// instance, call it.
		wasm := guestBytes(b, "station")
		man, err := manifest.Parse("module.yaml", []byte(moduleYAML(greetID, "{name: greet}", "", "")))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			h, err := host.New(host.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := h.Load(ctx, man, wasm); err != nil {
				b.Fatal(err)
			}
			out, err := h.Call(ctx, greetID, "greet", in)
			check(b, out, err)
			h.Close(ctx)
		}
	})
	b.Run("first-call-after-restart", func(b *testing.B) {
		// station.Open on a home whose module is installed and whose
		// on-disk compilation cache is warm, then the call: what a new
		// station process does before its first result, minus starting
		// the process (Call/station-run-process adds that).
		home := restartHome(b)
		for b.Loop() {
			st, err := station.Open(ctx, home, station.Options{})
			if err != nil {
				b.Fatal(err)
			}
			out, err := st.Run(ctx, greetID, "greet", in)
			check(b, out, err)
			st.Close(ctx)
		}
	})
	b.Run("fresh-instance", func(b *testing.B) {
		// limits.instances: fresh — a new instance for every call.
		st := sharedStation(b)
		b.ReportAllocs()
		for b.Loop() {
			out, err := st.Run(ctx, freshID, "greet", in)
			check(b, out, err)
		}
	})
	b.Run("extism-first-call", func(b *testing.B) {
		// Extism's equivalent of the first call after an install.
		wasm := guestBytes(b, "extism")
		for b.Loop() {
			m := extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}, Timeout: 30_000}
			c, err := extism.NewCompiledPlugin(ctx, m, extism.PluginConfig{EnableWasi: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			_, out, err := p.CallWithContext(ctx, "greet", in)
			check(b, out, err)
			p.Close(ctx)
			c.Close(ctx)
		}
	})
	b.Run("extism-fresh-instance", func(b *testing.B) {
		c := extismCompiled(b, 30*time.Second)
		b.ReportAllocs()
		for b.Loop() {
			p, err := c.Instance(ctx, extism.PluginInstanceConfig{})
			if err != nil {
				b.Fatal(err)
			}
			_, out, err := p.CallWithContext(ctx, "greet", in)
			check(b, out, err)
			p.Close(ctx)
		}
	})
}

var restart once[string]

// restartHome is a station home with the greet module installed and its
// compilation cache on disk, closed: each open of it is a restart.
func restartHome(tb testing.TB) string {
	tb.Helper()
	wasm := guest(tb, "station")
	return restart.get(tb, func() (string, error) {
		home := filepath.Join(root, "restart")
		st, err := newHome(home, map[string]string{moduleYAML(greetID, "{name: greet}", "", ""): wasm})
		if err != nil {
			return "", err
		}
		return home, st.Close(context.Background())
	})
}
