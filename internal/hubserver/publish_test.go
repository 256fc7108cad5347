package hubserver_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// TestPublishAndDownload: a published version is found, listed, downloaded
// and verified by an anonymous station, and written as a module directory.
func TestPublishAndDownload(t *testing.T) {
	h := hubtest.Start(t)
	dave, key := h.Publisher(t, "dave")
	man := hubtest.Manifest("dave/stripe-invoicing", "1.4.0", "api.stripe.com")
	wasm := hubtest.Wasm("invoices")
	b, err := hubclient.NewBundle(man, wasm, key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dave.Publish(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if v.WasmDigest != hub.Digest(wasm) || v.ManifestDigest != hub.Digest(man) || v.KeyID != key.PublicKey().ID.String() {
		t.Errorf("published version = %+v", v)
	}

	anon := h.Client(t, "")
	res, err := anon.Search(ctx, hubclient.SearchOptions{Query: "stripe"})
	if err != nil || len(res.Modules) != 1 || res.Modules[0].Latest != "1.4.0" {
		t.Fatalf("search = %+v, %v", res, err)
	}
	got, err := anon.Resolve(ctx, "dave/stripe-invoicing")
	if err != nil || got.Version != "1.4.0" {
		t.Fatalf("resolve = %+v, %v", got, err)
	}
	p, err := anon.Fetch(ctx, "dave/stripe-invoicing", "1.4.0", hubclient.FetchOptions{Pin: &hubclient.Pin{ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest}})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if !bytes.Equal(p.Wasm, wasm) || !bytes.Equal(p.ManifestRaw, man) || p.Manifest.Requires.Network.Allow[0] != "api.stripe.com" {
		t.Errorf("fetched package differs from what was published")
	}
}

// TestPublishRefusals: every way to publish what the publisher may not is
// refused with its code, and changes nothing: no version, no event, no blob.
func TestPublishRefusals(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.MaxWasmBytes = 4 << 10 })
	dave, daveKey := h.Publisher(t, "dave")
	mallory, malloryKey := h.Publisher(t, "mallory")
	publish(t, dave, daveKey, "dave/x", "1.0.0")

	unregistered, _ := hubclient.GenerateSigner()
	revoked, _ := hubclient.GenerateSigner()
	if _, err := dave.AddKey(ctx, revoked.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if _, err := dave.RevokeKey(ctx, revoked.PublicKey().ID); err != nil {
		t.Fatal(err)
	}

	bundle := func(t *testing.T, s *hubclient.Signer, man, wasm []byte) *hub.Bundle {
		t.Helper()
		b, err := hubclient.NewBundle(man, wasm, s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	man := hubtest.Manifest("dave/x", "1.1.0", "api.stripe.com")
	wasm := hubtest.Wasm("x 1.1.0")
	// signed returns a bundle of dave/x@1.1.0 signed by dave, then changed
	// by change (after signing).
	signed := func(change func(b *hub.Bundle)) func(t *testing.T) *hub.Bundle {
		return func(t *testing.T) *hub.Bundle {
			b := bundle(t, daveKey, man, wasm)
			change(b)
			return b
		}
	}
	v120 := func(t *testing.T) *hub.Bundle {
		return bundle(t, daveKey, hubtest.Manifest("dave/x", "1.2.0", "api.stripe.com"), wasm)
	}

	tests := []struct {
		name   string
		as     *hubclient.Client
		bundle func(t *testing.T) *hub.Bundle
		code   hub.Code
		msg    string
	}{
		{"into another's namespace", mallory, func(t *testing.T) *hub.Bundle { return bundle(t, malloryKey, man, wasm) }, hub.CodeNamespaceForbidden, `"mallory" may not publish into the namespace "dave"`},
		{"anonymous", h.Client(t, ""), signed(func(*hub.Bundle) {}), hub.CodeUnauthenticated, "needs a token"},
		{"unregistered key", dave, func(t *testing.T) *hub.Bundle { return bundle(t, unregistered, man, wasm) }, hub.CodeKeyUnknown, "not registered"},
		{"revoked key", dave, func(t *testing.T) *hub.Bundle { return bundle(t, revoked, man, wasm) }, hub.CodeKeyRevoked, "revoked"},
		{"wasm changed after signing", dave, signed(func(b *hub.Bundle) { b.Wasm = append(bytes.Clone(b.Wasm), 0) }), hub.CodeSignatureInvalid, "does not match"},
		{"wasm byte flipped", dave, signed(func(b *hub.Bundle) { b.Wasm = bytes.Clone(b.Wasm); b.Wasm[9] ^= 0x20 }), hub.CodeSignatureInvalid, "does not match"},
		{"permissions widened after signing", dave, signed(func(b *hub.Bundle) {
			b.Manifest = bytes.Replace(b.Manifest, []byte("api.stripe.com"), []byte("evil.example.com"), 1)
		}), hub.CodeSignatureInvalid, "does not match"},
		{"signature of another version", dave, signed(func(b *hub.Bundle) { b.Signature = v120(t).Signature }), hub.CodeSignatureInvalid, "does not match"},
		{"trusted comment altered", dave, signed(func(b *hub.Bundle) {
			b.Signature = strings.Replace(b.Signature, "trusted comment: station module dave/x@1.1.0", "trusted comment: station module dave/x@9.9.9", 1)
		}), hub.CodeSignatureInvalid, "trusted comment was altered"},
		{"prehashed signature", dave, signed(func(b *hub.Bundle) {
			lines := strings.Split(b.Signature, "\n")
			raw, _ := base64.StdEncoding.DecodeString(lines[1])
			raw[1] = 'D'
			lines[1] = base64.StdEncoding.EncodeToString(raw)
			b.Signature = strings.Join(lines, "\n")
		}), hub.CodeSignatureInvalid, "minisign -S -l"},
		{"garbage signature", dave, signed(func(b *hub.Bundle) { b.Signature = "not a signature" }), hub.CodeSignatureInvalid, "4 lines"},
		{"unsigned", dave, signed(func(b *hub.Bundle) { b.Signature = "" }), hub.CodeSignatureInvalid, "not signed"},
		{"not wasm", dave, func(t *testing.T) *hub.Bundle { return signedAnyway(t, daveKey, man, []byte("#!/bin/sh\n")) }, hub.CodeWasmInvalid, "not a WebAssembly binary"},
		{"wasm over the hub's limit", dave, func(t *testing.T) *hub.Bundle {
			return bundle(t, daveKey, man, append(hubtest.Wasm(""), make([]byte, 8<<10)...))
		}, hub.CodeWasmInvalid, "at most 4096"},
		{"manifest invalid", dave, signed(func(b *hub.Bundle) { b.Manifest = append(bytes.Clone(b.Manifest), "surprise: 1\n"...) }), hub.CodeManifestInvalid, "module.yaml:11"},
		{"bundle format", dave, signed(func(b *hub.Bundle) { b.Format = 2 }), hub.CodeBundleInvalid, "format 2"},
		{"existing version", dave, func(t *testing.T) *hub.Bundle { return bundle(t, daveKey, hubtest.Manifest("dave/x", "1.0.0"), wasm) }, hub.CodeVersionExists, "versions never change"},
		{"existing version, other build metadata", dave, func(t *testing.T) *hub.Bundle {
			return bundle(t, daveKey, hubtest.Manifest("dave/x", "1.0.0+rebuild"), wasm)
		}, hub.CodeVersionExists, "equal precedence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, blobs := lastSeq(t, h), blobCount(t, h)
			_, err := tt.as.Publish(ctx, tt.bundle(t))
			wantCode(t, "publish", err, tt.code)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v does not say %q", err, tt.msg)
			}
			if got := lastSeq(t, h); got != seq {
				t.Errorf("a refused publish appended events (%d → %d)", seq, got)
			}
			if got := blobCount(t, h); got != blobs {
				t.Errorf("a refused publish stored blobs (%d → %d)", blobs, got)
			}
			m, err := dave.Module(ctx, "dave/x")
			if err != nil || len(m.Versions) != 1 {
				t.Errorf("dave/x after a refused publish: %+v, %v", m.Versions, err)
			}
		})
	}
}

// TestPublishBodyLimits: a body over the bundle limit is refused before it
// is read whole, whether it declares its length or not.
func TestPublishBodyLimits(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.MaxWasmBytes = 1 << 10 })
	tok := h.Account(t, "dave")
	max := h.Server.Limits().MaxBundleBytes
	big := `{"format":1,"wasm":"` + strings.Repeat("A", int(max)) + `"}`
	if a := send(t, h, "POST", "/v1/modules", tok, big); a.status != 413 || a.code() != hub.CodeTooLarge {
		t.Errorf("oversized publish = %d %s", a.status, a.body)
	}
	for _, tt := range []struct{ name, body string }{
		{"unknown field", `{"format":1,"manifest":"","wasm":"","signature":"","extra":1}`},
		{"trailing data", `{"format":1} {"format":1}`},
		{"not JSON", `format=1`},
		{"empty", ``},
		{"bad base64", `{"format":1,"wasm":"!!!"}`},
	} {
		if a := send(t, h, "POST", "/v1/modules", tok, tt.body); a.status != 400 || a.code() != hub.CodeBadRequest {
			t.Errorf("%s: %d %s", tt.name, a.status, a.body)
		}
	}
}

