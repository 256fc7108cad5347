package wasmbuild

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/manifest"
)

// TestDescribeSDKModule asks a module built with the Go SDK for its
// commands' schemas.
func TestDescribeSDKModule(t *testing.T) {
	wasm := ForTest(t, "examples/quote")
	start := time.Now()
	d, err := Describe(context.Background(), wasm, DescribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("described in %s", time.Since(start))
	if d == nil || len(d.Commands) != 2 {
		t.Fatalf("description %+v, want the two commands of examples/quote", d)
	}
	for name, c := range d.Commands {
		if c.InputSchema == nil || c.OutputSchema == nil || c.Raw || c.Notes != nil {
			t.Errorf("%s: %+v, want both schemas and no notes", name, c)
		}
		for _, s := range []json.RawMessage{c.InputSchema, c.OutputSchema} {
			if _, err := manifest.CompileSchema(s); err != nil {
				t.Errorf("%s: %s: %v", name, s, err)
			}
		}
	}
	if in := string(d.Commands["quote"].InputSchema); !strings.Contains(in, `"required":["customer","currency","items"]`) {
		t.Errorf("quote's input schema: %s", in)
	}
}

// Hand-assembled modules, for what an SDK module never does.

const (
	i32 = 0x7f
	i64 = 0x7e
)

// wfunc is a function of a test module: its export name ("" for none),
// type and instructions (without the final end).
type wfunc struct {
	export          string
	params, results []byte
	code            []byte
}

// wimport is an imported function.
type wimport struct {
	module, name    string
	params, results []byte
}

// assemble returns a module with the imports, then the functions, one
// exported page of memory, and data at offset 0.
func assemble(imports []wimport, funcs []wfunc, data string) []byte {
	uleb := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	vec := func(items ...[]byte) []byte {
		b := uleb(uint64(len(items)))
		for _, it := range items {
			b = append(b, it...)
		}
		return b
	}
	name := func(s string) []byte { return append(uleb(uint64(len(s))), s...) }
	section := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
	}
	functype := func(params, results []byte) []byte {
		return append(append([]byte{0x60}, vec(bytesOf(params)...)...), vec(bytesOf(results)...)...)
	}
	var types, imps, fidx, exports, codes [][]byte
	for _, im := range imports {
		imps = append(imps, append(append(name(im.module), name(im.name)...), 0x00, byte(len(types))))
		types = append(types, functype(im.params, im.results))
	}
	for i, f := range funcs {
		fidx = append(fidx, []byte{byte(len(types))})
		types = append(types, functype(f.params, f.results))
		if f.export != "" {
			exports = append(exports, append(name(f.export), 0x00, byte(len(imports)+i)))
		}
		body := append([]byte{0x00}, append(f.code, 0x0b)...) // no locals
		codes = append(codes, append(uleb(uint64(len(body))), body...))
	}
	exports = append(exports, append(name("memory"), 0x02, 0x00))
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, vec(types...))...)
	if len(imps) > 0 {
		m = append(m, section(2, vec(imps...))...)
	}
	m = append(m, section(3, vec(fidx...))...)
	m = append(m, section(5, vec([]byte{0x00, 0x01}))...)
	m = append(m, section(7, vec(exports...))...)
	m = append(m, section(10, vec(codes...))...)
	if data != "" {
		m = append(m, section(11, vec(append([]byte{0x00, 0x41, 0x00, 0x0b}, name(data)...)))...)
	}
	return m
}

