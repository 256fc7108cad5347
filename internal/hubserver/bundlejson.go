package hubserver

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/manifest"
)

// A bundle is one JSON document whose wasm is base64 — 43 MiB of JSON for
// a module at the default 32 MiB limit. Decoded with encoding/json, a
// publish holds the document, then the decoded bytes, several copies of the
// module at once per request; encoded with it, a download does the same.
// So the hub reads and writes bundles as streams: the wasm is decoded from
// the request into a blob as it arrives, and encoded from the blob into the
// answer as it is read. Only the manifest (at most 1 MiB) and the signature
// are held. RATIONALE.md, "Why does the hub stream bundles?".

// maxSignatureJSON bounds the JSON string of a bundle's signature (a
// minisign signature file is about 300 bytes).
const maxSignatureJSON = 64 << 10

// maxManifestJSON bounds the JSON string of a bundle's manifest: the base64
// of the largest manifest, quotes and a little slack for escapes.
var maxManifestJSON = base64.StdEncoding.EncodedLen(manifest.MaxFileSize) + 1024

// bundleError is a decoding failure that is the client's: a malformed
// document, or a part over its limit. Any other error (the body's read, the
// blob's write) is not.
type bundleError struct{ err *hub.Error }

func (e *bundleError) Error() string { return e.err.Error() }
func (e *bundleError) Unwrap() error { return e.err }

func badBundle(format string, args ...any) error {
	return &bundleError{hub.Errorf(hub.CodeBadRequest, "request body: "+format, args...)}
}

// decodeBundle reads a bundle document from r as encoding/json would decode
// it into a hub.Bundle with unknown fields refused and nothing allowed after
// it — and more strictly: field names exactly, each at most once. The wasm
// goes to wasm as it is decoded, at most maxWasm bytes of it (more is
// wasm_invalid); the summary returned describes it.
func decodeBundle(r io.Reader, wasm io.Writer, maxWasm int64) (*hub.BundleSummary, error) {
	d := &bundleDecoder{r: bufio.NewReaderSize(r, 32<<10)}
	b := &hub.BundleSummary{}
	c, err := d.next()
	if errors.Is(err, io.EOF) {
		return nil, &bundleError{hub.Errorf(hub.CodeBadRequest, "the request body is empty; want a JSON document")}
	}
	if err != nil {
		return nil, err
	}
	if c != '{' {
		return nil, badBundle("want a JSON object, got %q", c)
	}
	seen := map[string]bool{}
	w := &wasmSink{w: wasm, h: sha256.New(), max: maxWasm}
	for first := true; ; first = false {
		c, err := d.next()
		if err != nil {
			return nil, d.eof(err)
		}
		if c == '}' && first {
			break
		}
		if !first {
			if c == '}' {
				break
			}
			if c != ',' {
				return nil, badBundle("want , or } after a field, got %q", c)
			}
			if c, err = d.next(); err != nil {
				return nil, d.eof(err)
			}
		}
		if c != '"' {
			return nil, badBundle("want a field name, got %q", c)
		}
		raw, err := d.rawString(64)
		var be *bundleError
		if errors.As(err, &be) && be.err.Code == hub.CodeTooLarge {
			return nil, badBundle("json: unknown field (a name of more than 64 bytes)")
		}
		if err != nil {
			return nil, err
		}
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, badBundle("field name: %v", err)
		}
		if c, err = d.next(); err != nil {
			return nil, d.eof(err)
		}
		if c != ':' {
			return nil, badBundle("want : after field %q, got %q", clip(name), c)
		}
		if seen[name] {
			return nil, badBundle("field %q appears twice", clip(name))
		}
		seen[name] = true
		switch name {
		case "format":
			err = d.scalar(name, 32, &b.Format)
		case "manifest":
			err = d.scalar(name, maxManifestJSON, &b.Manifest)
			var be *bundleError
			if errors.As(err, &be) && be.err.Code == hub.CodeTooLarge {
				err = &bundleError{hub.Errorf(hub.CodeBundleInvalid, "bundle manifest is larger than %d bytes", manifest.MaxFileSize)}
			}
		case "signature":
			err = d.scalar(name, maxSignatureJSON, &b.Signature)
			var be *bundleError
			if errors.As(err, &be) && be.err.Code == hub.CodeTooLarge {
				err = &bundleError{hub.Errorf(hub.CodeSignatureInvalid, "the signature is larger than %d bytes; a minisign signature is about 300", maxSignatureJSON)}
			}
		case "wasm":
			err = d.wasm(w)
		default:
			return nil, badBundle("json: unknown field %q", clip(name))
		}
		if err != nil {
			return nil, err
		}
	}
	switch _, err := d.next(); {
	case err == nil:
		return nil, badBundle("data after the JSON document")
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	b.Wasm = hub.WasmSummary{Size: w.n, Digest: "sha256:" + hex.EncodeToString(w.h.Sum(nil)), Head: w.head}
	return b, nil
}