// TestYankAndKeys: only the owner yanks; a yank moves "latest" and is an
// event; a revoked key stops verifying.
func TestYankAndKeys(t *testing.T) {
	h := hubtest.Start(t)
	dave, key := h.Publisher(t, "dave")
	mallory, _ := h.Publisher(t, "mallory")
	publish(t, dave, key, "dave/x", "1.0.0")
	publish(t, dave, key, "dave/x", "1.1.0")

	_, err := mallory.Yank(ctx, "dave/x", "1.1.0", "mine now")
	wantCode(t, "mallory yanks dave/x", err, hub.CodeNamespaceForbidden)
	_, err = dave.Yank(ctx, "dave/x", "1.1.0", "bad\x1b[2Jreason")
	wantCode(t, "yank with a control character", err, hub.CodeBadRequest)
	_, err = dave.Yank(ctx, "dave/x", "9.9.9", "")
	wantCode(t, "yank a missing version", err, hub.CodeVersionNotFound)

	v, err := dave.Yank(ctx, "dave/x", "1.1.0", "leaks the API key")
	if err != nil || !v.Yanked || v.YankReason != "leaks the API key" {
		t.Fatalf("yank = %+v, %v", v, err)
	}
	if m, _ := dave.Module(ctx, "dave/x"); m.Latest != "1.0.0" {
		t.Errorf("latest after yank = %s, want 1.0.0", m.Latest)
	}
	// A yanked version is still served: lockfiles may pin it.
	if _, err := h.Client(t, "").Fetch(ctx, "dave/x", "1.1.0", hubclient.FetchOptions{}); err != nil {
		t.Errorf("fetch a yanked version: %v", err)
	}
	if _, err := dave.Unyank(ctx, "dave/x", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	res, _ := dave.Sync(ctx, 0, 0)
	var kinds []string
	for _, e := range res.Events {
		kinds = append(kinds, e.Kind)
	}
	if want := "module.published module.published module.yanked module.unyanked"; strings.Join(kinds, " ") != want {
		t.Errorf("events = %v, want %s", kinds, want)
	}

	if _, err := dave.RevokeKey(ctx, key.PublicKey().ID); err != nil {
		t.Fatal(err)
	}
	_, err = h.Client(t, "").Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{})
	wantCode(t, "fetch a version signed with a revoked key", err, hub.CodeKeyRevoked)
	_, err = dave.AddKey(ctx, key.PublicKey())
	wantCode(t, "re-register a revoked key", err, hub.CodeKeyExists)
	a := send(t, h, "POST", "/v1/keys", "", hub.AddKeyRequest{PublicKey: "RWQ"})
	if a.code() != hub.CodeUnauthenticated {
		t.Errorf("anonymous key registration = %s", a.body)
	}
}

