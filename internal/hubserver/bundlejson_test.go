package hubserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/station-dev/station/hub"
)

// strictBundle decodes data the way the hub did before it streamed:
// encoding/json, unknown fields refused, nothing after the document.
func strictBundle(data []byte) (*hub.Bundle, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b hub.Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the document")
	}
	return &b, nil
}

// checkAgainstJSON decodes data with decodeBundle and with encoding/json:
// whatever decodeBundle accepts, encoding/json accepts with the same
// meaning; what it refuses is the client's fault (a *bundleError).
func checkAgainstJSON(t *testing.T, data []byte, maxWasm int64) (*hub.BundleSummary, error) {
	t.Helper()
	var wasm bytes.Buffer
	got, err := decodeBundle(iotest.HalfReader(bytes.NewReader(data)), &wasm, maxWasm)
	want, jerr := strictBundle(data)
	if err != nil {
		var be *bundleError
		if !errors.As(err, &be) {
			t.Fatalf("decodeBundle(%q) = %v, not the client's error", data, err)
		}
		return nil, err
	}
	if jerr != nil {
		t.Fatalf("decodeBundle accepted %q, which encoding/json refuses: %v", data, jerr)
	}
	if got.Format != want.Format || !bytes.Equal(got.Manifest, want.Manifest) || got.Signature != want.Signature || !bytes.Equal(wasm.Bytes(), want.Wasm) {
		t.Fatalf("decodeBundle(%q) = %+v, wasm %q; encoding/json %+v", data, got, wasm.Bytes(), want)
	}
	if sum := hub.SummarizeWasm(want.Wasm); got.Wasm.Size != sum.Size || got.Wasm.Digest != sum.Digest || !bytes.Equal(got.Wasm.Head, sum.Head) {
		t.Fatalf("decodeBundle(%q): wasm summary %+v, want %+v", data, got.Wasm, sum)
	}
	return got, nil
}

var bundleSeeds = []string{
	`{"format":1,"manifest":"bWFu","wasm":"AGFzbQEAAAB4","signature":"sig"}`,
	` { "signature" : "a\nb\u00e9\"" , "wasm" : "AGFz\nbQEA\r\nAAB4" , "format" : 1 , "manifest" : null } `,
	`{"wasm":"AGF\u007ambQEAAAB4"}`,
	`{"wasm":"AGF\/bQEAAAB4"}`,
	`{"wasm":null,"format":2}`,
	`{}`,
	`{"format":1.5}`,
	`{"format":"1"}`,
	`{"format":1e0}`,
	`{"format":true}`,
	`{"format":[1]}`,
	`{"format":{"a":1}}`,
	`{"format":1,"format":1}`,
	`{"Format":1}`,
	`{"wasm":"AGFzbQEAAAB4","wasm":""}`,
	`{"wasm":"!!!"}`,
	`{"wasm":"QQ"}`,
	`{"wasm":"QQ=="}`,
	`{"wasm":"QQ==QQ=="}`,
	`{"wasm":"QR=="}`,
	`{"wasm":"AGFzbQEAAAB4` + "\x01" + `"}`,
	`{"wasm":"\t"}`,
	`{"wasm":"\u0041\u0047\u0046\u007a"}`,
	`{"wasm":"\ud83d\ude00"}`,
	`{"wasm":"AGFz`,
	`{"wasm":`,
	`{"format":1`,
	`{"format":1,}`,
	`{"format":1} {}`,
	`{"format":1} x`,
	`{"extra":1}`,
	`{"signature":"` + "\xff" + `"}`,
	`[]`,
	`null`,
	``,
	`{"format":nul}`,
	`{"wasm":nullx}`,
	`{"wasm":nul`,
}

// TestDecodeBundleIsEncodingJSON: on documents that are valid, malformed,
// oddly escaped, duplicated or truncated, decodeBundle either refuses (the
// client's error) or means exactly what encoding/json means.
func TestDecodeBundleIsEncodingJSON(t *testing.T) {
	accepted := 0
	for _, s := range bundleSeeds {
		if _, err := checkAgainstJSON(t, []byte(s), 1<<20); err == nil {
			accepted++
		}
	}
	if accepted < 8 {
		t.Errorf("only %d seeds decoded; are the seeds what they should be?", accepted)
	}
	// Refusals that must be the right code.
	for _, tt := range []struct {
		doc  string
		max  int64
		code hub.Code
	}{
		{`{"wasm":"` + base64.StdEncoding.EncodeToString(make([]byte, 100)) + `"}`, 99, hub.CodeWasmInvalid},
		{`{"manifest":"` + base64.StdEncoding.EncodeToString(make([]byte, 2<<20)) + `"}`, 1 << 20, hub.CodeBundleInvalid},
		{`{"signature":"` + strings.Repeat("s", 70<<10) + `"}`, 1 << 20, hub.CodeSignatureInvalid},
		{`{"` + strings.Repeat("n", 100) + `":1}`, 1 << 20, hub.CodeBadRequest},
		{`{"format":1,"format":1}`, 1 << 20, hub.CodeBadRequest},
		{``, 1 << 20, hub.CodeBadRequest},
	} {
		_, err := decodeBundle(strings.NewReader(tt.doc), &bytes.Buffer{}, tt.max)
		if hub.CodeOf(err) != tt.code {
			t.Errorf("decodeBundle(%.40q…) = %v, want code %d", tt.doc, err, tt.code)
		}
	}
}

func FuzzDecodeBundle(f *testing.F) {
	for _, s := range bundleSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstJSON(t, data, 1<<16)
	})
}

// TestWriteBundleIsEncodingJSON: the streamed download is byte for byte
// what encoding/json writes for the bundle, and its length is the one
// announced.
func TestWriteBundleIsEncodingJSON(t *testing.T) {
	for _, tt := range []struct {
		man, wasm []byte
		sig       string
	}{
		{[]byte("id: a/b\n"), []byte(hub.WasmMagic + "x"), "untrusted comment: <&>\nRWQ\u2028\n"},
		{[]byte("m"), []byte(hub.WasmMagic), ""},
		{bytes.Repeat([]byte("m"), 1<<20), bytes.Repeat([]byte{0xff}, 100_001), "s"},
	} {
		want, _ := json.Marshal(hub.Bundle{Format: hub.BundleFormat, Manifest: tt.man, Wasm: tt.wasm, Signature: tt.sig})
		want = append(want, '\n')
		sig, _ := json.Marshal(tt.sig)
		var got bytes.Buffer
		digest, n, err := writeBundle(&got, tt.man, iotest.OneByteReader(bytes.NewReader(tt.wasm)), sig)
		if err != nil || digest != hub.Digest(tt.wasm) || n != int64(len(tt.wasm)) {
			t.Errorf("writeBundle = %s, %d, %v", digest, n, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writeBundle wrote\n%.200q\nencoding/json\n%.200q", got.Bytes(), want)
		}
		if size := bundleJSONSize(len(tt.man), int64(len(tt.wasm)), sig); size != int64(len(want)) {
			t.Errorf("bundleJSONSize = %d, want %d", size, len(want))
		}
	}
}