type bundleDecoder struct {
	r *bufio.Reader
}

// next returns the next byte that is not JSON white space.
func (d *bundleDecoder) next() (byte, error) {
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// eof turns an end of the body inside the document into the client's
// error.
func (d *bundleDecoder) eof(err error) error {
	if errors.Is(err, io.EOF) {
		return badBundle("unexpected end of JSON input")
	}
	return err
}

// rawString reads the rest of a JSON string whose opening quote was read,
// and returns it whole with its quotes (at most max bytes, else too_large).
func (d *bundleDecoder) rawString(max int) ([]byte, error) {
	raw := []byte{'"'}
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return nil, d.eof(err)
		}
		raw = append(raw, c)
		if len(raw) > max {
			return nil, &bundleError{hub.Errorf(hub.CodeTooLarge, "a string in the bundle is longer than %d bytes", max)}
		}
		switch c {
		case '"':
			return raw, nil
		case '\\':
			e, err := d.r.ReadByte()
			if err != nil {
				return nil, d.eof(err)
			}
			raw = append(raw, e)
		}
	}
}

// scalar reads a string, a number or a literal (at most max bytes) and
// decodes it into v with encoding/json, so its meaning is exactly
// encoding/json's. An object or an array is refused: no field of a bundle
// is one.
func (d *bundleDecoder) scalar(name string, max int, v any) error {
	c, err := d.next()
	if err != nil {
		return d.eof(err)
	}
	var raw []byte
	switch {
	case c == '"':
		if raw, err = d.rawString(max); err != nil {
			return err
		}
	case c == '{' || c == '[':
		return badBundle("json: cannot unmarshal %s into the field %s", map[byte]string{'{': "object", '[': "array"}[c], name)
	default:
		raw = []byte{c}
		for {
			c, err := d.r.ReadByte()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if strings.IndexByte(" \t\r\n,}]:", c) >= 0 {
				d.r.UnreadByte()
				break
			}
			if raw = append(raw, c); len(raw) > max {
				return badBundle("the value of %s is longer than %d bytes", name, max)
			}
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badBundle("field %s: %s", name, clip(err.Error()))
	}
	return nil
}

// wasm decodes the wasm field's base64 into w as it reads it.
func (d *bundleDecoder) wasm(w *wasmSink) error {
	c, err := d.next()
	if err != nil {
		return d.eof(err)
	}
	if c == 'n' { // null, which leaves the field empty as encoding/json does
		var rest [3]byte
		if _, err := io.ReadFull(d.r, rest[:]); err != nil || string(rest[:]) != "ull" {
			return badBundle("invalid value for the field wasm")
		}
		if c, err := d.r.Peek(1); err == nil && strings.IndexByte(" \t\r\n,}", c[0]) < 0 {
			return badBundle("invalid value for the field wasm")
		}
		return nil
	}
	if c != '"' {
		return badBundle("json: cannot unmarshal a non-string into the field wasm ([]byte, base64)")
	}
	s := &jsonStringReader{r: d.r}
	_, err = io.Copy(w, base64.NewDecoder(base64.StdEncoding, s))
	var ce base64.CorruptInputError
	var be *bundleError
	switch {
	case errors.As(err, &be):
		return err
	case errors.As(err, &ce):
		return badBundle("field wasm: illegal base64 data at input byte %d", int64(ce))
	case errors.Is(err, io.ErrUnexpectedEOF) && s.done:
		return badBundle("field wasm: the base64 ends in the middle of a group of 4")
	case err != nil:
		return err
	case !s.done:
		return badBundle("unexpected end of JSON input")
	}
	return nil
}

// wasmSink counts, hashes and keeps the first bytes of the wasm on its way
// to storage, and stops it past its limit.
type wasmSink struct {
	w    io.Writer
	h    hash.Hash
	n    int64
	max  int64
	head []byte
}

func (s *wasmSink) Write(p []byte) (int, error) {
	if s.n+int64(len(p)) > s.max {
		return 0, &bundleError{hub.Errorf(hub.CodeWasmInvalid, "the wasm is larger than %d bytes; this hub accepts at most %d", s.max, s.max)}
	}
	if need := len(hub.WasmMagic) - len(s.head); need > 0 {
		s.head = append(s.head, p[:min(need, len(p))]...)
	}
	s.n += int64(len(p))
	s.h.Write(p)
	if _, err := s.w.Write(p); err != nil {
		return 0, fmt.Errorf("store the wasm: %w", err)
	}
	return len(p), nil
}

// jsonStringReader reads the contents of a JSON string whose opening quote
// was read, unescaped, and ends (io.EOF, done set) at its closing quote.
// A control character, a bad escape or the end of the input inside the
// string is a malformed document.
type jsonStringReader struct {
	r    *bufio.Reader
	done bool
}

func (s *jsonStringReader) Read(p []byte) (int, error) {
	if s.done {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) {
		if n > 0 && s.r.Buffered() == 0 {
			break // give what there is; do not wait for more
		}
		c, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return n, badBundle("unexpected end of JSON input")
		}
		if err != nil {
			return n, err
		}
		switch {
		case c == '"':
			s.done = true
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case c < 0x20:
			return n, badBundle("invalid character %q in string literal", c)
		case c == '\\':
			e, err := s.r.ReadByte()
			if err != nil {
				return n, badBundle("unexpected end of JSON input")
			}
			switch e {
			case '"', '\\', '/':
				c = e
			case 'b', 'f', 'n', 'r', 't':
				// Valid JSON, but white space or controls are never
				// base64: let the decoder refuse them, except \r and \n,
				// which encoding/json's base64 skips too.
				c = map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[e]
			case 'u':
				var hexd [4]byte
				if _, err := io.ReadFull(s.r, hexd[:]); err != nil {
					return n, badBundle("unexpected end of JSON input")
				}
				var v [2]byte
				if _, err := hex.Decode(v[:], hexd[:]); err != nil {
					return n, badBundle("invalid escape \\u%s in string literal", hexd)
				}
				if v[0] != 0 || v[1] >= 0x80 {
					c = 0xff // not ASCII, so not base64, whatever rune it is
				} else {
					c = v[1]
				}
			default:
				return n, badBundle("invalid escape %q in string literal", e)
			}
		}
		p[n] = c
		n++
	}
	return n, nil
}

