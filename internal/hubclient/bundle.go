package hubclient

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/manifest"
)

// MaxWasmSize bounds the wasm a client reads from a module directory or
// accepts from a hub (the station's own install limit).
const MaxWasmSize = 256 << 20

// Signer is a publisher's signing key. Its file is a PKCS#8 PEM private key
// (what `openssl pkey` reads); its public half is a minisign public key
// whose id is derived from the key (hub.KeyIDOf).
type Signer struct {
	key ed25519.PrivateKey
	pub hub.PublicKey
}

// GenerateSigner makes a new signing key.
func GenerateSigner() (*Signer, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	return &Signer{key: priv, pub: hub.PublicKey{ID: hub.KeyIDOf(pub), Key: pub}}, nil
}

// PublicKey returns the key to register with the hub (Client.AddKey).
func (s *Signer) PublicKey() hub.PublicKey { return s.pub }

// MarshalPEM returns the private key as a PKCS#8 PEM block.
func (s *Signer) MarshalPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseSigner reads a key MarshalPEM wrote.
func ParseSigner(data []byte) (*Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("signing key: not a PEM \"PRIVATE KEY\" block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key: a %T, want an Ed25519 key", k)
	}
	pub := priv.Public().(ed25519.PublicKey)
	return &Signer{key: priv, pub: hub.PublicKey{ID: hub.KeyIDOf(pub), Key: pub}}, nil
}

// Save writes the key to a new file, mode 0600. It never overwrites a file.
func (s *Signer) Save(file string) error {
	data, err := s.MarshalPEM()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("save signing key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("save signing key: %w", err)
	}
	return f.Close()
}

// LoadSigner reads a key file, refusing one that others may read.
func LoadSigner(file string) (*Signer, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("load signing key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("load signing key: %s may be read by others (mode %04o): chmod 600 %s", file, fi.Mode().Perm(), file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load signing key: %w", err)
	}
	s, err := ParseSigner(data)
	if err != nil {
		return nil, fmt.Errorf("load signing key %s: %w", file, err)
	}
	return s, nil
}

// Sign signs a bundle statement. The trusted comment names the module, so
// `minisign -V` shows what was signed.
func (s *Signer) Sign(st hub.Statement) (hub.Signature, error) {
	return hub.Sign(s.key, s.pub.ID, st.Bytes(), "signature from station key "+s.pub.ID.String(), "station module "+st.ID+"@"+st.Version)
}

// ReadModuleDir reads a built module directory: module.yaml and the wasm it
// names, both read through an os.Root so neither can lead outside dir.
func ReadModuleDir(dir string) (manifestRaw, wasm []byte, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read module %s: %w", dir, err)
	}
	defer root.Close()
	manifestRaw, err = readLimited(root, manifest.FileName, manifest.MaxFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("read module %s: %w", dir, err)
	}
	m, err := manifest.Parse(path.Join(dir, manifest.FileName), manifestRaw)
	if err != nil {
		return nil, nil, err
	}
	wasm, err = readLimited(root, m.Wasm, MaxWasmSize)
	if err != nil {
		return nil, nil, fmt.Errorf("read module %s: %w (build it first: station module build %s)", dir, err, dir)
	}
	return manifestRaw, wasm, nil
}

func readLimited(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return data, nil
}

// NewBundle signs a module's manifest and wasm into a bundle ready to
// publish. It refuses what the hub would refuse (hub.Bundle.Open runs
// before it returns).
func NewBundle(manifestRaw, wasm []byte, s *Signer) (*hub.Bundle, error) {
	m, err := manifest.Parse(manifest.FileName, manifestRaw)
	if err != nil {
		return nil, err
	}
	st := hub.Statement{ID: m.ID, Version: m.Version, ManifestDigest: hub.Digest(manifestRaw), WasmDigest: hub.Digest(wasm)}
	sig, err := s.Sign(st)
	if err != nil {
		return nil, err
	}
	b := &hub.Bundle{Format: hub.BundleFormat, Manifest: manifestRaw, Wasm: wasm, Signature: sig.String()}
	if _, err := b.Open(func(string, hub.KeyID) (hub.PublicKey, error) { return s.pub, nil }); err != nil {
		return nil, fmt.Errorf("bundle %s@%s: %w", m.ID, m.Version, err)
	}
	return b, nil
}

// Package is a downloaded module version that passed verification.
type Package struct {
	// Version is the hub's record of the version (Yanked says whether it
	// was yanked).
	Version hub.Version
	// Manifest is the parsed module.yaml; ManifestRaw its bytes.
	Manifest    *manifest.Manifest
	ManifestRaw []byte
	// Wasm is the module binary.
	Wasm []byte
	// Key is the key whose signature verified.
	Key hub.PublicKey
}

// Pin is what a caller expects of a version, for example from a team
// lockfile.
type Pin struct {
	ManifestDigest string
	WasmDigest     string
}

// FetchOptions adjust Fetch.
type FetchOptions struct {
	// Pin, if set, must match the version's digests.
	Pin *Pin
	// TrustedKeys, if set, are the only keys accepted for the module's
	// owner (keys the operator pinned), instead of the keys the hub lists.
	TrustedKeys []hub.PublicKey
}

// VerifyError says why a downloaded bundle was refused. Nothing of it may
// be installed.
type VerifyError struct {
	Module, Version string
	// Err is the reason, an *hub.Error (CodeSignatureInvalid,
	// CodeDigestMismatch, CodeKeyUnknown, CodeKeyRevoked, ...).
	Err error
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("refusing %s@%s: %v", e.Module, e.Version, e.Err)
}

