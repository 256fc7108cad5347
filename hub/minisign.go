package hub

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Signatures and public keys use minisign's formats
// (https://jedisct1.github.io/minisign/), so that `minisign -V` verifies a
// bundle statement and `minisign -S -l` can sign one. Only the pure Ed25519
// algorithm ("Ed", minisign's legacy format) is accepted: the signed message
// is a short statement, so prehashing buys nothing, and the prehashed "ED"
// algorithm would need BLAKE2b-512, which the standard library does not have
// (RATIONALE.md, "Why minisign's legacy Ed algorithm?").

// AlgorithmEd is the pure Ed25519 signature algorithm tag.
const AlgorithmEd = "Ed"

// algorithmPrehashed is minisign's prehashed (BLAKE2b-512) tag, refused with
// a message that says how to sign instead.
const algorithmPrehashed = "ED"

const (
	untrustedPrefix = "untrusted comment: "
	trustedPrefix   = "trusted comment: "
	// maxComment bounds a comment, as minisign does.
	maxComment = 1024
)

// KeyID is a minisign key id: 8 bytes, shown as 16 upper-case hex digits of
// their little-endian value, as minisign shows it.
type KeyID [8]byte

// String returns the id as minisign shows it.
func (id KeyID) String() string {
	return fmt.Sprintf("%016X", binary.LittleEndian.Uint64(id[:]))
}

// ParseKeyID parses the 16 hex digits String returns.
func ParseKeyID(s string) (KeyID, error) {
	var id KeyID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return KeyID{}, fmt.Errorf("key id %q: want 16 hex digits", clip(s))
	}
	for i := range id {
		id[i] = b[len(b)-1-i] // shown big-endian, stored little-endian
	}
	return id, nil
}

// KeyIDOf derives a key id from an Ed25519 public key: the first 8 bytes of
// its SHA-256. Keys made by station have derived ids, so the secret key file
// needs nothing but the key; keys made by minisign have random ids, which
// work the same.
func KeyIDOf(pub ed25519.PublicKey) KeyID {
	sum := sha256.Sum256(pub)
	var id KeyID
	copy(id[:], sum[:8])
	return id
}

// PublicKey is a minisign Ed25519 public key.
type PublicKey struct {
	ID  KeyID
	Key ed25519.PublicKey
}

