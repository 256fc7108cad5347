package hubserver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/manifest"
)

// spyBlobs counts what a hub stores: each Put and each committed Create.
type spyBlobs struct {
	hubserver.Blobs
	stored atomic.Int64
}

func (s *spyBlobs) Put(ctx context.Context, digest string, data []byte) error {
	s.stored.Add(1)
	return s.Blobs.Put(ctx, digest, data)
}

func (s *spyBlobs) Create(ctx context.Context) (hubserver.BlobWriter, error) {
	w, err := s.Blobs.Create(ctx)
	if err != nil {
		return nil, err
	}
	return &spyWriter{BlobWriter: w, stored: &s.stored}, nil
}

type spyWriter struct {
	hubserver.BlobWriter
	stored *atomic.Int64
}

func (w *spyWriter) Commit(digest string) error {
	w.stored.Add(1)
	return w.BlobWriter.Commit(digest)
}

// signedBundle signs man and wasm as a publisher would, without the
// client's own checks.
func signedBundle(t *testing.T, s *hubclient.Signer, man, wasm []byte) *hub.Bundle {
	t.Helper()
	m, err := manifest.Parse(manifest.FileName, man)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.Sign(hub.Statement{ID: m.ID, Version: m.Version, ManifestDigest: hub.Digest(man), WasmDigest: hub.Digest(wasm)})
	if err != nil {
		t.Fatal(err)
	}
	return &hub.Bundle{Format: hub.BundleFormat, Manifest: man, Wasm: wasm, Signature: sig.String()}
}

// TestPublishRefusesWhatNoStationInstalls: the newcomer case — a module
// whose wasm imports what its manifest does not grant — and every other
// module no station would install is refused at publish with the reason
// named, and nothing of it is stored: no blob, no version, no event.
func TestPublishRefusesWhatNoStationInstalls(t *testing.T) {
	spy := &spyBlobs{}
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		spy.Blobs = o.Blobs
		o.Blobs = spy
		o.Limits.MaxWasmBytes = 64 << 10
		o.Install.ModuleBytes = 32 << 10
	})
	dave, key := h.Publisher(t, "dave")
	mod := hubtest.Module
	type spec = hubtest.WasmSpec
	man := hubtest.Manifest("dave/x", "1.0.0")
	valid := hubtest.Wasm("x")
	tests := []struct {
		name string
		man  []byte
		wasm []byte
		code hub.Code
		want []string
	}{
		{"process_run without subprocess", man, mod(spec{Imports: []string{"station.http_request", "station.process_run"}}), hub.CodeModuleRefused,
			[]string{"dave/x@1.0.0: no station would install it: module imports station.process_run, which its manifest does not grant (add requires.subprocess)"}},
		{"llm_complete without llm", man, mod(spec{Imports: []string{"station.llm_complete"}}), hub.CodeModuleRefused,
			[]string{"module imports station.llm_complete, which its manifest does not grant (add requires.llm)"}},
		{"every problem", man, mod(spec{NoCall: true, Imports: []string{"station.process_run", "station.llm_complete"}}), hub.CodeModuleRefused,
			[]string{"(3 problems)", "does not export station_call", "station.process_run, which its manifest does not grant", "station.llm_complete, which its manifest does not grant"}},
		{"no station_call", man, mod(spec{NoCall: true}), hub.CodeModuleRefused, []string{"module does not export station_call"}},
		{"station_call of another type", man, mod(spec{CallI64: true}), hub.CodeModuleRefused, []string{"station_call has the signature (i64) -> i32; it must be (i32, i32) -> i32"}},
		{"another ABI version", man, mod(spec{Marker: "station_abi_2"}), hub.CodeModuleRefused, []string{"module speaks guest ABI station_abi_2; stations speak station_abi_1"}},
		{"no ABI marker", man, mod(spec{Marker: "-"}), hub.CodeModuleRefused, []string{"module does not export station_abi_1"}},
		{"truncated", man, valid[:len(valid)-9], hub.CodeModuleRefused, []string{"the wasm: malformed module at offset"}},
		{"only a header", man, []byte(hub.WasmMagic), hub.CodeModuleRefused, []string{"module does not export station_abi_1"}},
		{"not wasm", man, []byte("#!/bin/sh\nrm -rf /\n"), hub.CodeWasmInvalid, []string{"not a WebAssembly binary"}},
		{"over an install limit", man, mod(spec{Pad: 40 << 10}), hub.CodeModuleRefused, []string{"the module's binary is 4", "install.max_module_size"}},
		{"over the hub's size limit", man, mod(spec{Pad: 80 << 10}), hub.CodeWasmInvalid, []string{"this hub accepts at most 65536"}},
		{"memory over its limit", man, mod(spec{MemoryPages: 4096}), hub.CodeModuleRefused, []string{"module's memory starts at 256 MiB, more than its limit of 128 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, blobs, stored := lastSeq(t, h), blobCount(t, h), spy.stored.Load()
			_, err := dave.Publish(ctx, signedBundle(t, key, tt.man, tt.wasm))
			wantCode(t, "publish", err, tt.code)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not say %q", err, w)
				}
			}
			if got := spy.stored.Load(); got != stored {
				t.Errorf("a refused publish stored %d blobs", got-stored)
			}
			if got := blobCount(t, h); got != blobs {
				t.Errorf("a refused publish left blob files (%d → %d)", blobs, got)
			}
			if got := lastSeq(t, h); got != seq {
				t.Errorf("a refused publish appended events (%d → %d)", seq, got)
			}
			if _, err := dave.Module(ctx, "dave/x"); hub.CodeOf(err) != hub.CodeModuleNotFound {
				t.Errorf("dave/x after a refused publish: %v", err)
			}
		})
	}

	// The answer is the protocol's: 422, with the code's name.
	a := send(t, h, "POST", "/v1/modules", tokenOf(t, h, "dave"), signedBundle(t, key, man, mod(spec{Imports: []string{"station.process_run"}})))
	if a.status != http.StatusUnprocessableEntity || a.code() != hub.CodeModuleRefused || !strings.Contains(string(a.body), `"module_refused"`) {
		t.Errorf("refused publish = %d %s", a.status, a.body)
	}

	// What the manifest grants, the module may import; and a module
	// passes with its custom sections, however large, within the limits.
	granted := []byte(strings.Replace(string(man), "commands:", "requires:\n  subprocess: true\n  llm: true\ncommands:", 1))
	stored := spy.stored.Load()
	if _, err := dave.Publish(ctx, signedBundle(t, key, granted, mod(spec{Seed: "ok", Imports: []string{"station.process_run", "station.llm_complete"}}))); err != nil {
		t.Fatalf("a module importing what its manifest grants: %v", err)
	}
	if got := spy.stored.Load(); got != stored+2 {
		t.Errorf("a publish stored %d blobs, want the manifest and the wasm", got-stored)
	}
	if _, err := dave.Publish(ctx, signedBundle(t, key, hubtest.Manifest("dave/x", "1.0.1"), mod(spec{Seed: "big", Pad: 30 << 10}))); err != nil {
		t.Errorf("a module with 30 KiB of custom sections: %v", err)
	}
}