func (e *VerifyError) Unwrap() error { return e.Err }

// Fetch downloads id@version and verifies it: the signature by a key of the
// owner (the hub's list of the owner's active keys, or o.TrustedKeys) over
// the statement of exactly these bytes, this id and this version; the
// digests the hub lists for the version; o.Pin; and the size. A bundle that
// fails any check is refused with a *VerifyError naming the reason.
func (c *Client) Fetch(ctx context.Context, id, version string, o FetchOptions) (*Package, error) {
	v, err := c.Version(ctx, id, version)
	if err != nil {
		return nil, err
	}
	refuse := func(code hub.Code, format string, args ...any) error {
		return &VerifyError{Module: id, Version: version, Err: hub.Errorf(code, format, args...)}
	}
	if v.Module != id || v.Version != version {
		// What the station shows the operator comes from this record.
		return nil, refuse(hub.CodeBundleInvalid, "the hub's record is of %q@%q", v.Module, v.Version)
	}
	if o.Pin != nil && (o.Pin.ManifestDigest != v.ManifestDigest || o.Pin.WasmDigest != v.WasmDigest) {
		return nil, refuse(hub.CodeDigestMismatch, "the hub lists manifest %s, wasm %s; the pin is manifest %s, wasm %s", v.ManifestDigest, v.WasmDigest, o.Pin.ManifestDigest, o.Pin.WasmDigest)
	}
	if v.WasmSize <= 0 || v.WasmSize > MaxWasmSize {
		return nil, refuse(hub.CodeWasmInvalid, "the hub lists a wasm of %d bytes; this station accepts 1 to %d", v.WasmSize, MaxWasmSize)
	}
	p, _ := versionPath(id, version)
	var b hub.Bundle
	max := (v.WasmSize+manifest.MaxFileSize+2)/3*4 + 64<<10
	if err := c.do(ctx, http.MethodGet, p+"/bundle", nil, nil, &b, max); err != nil {
		return nil, wrap(err, "download %s@%s", id, version)
	}

	owner, _, _ := strings.Cut(id, "/")
	keys := o.TrustedKeys
	var listed []hub.Key
	if keys == nil {
		if listed, err = c.Keys(ctx, owner); err != nil {
			return nil, err
		}
	}
	var used hub.PublicKey
	contents, err := b.Open(func(o string, kid hub.KeyID) (hub.PublicKey, error) {
		if o != owner {
			return hub.PublicKey{}, hub.Errorf(hub.CodeBundleInvalid, "the hub served a bundle of %s's namespace for %s", o, id)
		}
		for _, k := range keys {
			if k.ID == kid {
				used = k
				return k, nil
			}
		}
		for _, k := range listed {
			if k.ID != kid.String() {
				continue
			}
			if k.RevokedAt != nil {
				return hub.PublicKey{}, hub.Errorf(hub.CodeKeyRevoked, "signed with key %s, which %s revoked on %s", kid, owner, k.RevokedAt.Format("2006-01-02"))
			}
			pk, err := hub.ParsePublicKey(k.PublicKey)
			if err != nil || pk.ID != kid {
				return hub.PublicKey{}, hub.Errorf(hub.CodeKeyUnknown, "the hub lists key %s of %s in a form that does not parse", kid, owner)
			}
			used = pk
			return pk, nil
		}
		if keys != nil {
			return hub.PublicKey{}, hub.Errorf(hub.CodeKeyUnknown, "signed with key %s, which is not one of the keys trusted for %s", kid, owner)
		}
		return hub.PublicKey{}, hub.Errorf(hub.CodeKeyUnknown, "signed with key %s, which the hub does not list for %s", kid, owner)
	})
	if err != nil {
		return nil, &VerifyError{Module: id, Version: version, Err: err}
	}
	m, st := contents.Manifest, contents.Statement
	switch {
	case m.ID != id || m.Version != version:
		return nil, refuse(hub.CodeBundleInvalid, "the hub served %s@%s instead", m.ID, m.Version)
	case st.ManifestDigest != v.ManifestDigest:
		return nil, refuse(hub.CodeDigestMismatch, "manifest digest %s, the hub lists %s", st.ManifestDigest, v.ManifestDigest)
	case st.WasmDigest != v.WasmDigest:
		return nil, refuse(hub.CodeDigestMismatch, "wasm digest %s, the hub lists %s", st.WasmDigest, v.WasmDigest)
	case int64(len(b.Wasm)) != v.WasmSize:
		return nil, refuse(hub.CodeDigestMismatch, "wasm is %d bytes, the hub lists %d", len(b.Wasm), v.WasmSize)
	}
	return &Package{Version: v, Manifest: m, ManifestRaw: b.Manifest, Wasm: b.Wasm, Key: used}, nil
}

// WriteDir writes the package as a module directory — module.yaml and the
// wasm at the path the manifest names — so that the station installs it
// like any built module (station.Install reads it back and checks it
// again). dir must exist; files are written through an os.Root, mode 0600.
func (p *Package) WriteDir(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", p.Manifest.ID, err)
	}
	defer root.Close()
	if d := path.Dir(p.Manifest.Wasm); d != "." {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("write %s: %w", p.Manifest.ID, err)
		}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{manifest.FileName, p.ManifestRaw}, {p.Manifest.Wasm, p.Wasm}} {
		if err := root.WriteFile(f.name, f.data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p.Manifest.ID, err)
		}
	}
	return nil
}