// bytesOf splits b into one-byte items, for vec.
func bytesOf(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// i64const is the instruction i64.const v.
func i64const(v int64) []byte { return append([]byte{0x42}, sleb(v)...) }

// i32const is the instruction i32.const v.
func i32const(v int32) []byte { return append([]byte{0x41}, sleb(int64(v))...) }

// sleb encodes v as a signed LEB128 number.
func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// describeReturning is a station_describe whose body is code.
func describeReturning(code ...[]byte) wfunc {
	var c []byte
	for _, b := range code {
		c = append(c, b...)
	}
	return wfunc{export: ExportDescribe, results: []byte{i64}, code: c}
}

const emptyDoc = `{"commands":{}}`

func TestDescribeHandAssembled(t *testing.T) {
	ctx := context.Background()
	if d, err := Describe(ctx, assemble(nil, nil, ""), DescribeOptions{}); d != nil || err != nil {
		t.Errorf("a module without %s: %+v, %v; want nothing and no error", ExportDescribe, d, err)
	}
	d, err := Describe(ctx, assemble(nil, []wfunc{describeReturning(i64const(int64(len(emptyDoc))))}, emptyDoc), DescribeOptions{})
	if err != nil || d == nil || d.Commands == nil || len(d.Commands) != 0 {
		t.Errorf("the empty description: %+v, %v", d, err)
	}

	// The station's imports answer as they do with no call active, and
	// nothing else answers: the module traps unless buf_len returned
	// -unavailable and http_request unavailable with no buffer.
	stubs := []wimport{
		{module: "station", name: "buf_len", params: []byte{i32}, results: []byte{i32}},
		{module: "station", name: "http_request", params: []byte{i32, i32}, results: []byte{i64}},
		{module: "station", name: "buf_len", params: []byte{i32}, results: []byte{i32}}, // declared twice, as Go does
	}
	checks := describeReturning(
		i32const(1), []byte{0x10, 0}, i32const(-7), []byte{0x47, 0x04, 0x40, 0x00, 0x0b}, // buf_len(1) != -7: unreachable
		i32const(0), i32const(0), []byte{0x10, 1}, i64const(7<<32), []byte{0x52, 0x04, 0x40, 0x00, 0x0b}, // http_request(0, 0) != Pack(7, 0)
		i32const(2), []byte{0x10, 2}, []byte{0x1a}, // the second buf_len links too
		i64const(int64(len(emptyDoc))),
	)
	if d, err := Describe(ctx, assemble(stubs, []wfunc{checks}, emptyDoc), DescribeOptions{}); err != nil || d == nil {
		t.Errorf("stubbed imports: %v", err)
	}

	// loop br 0 end; a clock subscription of 1000 s (poll_oneoff).
	loop := []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}
	sleepSub := string(make([]byte, 16)) + "\x01\x00\x00\x00\x00\x00\x00\x00" + "\x00\x10\xa5\xd4\xe8\x00\x00\x00"
	tests := []struct {
		name    string
		wasm    []byte
		opts    DescribeOptions
		wantErr string
	}{
		{"not wasm", []byte("not a module"), DescribeOptions{}, "not a module the station can run"},
		{"wrong type", assemble(nil, []wfunc{{export: ExportDescribe, results: []byte{i32}, code: i32const(0)}}, ""), DescribeOptions{},
			"station_describe has type () -> (i32); it must be () -> i64"},
		{"another import module", assemble([]wimport{{module: "env", name: "exec\x1b[31m"}}, []wfunc{describeReturning(i64const(0))}, ""), DescribeOptions{},
			`imports "env"."exec\x1b[31m", which the station does not offer`},
		{"endless", assemble(nil, []wfunc{describeReturning(loop, i64const(0))}, ""), DescribeOptions{Timeout: 200 * time.Millisecond},
			"station_describe: the module did not finish within 200ms"},
		{"endless start", assemble(nil, []wfunc{{export: "_initialize", code: loop}, describeReturning(i64const(0))}, ""), DescribeOptions{Timeout: 200 * time.Millisecond},
			"start (_initialize): the module did not finish within 200ms"},
		{"a long sleep ends with the deadline", assemble(
			[]wimport{{module: "wasi_snapshot_preview1", name: "poll_oneoff", params: []byte{i32, i32, i32, i32}, results: []byte{i32}}},
			[]wfunc{describeReturning(i32const(0), i32const(128), i32const(1), i32const(192), []byte{0x10, 0, 0x1a}, i64const(0))}, sleepSub),
			DescribeOptions{Timeout: 200 * time.Millisecond}, "station_describe: the module did not finish within 200ms"},
		{"a trap", assemble(nil, []wfunc{describeReturning([]byte{0x00})}, ""), DescribeOptions{}, "station_describe: wasm error: unreachable"},
		{"a trap at start, with standard error", assemble(
			[]wimport{{module: "wasi_snapshot_preview1", name: "fd_write", params: []byte{i32, i32, i32, i32}, results: []byte{i32}}},
			[]wfunc{{export: "_initialize", code: append(append(append(append(i32const(2), i32const(16)...), i32const(1)...), i32const(48)...), 0x10, 0, 0x1a, 0x00)}, describeReturning(i64const(0))},
			string(make([]byte, 16))+"\x20\x00\x00\x00\x0d\x00\x00\x00"+string(make([]byte, 8))+"panic: boom\x07\n"),
			DescribeOptions{}, "wasm error: unreachable"},
		{"an exit", assemble(
			[]wimport{{module: "wasi_snapshot_preview1", name: "proc_exit", params: []byte{i32}}},
			[]wfunc{describeReturning(i32const(3), []byte{0x10, 0}, i64const(0))}, ""),
			DescribeOptions{}, "station_describe: the module exited with code 3"},
		{"memory past the bound", assemble(nil, []wfunc{describeReturning(i32const(100), []byte{0x40, 0x00}, i32const(-1), []byte{0x46, 0x04, 0x40, 0x00, 0x0b}, i64const(0))}, ""),
			DescribeOptions{Memory: 2 << 16}, "wasm error: unreachable"}, // memory.grow(100) == -1: unreachable
		{"outside memory", assemble(nil, []wfunc{describeReturning(i64const(0xfff0<<32 | 0x100))}, ""), DescribeOptions{},
			"the document (256 bytes at 0xfff0) is outside the module's memory (65536 bytes)"},
		{"too large", assemble(nil, []wfunc{describeReturning(i64const(MaxDescription + 1))}, ""), DescribeOptions{},
			"the document is 41943041 bytes; at most 41943040"},
		{"not JSON", assemble(nil, []wfunc{describeReturning(i64const(5))}, "nope!"), DescribeOptions{}, "station_describe: not a description"},
		{"the wrong JSON", assemble(nil, []wfunc{describeReturning(i64const(14))}, `{"commands":1}`), DescribeOptions{}, "station_describe: not a description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			d, err := Describe(ctx, tt.wasm, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Describe: %+v, %v; want an error with %q", d, err, tt.wantErr)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			if tt.name == "a trap at start, with standard error" && (!strings.HasPrefix(err.Error(), "start (_initialize): ") || !strings.HasSuffix(err.Error(), "its standard error ended with:\npanic: boom\x07")) {
				t.Errorf("error %q, want the module's standard error", err)
			}
		})
	}
}

func TestTail(t *testing.T) {
	var tl tail
	tl.Write([]byte("dropped " + strings.Repeat("x", maxTail)))
	tl.Write([]byte("\xffend\n"))
	s := tl.String()
	if len(s) > maxTail+2 || !strings.HasSuffix(s, "x\uFFFDend") || strings.Contains(s, "dropped") {
		t.Errorf("tail: %d bytes, ending %q", len(s), s[max(0, len(s)-10):])
	}
	big := strings.Repeat("y", 3*maxTail) + "last"
	if n, err := tl.Write([]byte(big)); n != len(big) || err != nil || !strings.HasSuffix(tl.String(), "ylast") || len(tl.String()) != maxTail {
		t.Errorf("a write larger than the tail: %d, %v, %d bytes kept", n, err, len(tl.String()))
	}
}
