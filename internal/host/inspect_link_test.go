package host

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// TestInspectKnowsTheStationImports: the imports Inspect checks, with their
// signatures and grants, are exactly what Module.link exports to a module
// granted everything — and offeredBy grants what Module.offered does.
func TestInspectKnowsTheStationImports(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	// Linking only records the gates; nothing is called.
	m := &Module{rt: rt, exec: &execgate.Gate{}, llm: &LLMGrant{}}
	if err := m.link(ctx); err != nil {
		t.Fatal(err)
	}
	defs := rt.Module(abi.ImportModule).ExportedFunctionDefinitions()
	if len(defs) != len(stationImports) {
		t.Errorf("link exports %d functions, Inspect knows %d", len(defs), len(stationImports))
	}
	for name, d := range defs {
		imp, ok := stationImports[name]
		if !ok {
			t.Errorf("Inspect does not know the import %s", name)
			continue
		}
		if !slices.Equal(d.ParamTypes(), imp.params) || !slices.Equal(d.ResultTypes(), imp.results) {
			t.Errorf("%s: link has %s, Inspect %s", name, signature(d.ParamTypes(), d.ResultTypes()), signature(imp.params, imp.results))
		}
	}
	for _, g := range []struct {
		exec, llm bool
		requires  string
	}{{false, false, ""}, {true, false, "requires: {subprocess: true}"}, {false, true, "requires: {llm: true}"}, {true, true, "requires: {subprocess: {allow: [git]}, llm: true}"}} {
		mm := &Module{}
		if g.exec {
			mm.exec = &execgate.Gate{}
		}
		if g.llm {
			mm.llm = &LLMGrant{}
		}
		man := reviewManifest(t, "test/x", "")
		if g.requires != "" {
			var err error
			man, err = manifest.Parse("module.yaml", []byte("id: test/x\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\n"+g.requires+"\n"))
			if err != nil {
				t.Fatal(err)
			}
		}
		if got, want := offeredBy(man), mm.offered(); !maps.Equal(got, want) {
			t.Errorf("%q: offeredBy = %v, Module.offered = %v", g.requires, got, want)
		}
	}
}
