package hub

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

const testManifest = `id: dave/stripe-invoicing
version: "1.4.0"
description: Create Stripe invoices
wasm: module.wasm
commands:
  - name: create-invoice
requires:
  network:
    allow: [api.stripe.com]
`

var testWasm = []byte(WasmMagic + "\x00rest of the module")

// signed returns a bundle of manifest and wasm signed by priv.
func signed(t testing.TB, k PublicKey, priv ed25519.PrivateKey, man string, wasm []byte) *Bundle {
	t.Helper()
	id, version := "dave/stripe-invoicing", "1.4.0"
	if strings.Contains(man, `version: "1.4.1"`) {
		version = "1.4.1"
	}
	st := Statement{ID: id, Version: version, ManifestDigest: Digest([]byte(man)), WasmDigest: Digest(wasm)}
	sig, err := Sign(priv, k.ID, st.Bytes(), "signed by station", id+"@"+version)
	if err != nil {
		t.Fatal(err)
	}
	return &Bundle{Format: BundleFormat, Manifest: []byte(man), Wasm: wasm, Signature: sig.String()}
}

func TestBundleOpen(t *testing.T) {
	k, priv := newKey(t)
	other, otherPriv := newKey(t)
	keys := func(owner string, id KeyID) (PublicKey, error) {
		if owner == "dave" && id == k.ID {
			return k, nil
		}
		return PublicKey{}, Errorf(CodeKeyUnknown, "key %s is not registered to %s", id, owner)
	}
	good := signed(t, k, priv, testManifest, testWasm)
	c, err := good.Open(keys)
	if err != nil {
		t.Fatalf("Open(good) = %v", err)
	}
	if c.Manifest.ID != "dave/stripe-invoicing" || c.Statement.WasmDigest != Digest(testWasm) {
		t.Errorf("contents = %+v", c.Statement)
	}
	want := "station module bundle v1\nid: dave/stripe-invoicing\nversion: 1.4.0\nmanifest: " + Digest([]byte(testManifest)) + "\nwasm: " + Digest(testWasm) + "\n"
	if got := string(c.Statement.Bytes()); got != want {
		t.Errorf("statement:\n%s\nwant\n%s", got, want)
	}

	v141 := signed(t, k, priv, strings.Replace(testManifest, "1.4.0", "1.4.1", 1), testWasm)
	tests := []struct {
		name   string
		mutate func(b *Bundle)
		code   Code
	}{
		{"format", func(b *Bundle) { b.Format = 2 }, CodeBundleInvalid},
		{"no manifest", func(b *Bundle) { b.Manifest = nil }, CodeBundleInvalid},
		{"no wasm", func(b *Bundle) { b.Wasm = nil }, CodeWasmInvalid},
		{"not wasm", func(b *Bundle) { b.Wasm = []byte("#!/bin/sh\nrm -rf /") }, CodeWasmInvalid},
		{"unsigned", func(b *Bundle) { b.Signature = "" }, CodeSignatureInvalid},
		{"bad manifest", func(b *Bundle) { b.Manifest = []byte("id: [") }, CodeManifestInvalid},
		{"wasm byte flipped", func(b *Bundle) { b.Wasm = append([]byte(nil), b.Wasm...); b.Wasm[len(b.Wasm)-1] ^= 1 }, CodeSignatureInvalid},
		{"wasm appended", func(b *Bundle) { b.Wasm = append(append([]byte(nil), b.Wasm...), 0) }, CodeSignatureInvalid},
		{"manifest widened", func(b *Bundle) {
			b.Manifest = []byte(strings.Replace(testManifest, "[api.stripe.com]", "[api.stripe.com, evil.example]", 1))
		}, CodeSignatureInvalid},
		{"signature of another version replayed", func(b *Bundle) { b.Signature = v141.Signature }, CodeSignatureInvalid},
		{"signed by an unregistered key", func(b *Bundle) { *b = *signed(t, other, otherPriv, testManifest, testWasm) }, CodeKeyUnknown},
		{"registered id, other key", func(b *Bundle) {
			forged := PublicKey{ID: k.ID, Key: other.Key}
			*b = *signed(t, forged, otherPriv, testManifest, testWasm)
		}, CodeSignatureInvalid},
		{"garbage signature", func(b *Bundle) { b.Signature = "untrusted comment: x\nAAAA\n" }, CodeSignatureInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := *good
			tt.mutate(&b)
			_, err := b.Open(keys)
			if got := CodeOf(err); got != tt.code {
				t.Errorf("Open = %v (code %d), want code %d %s", err, got, tt.code, tt.code)
			}
		})
	}
}

func TestValidDigest(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{Digest(nil), true},
		{"sha256:" + strings.Repeat("a", 64), true},
		{"sha256:" + strings.Repeat("A", 64), false},
		{"sha256:" + strings.Repeat("a", 63), false},
		{"sha512:" + strings.Repeat("a", 64), false},
		{strings.Repeat("a", 64), false},
	}
	for _, tt := range tests {
		if got := ValidDigest(tt.in); got != tt.want {
			t.Errorf("ValidDigest(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