// TestKeysAreScopedToTheirAccount: mallory registering dave's public key
// under her account gains her nothing, and does not block dave.
func TestKeysAreScopedToTheirAccount(t *testing.T) {
	h := hubtest.Start(t)
	dave := h.Client(t, h.Account(t, "dave"))
	mallory := h.Client(t, h.Account(t, "mallory"))
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k := hub.PublicKey{ID: hub.KeyIDOf(pub), Key: pub}
	if _, err := mallory.AddKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := dave.AddKey(ctx, k); err != nil {
		t.Errorf("dave registering his key after mallory squatted it: %v", err)
	}
	keys, err := dave.Keys(ctx, "dave")
	if err != nil || len(keys) != 1 || keys[0].Account != "dave" {
		t.Errorf("dave's keys = %+v, %v", keys, err)
	}
	_, err = dave.Keys(ctx, "nobody")
	wantCode(t, "keys of a missing account", err, hub.CodeAccountNotFound)
	a := send(t, h, "POST", "/v1/keys", "", nil)
	if a.status != 401 {
		t.Errorf("anonymous POST /v1/keys = %d", a.status)
	}
}

// signedAnyway signs a bundle without the client's own checks, as a hostile
// or broken publisher would.
func signedAnyway(t *testing.T, s *hubclient.Signer, man, wasm []byte) *hub.Bundle {
	t.Helper()
	sig, err := s.Sign(hub.Statement{ID: "dave/x", Version: "1.1.0", ManifestDigest: hub.Digest(man), WasmDigest: hub.Digest(wasm)})
	if err != nil {
		t.Fatal(err)
	}
	return &hub.Bundle{Format: hub.BundleFormat, Manifest: man, Wasm: wasm, Signature: sig.String()}
}