// ParsePublicKey parses a minisign public key: a whole minisign.pub file
// (an untrusted comment line, then the key line) or just the base64 key
// line.
func ParsePublicKey(s string) (PublicKey, error) {
	lines := splitLines(s)
	switch {
	case len(lines) == 2 && strings.HasPrefix(lines[0], untrustedPrefix):
		lines = lines[1:]
	case len(lines) != 1:
		return PublicKey{}, errors.New("public key: want a minisign.pub file (comment line and key line) or its key line")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(lines[0])
	if err != nil || len(raw) != 2+8+ed25519.PublicKeySize {
		return PublicKey{}, errors.New("public key: the key line is not the base64 of a minisign public key (56 characters, starting RWQ or RWS)")
	}
	if string(raw[:2]) != AlgorithmEd {
		return PublicKey{}, fmt.Errorf("public key: algorithm %q, want %q", printable(string(raw[:2])), AlgorithmEd)
	}
	var k PublicKey
	copy(k.ID[:], raw[2:10])
	k.Key = ed25519.PublicKey(bytes.Clone(raw[10:]))
	return k, nil
}

// String returns the base64 key line.
func (k PublicKey) String() string {
	raw := make([]byte, 0, 42)
	raw = append(raw, AlgorithmEd...)
	raw = append(raw, k.ID[:]...)
	raw = append(raw, k.Key...)
	return base64.StdEncoding.EncodeToString(raw)
}

// File returns the key as a minisign.pub file.
func (k PublicKey) File() string {
	return untrustedPrefix + "minisign public key " + k.ID.String() + "\n" + k.String() + "\n"
}

// Signature is a minisign signature (the content of a .minisig file).
type Signature struct {
	// Algorithm is AlgorithmEd for every signature ParseSignature accepts.
	Algorithm string
	KeyID     KeyID
	// Sig is the Ed25519 signature of the message.
	Sig []byte
	// UntrustedComment is not covered by any signature.
	UntrustedComment string
	// TrustedComment is covered by GlobalSig.
	TrustedComment string
	// GlobalSig is the Ed25519 signature of Sig followed by TrustedComment.
	GlobalSig []byte
}

// ParseSignature parses a .minisig file: four lines, the untrusted comment,
// the signature, the trusted comment and the global signature.
func ParseSignature(s string) (Signature, error) {
	lines := splitLines(s)
	if len(lines) != 4 {
		return Signature{}, fmt.Errorf("signature: want the 4 lines of a .minisig file, got %d", len(lines))
	}
	var sig Signature
	var ok bool
	if sig.UntrustedComment, ok = strings.CutPrefix(lines[0], untrustedPrefix); !ok {
		return Signature{}, errors.New(`signature: line 1 must start with "untrusted comment: "`)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(lines[1])
	if err != nil || len(raw) != 2+8+ed25519.SignatureSize {
		return Signature{}, errors.New("signature: line 2 is not the base64 of a minisign signature")
	}
	sig.Algorithm = string(raw[:2])
	switch sig.Algorithm {
	case AlgorithmEd:
	case algorithmPrehashed:
		return Signature{}, errors.New(`signature: prehashed minisign signatures ("ED") are not supported: sign with the legacy algorithm (minisign -S -l) or with station`)
	default:
		return Signature{}, fmt.Errorf("signature: algorithm %q, want %q", printable(sig.Algorithm), AlgorithmEd)
	}
	copy(sig.KeyID[:], raw[2:10])
	sig.Sig = bytes.Clone(raw[10:])
	if sig.TrustedComment, ok = strings.CutPrefix(lines[2], trustedPrefix); !ok {
		return Signature{}, errors.New(`signature: line 3 must start with "trusted comment: "`)
	}
	if sig.GlobalSig, err = base64.StdEncoding.Strict().DecodeString(lines[3]); err != nil || len(sig.GlobalSig) != ed25519.SignatureSize {
		return Signature{}, errors.New("signature: line 4 is not the base64 of an Ed25519 signature")
	}
	for _, c := range []string{sig.UntrustedComment, sig.TrustedComment} {
		if err := checkComment(c); err != nil {
			return Signature{}, fmt.Errorf("signature: %w", err)
		}
	}
	return sig, nil
}

// String returns the signature as a .minisig file.
func (s Signature) String() string {
	raw := make([]byte, 0, 74)
	raw = append(raw, s.Algorithm...)
	raw = append(raw, s.KeyID[:]...)
	raw = append(raw, s.Sig...)
	return untrustedPrefix + s.UntrustedComment + "\n" +
		base64.StdEncoding.EncodeToString(raw) + "\n" +
		trustedPrefix + s.TrustedComment + "\n" +
		base64.StdEncoding.EncodeToString(s.GlobalSig) + "\n"
}

// Sign signs msg with priv in minisign's legacy ("Ed") format. The comments
// must be one line each, at most 1024 bytes, without control characters.
func Sign(priv ed25519.PrivateKey, id KeyID, msg []byte, untrusted, trusted string) (Signature, error) {
	for _, c := range []string{untrusted, trusted} {
		if err := checkComment(c); err != nil {
			return Signature{}, fmt.Errorf("sign: %w", err)
		}
	}
	sig := Signature{Algorithm: AlgorithmEd, KeyID: id, UntrustedComment: untrusted, TrustedComment: trusted}
	sig.Sig = ed25519.Sign(priv, msg)
	sig.GlobalSig = ed25519.Sign(priv, append(bytes.Clone(sig.Sig), trusted...))
	return sig, nil
}

// Verify checks that sig is k's signature of msg, trusted comment included.
func (k PublicKey) Verify(msg []byte, sig Signature) error {
	switch {
	case sig.Algorithm != AlgorithmEd:
		return fmt.Errorf("verify signature: algorithm %q, want %q", printable(sig.Algorithm), AlgorithmEd)
	case sig.KeyID != k.ID:
		return fmt.Errorf("verify signature: made with key %s, not %s", sig.KeyID, k.ID)
	case len(k.Key) != ed25519.PublicKeySize:
		return errors.New("verify signature: the public key is malformed")
	case !ed25519.Verify(k.Key, msg, sig.Sig):
		return fmt.Errorf("verify signature: the signature by key %s does not match the signed bytes", k.ID)
	case !ed25519.Verify(k.Key, append(bytes.Clone(sig.Sig), sig.TrustedComment...), sig.GlobalSig):
		return fmt.Errorf("verify signature: the trusted comment was altered after signing by key %s", k.ID)
	}
	return nil
}

// splitLines splits s into lines, dropping one final newline and the "\r"
// of CRLF line ends.
func splitLines(s string) []string {
	s = strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	return strings.Split(s, "\n")
}

func checkComment(c string) error {
	if len(c) > maxComment {
		return fmt.Errorf("comment is longer than %d bytes", maxComment)
	}
	if !utf8.ValidString(c) {
		return errors.New("comment is not valid UTF-8")
	}
	for _, r := range c {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return fmt.Errorf("comment contains the control character %U", r)
		}
	}
	return nil
}

// printable quotes at most 32 bytes of s for an error message.
func printable(s string) string {
	return clip(strings.ToValidUTF8(s, "?"))
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
