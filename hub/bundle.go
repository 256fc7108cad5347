package hub

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/station-dev/station/manifest"
)

// BundleFormat is the version of the bundle document this package
// describes.
const BundleFormat = 1

// WasmMagic is how every WebAssembly binary (format version 1) starts.
const WasmMagic = "\x00asm\x01\x00\x00\x00"

// Bundle is what a publisher uploads and a station downloads: one JSON
// document holding the module's manifest, its wasm binary and the minisign
// signature of its Statement. The bytes are base64 in JSON (encoding/json's
// []byte).
type Bundle struct {
	// Format is BundleFormat.
	Format int `json:"format"`
	// Manifest is the module.yaml file, byte for byte.
	Manifest []byte `json:"manifest"`
	// Wasm is the WebAssembly binary, byte for byte.
	Wasm []byte `json:"wasm"`
	// Signature is a minisign signature (.minisig file) of the bundle's
	// Statement, made with a key registered to the module's owner.
	Signature string `json:"signature"`
}

// Statement is what a publisher signs: the module's identity and the
// digests of its two files. Signing the statement rather than the files
// binds the signature to the id and version as well as to the bytes, so a
// signed bundle cannot be replayed under another name or version.
type Statement struct {
	ID             string
	Version        string
	ManifestDigest string
	WasmDigest     string
}

// statementHeader is the first line of every version-1 statement.
const statementHeader = "station module bundle v1"

// Bytes returns the statement's canonical text, the exact bytes signed:
//
//	station module bundle v1
//	id: dave/stripe-invoicing
//	version: 1.4.0
//	manifest: sha256:<64 hex digits>
//	wasm: sha256:<64 hex digits>
//
// with a "\n" after every line.
func (s Statement) Bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nid: %s\nversion: %s\nmanifest: %s\nwasm: %s\n", statementHeader, s.ID, s.Version, s.ManifestDigest, s.WasmDigest)
	return b.Bytes()
}

// Digest returns "sha256:" and the hex SHA-256 of b, the form of every
// digest in the protocol (and the station's own module digests).
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ValidDigest reports whether d has the form Digest returns.
func ValidDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !(h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f') {
			return false
		}
	}
	return true
}

// Contents is a bundle whose manifest parsed and whose signature verified.
type Contents struct {
	Manifest  *manifest.Manifest
	Statement Statement
	Signature Signature
}

// KeyLookup returns the public key with the given id that may sign for
// owner, or an *Error (CodeKeyUnknown, CodeKeyRevoked) saying why there is
// none.
type KeyLookup func(owner string, id KeyID) (PublicKey, error)

// Open checks a bundle and returns what it holds: the format, that the wasm
// is WebAssembly, that module.yaml parses (manifest.Parse), and that the
// signature is a valid signature of the bundle's Statement by a key keys
// returns for the manifest's owner. The hub runs it on publish and the
// station on install: one check, in one place. Every error is an *Error
// whose code and message say which check failed.
func (b *Bundle) Open(keys KeyLookup) (*Contents, error) {
	return b.Summary().Open(keys)
}

// Summary returns the bundle with its wasm summarised.
func (b *Bundle) Summary() *BundleSummary {
	return &BundleSummary{Format: b.Format, Manifest: b.Manifest, Wasm: SummarizeWasm(b.Wasm), Signature: b.Signature}
}

// BundleSummary is a bundle whose wasm is described rather than held: its
// size, digest and first bytes. The hub checks a publish in this form,
// having written the wasm to storage as it arrived, so that no request
// holds a whole module in memory.
type BundleSummary struct {
	Format    int
	Manifest  []byte
	Wasm      WasmSummary
	Signature string
}

// WasmSummary describes a wasm binary: what the bundle check needs of it.
type WasmSummary struct {
	Size int64
	// Digest is Digest of the binary.
	Digest string
	// Head is the binary's first len(WasmMagic) bytes (all of it when it
	// is shorter).
	Head []byte
}

// SummarizeWasm returns the summary of wasm.
func SummarizeWasm(wasm []byte) WasmSummary {
	return WasmSummary{Size: int64(len(wasm)), Digest: Digest(wasm), Head: wasm[:min(len(wasm), len(WasmMagic))]}
}

// Open is Bundle.Open on the summary: the same checks, in the same order,
// with the same errors.
func (b *BundleSummary) Open(keys KeyLookup) (*Contents, error) {
	switch {
	case b.Format != BundleFormat:
		return nil, Errorf(CodeBundleInvalid, "bundle format %d is not supported (want %d)", b.Format, BundleFormat)
	case len(b.Manifest) == 0:
		return nil, Errorf(CodeBundleInvalid, "bundle has no manifest")
	case len(b.Manifest) > manifest.MaxFileSize:
		return nil, Errorf(CodeBundleInvalid, "bundle manifest is larger than %d bytes", manifest.MaxFileSize)
	case b.Wasm.Size == 0:
		return nil, Errorf(CodeWasmInvalid, "bundle has no wasm")
	case !bytes.HasPrefix(b.Wasm.Head, []byte(WasmMagic)):
		return nil, Errorf(CodeWasmInvalid, "bundle wasm is not a WebAssembly binary (bad magic number or version)")
	case b.Signature == "":
		return nil, Errorf(CodeSignatureInvalid, "bundle is not signed")
	}
	m, err := manifest.Parse(manifest.FileName, b.Manifest)
	if err != nil {
		return nil, Errorf(CodeManifestInvalid, "%v", err)
	}
	st := Statement{ID: m.ID, Version: m.Version, ManifestDigest: Digest(b.Manifest), WasmDigest: b.Wasm.Digest}
	sig, err := ParseSignature(b.Signature)
	if err != nil {
		return nil, Errorf(CodeSignatureInvalid, "%s@%s: %v", m.ID, m.Version, err)
	}
	owner, _, _ := strings.Cut(m.ID, "/")
	key, err := keys(owner, sig.KeyID)
	if err != nil {
		return nil, err
	}
	if err := key.Verify(st.Bytes(), sig); err != nil {
		return nil, Errorf(CodeSignatureInvalid, "%s@%s: %v (the manifest, the wasm, the id or the version differ from what was signed)", m.ID, m.Version, err)
	}
	return &Contents{Manifest: m, Statement: st, Signature: sig}, nil
}