// bundleJSONSize returns the length of the bundle document writeBundle
// writes.
func bundleJSONSize(manifestLen int, wasmSize int64, sigJSON []byte) int64 {
	return int64(len(bundlePrefix)+base64.StdEncoding.EncodedLen(manifestLen)+len(bundleWasm)) +
		(wasmSize+2)/3*4 + int64(len(bundleSig)+len(sigJSON)+len(bundleEnd))
}

const (
	bundlePrefix = `{"format":1,"manifest":"`
	bundleWasm   = `","wasm":"`
	bundleSig    = `","signature":`
	bundleEnd    = "}\n"
)

// writeBundle writes the bundle document — byte for byte what
// encoding/json writes for the hub.Bundle, and a newline — with the wasm
// read from wasm and encoded as it goes. It returns the digest and the
// size of the wasm it sent, for the caller to compare with the record.
func writeBundle(w io.Writer, man []byte, wasm io.Reader, sigJSON []byte) (string, int64, error) {
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(bundlePrefix)
	enc := base64.NewEncoder(base64.StdEncoding, bw)
	enc.Write(man)
	enc.Close()
	bw.WriteString(bundleWasm)
	h := sha256.New()
	enc = base64.NewEncoder(base64.StdEncoding, bw)
	n, err := io.Copy(enc, io.TeeReader(wasm, h))
	if err != nil {
		return "", n, err
	}
	enc.Close()
	bw.WriteString(bundleSig)
	bw.Write(sigJSON)
	bw.WriteString(bundleEnd)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, bw.Flush()
}