// TestPublishCheckMatchesClient: what the hub refuses, `station module
// publish` refuses before it uploads, with the same problems (the client
// runs the same host.Inspect on the whole binary; the hub on its
// skeleton).
func TestPublishCheckMatchesClient(t *testing.T) {
	h := hubtest.Start(t)
	dave, key := h.Publisher(t, "dave")
	man := hubtest.Manifest("dave/x", "1.0.0")
	wasm := hubtest.Module(hubtest.WasmSpec{Pad: 1 << 10, Imports: []string{"station.process_run", "env.f"}})
	_, herr := dave.Publish(ctx, signedBundle(t, key, man, wasm))
	m, err := manifest.Parse(manifest.FileName, man)
	if err != nil {
		t.Fatal(err)
	}
	cerr := host.Inspect(ctx, m, wasm, host.InspectOptions{})
	var ie *host.InspectError
	if !errors.As(cerr, &ie) || len(ie.Problems) != 2 {
		t.Fatalf("Inspect = %v", cerr)
	}
	for _, p := range ie.Problems {
		if herr == nil || !strings.Contains(herr.Error(), p.Message) {
			t.Errorf("the hub's refusal %v lacks the client's problem %q", herr, p.Message)
		}
	}
}

// TestOCIRefusedModuleStoresNothing: on a registry, a refused module leaves
// no blob, no artifact and no tag.
func TestOCIRefusedModuleStoresNothing(t *testing.T) {
	h, repo := ociHub(t, nil)
	dave, key := h.Publisher(t, "dave")
	man := hubtest.Manifest("dave/x", "1.0.0")
	wasm := hubtest.Module(hubtest.WasmSpec{Seed: "oci", Imports: []string{"station.process_run"}})
	_, err := dave.Publish(ctx, signedBundle(t, key, man, wasm))
	wantCode(t, "publish", err, hub.CodeModuleRefused)
	if got := tags(t, repo); len(got) != 0 {
		t.Errorf("a refused publish was tagged: %q", got)
	}
	for _, d := range []string{hub.Digest(wasm), hub.Digest(man)} {
		if code, _ := fromRegistry(t, repo, "/blobs/"+d); code != http.StatusNotFound {
			t.Errorf("blob %s of a refused publish: %d, want 404", d, code)
		}
	}
	// The same module, granted, is stored: the checks above can fail.
	granted := []byte(strings.Replace(string(man), "commands:", "requires:\n  subprocess: true\ncommands:", 1))
	if _, err := dave.Publish(ctx, signedBundle(t, key, granted, wasm)); err != nil {
		t.Fatal(err)
	}
	if code, _ := fromRegistry(t, repo, "/blobs/"+hub.Digest(wasm)); code != http.StatusOK {
		t.Errorf("the wasm of an accepted publish: %d", code)
	}
}
