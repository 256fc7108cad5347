package wasmbuild

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/manifest"
)

// writeCModule writes the C files into a new directory and returns it.
func writeCModule(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCToolchain(t *testing.T) {
	RequireToolchain(t, LangC)
	desc, _ := CToolchain()
	if !strings.HasPrefix(desc, "clang ") || !strings.Contains(desc, "wasm32-wasi, sysroot /") {
		t.Errorf("CToolchain() = %q", desc)
	}
	t.Log(desc)
	if got := cInstallHint("16.0.6"); got != "apt-get install clang lld wasi-libc libclang-rt-16-dev-wasm32" {
		t.Errorf("cInstallHint(16) = %q", got)
	}
	if got := cInstallHint(""); got != "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32" {
		t.Errorf("cInstallHint() = %q", got)
	}
	if v := clangVersion("Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\n"); v != "14.0.6" {
		t.Errorf("clangVersion = %q", v)
	}
}

// TestLookC checks what CToolchain says when the toolchain is missing or
// broken: the packages to install.
func TestLookC(t *testing.T) {
	ctx := context.Background()
	t.Setenv("STATION_CLANG", filepath.Join(t.TempDir(), "no-such-clang"))
	_, err := lookC(ctx)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "STATION_CLANG=") ||
		!strings.HasSuffix(err.Error(), "install it with: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32") {
		t.Errorf("no clang: %v", err)
	}
	// A clang 16 that cannot link for wasm32-wasi (compiler-rt missing).
	fake := filepath.Join(t.TempDir(), "clang")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'clang version 16.0.6'; exit 0; fi\necho 'wasm-ld: error: cannot open libclang_rt.builtins-wasm32.a' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STATION_CLANG", fake)
	_, err = lookC(ctx)
	t.Log(err)
	if _, statErr := os.Stat("/usr/include/wasm32-wasi/stdlib.h"); statErr != nil {
		if _, statErr = os.Stat("/usr/share/wasi-sysroot"); statErr != nil {
			// No wasi-libc on this machine: that is what it says.
			if err == nil || !strings.Contains(err.Error(), "needs wasi-libc") || !strings.Contains(err.Error(), "libclang-rt-16-dev-wasm32") {
				t.Errorf("no wasi-libc: %v", err)
			}
			return
		}
	}
	if err == nil || !strings.Contains(err.Error(), "install: apt-get install clang lld wasi-libc libclang-rt-16-dev-wasm32") ||
		!strings.Contains(err.Error(), "libclang_rt.builtins-wasm32.a") {
		t.Errorf("a clang that cannot link: %v", err)
	}
}

// TestCHelloModule checks the shape of the example: a reactor that
// exports the ABI and imports only from station and WASI.
func TestCHelloModule(t *testing.T) {
	wasm := ForTestLang(t, "examples/c/hello")
	t.Logf("examples/c/hello: %d bytes", len(wasm))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	exports := m.ExportedFunctions()
	for _, name := range []string{"station_abi_1", "station_call", "_initialize"} {
		if _, ok := exports[name]; !ok {
			t.Errorf("no export %s", name)
		}
	}
	if _, ok := exports["_start"]; ok {
		t.Error("exports _start: not a reactor")
	}
	if f := exports["station_call"]; f != nil {
		if p, r := f.ParamTypes(), f.ResultTypes(); len(p) != 2 || p[0] != api.ValueTypeI32 || p[1] != api.ValueTypeI32 || len(r) != 1 || r[0] != api.ValueTypeI32 {
			t.Errorf("station_call has type %v -> %v", p, r)
		}
	}
	if _, ok := m.ExportedMemories()["memory"]; !ok {
		t.Error("no exported memory")
	}
	imported := map[string]bool{}
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case "station":
			imported[name] = true
		case "wasi_snapshot_preview1":
		default:
			t.Errorf("imports %s.%s", mod, name)
		}
	}
	for _, name := range []string{"buf_len", "buf_read", "buf_free", "output_set", "log", "http_request"} {
		if !imported[name] {
			t.Errorf("does not import station.%s", name)
		}
	}
	for _, name := range []string{"process_run", "llm_complete"} {
		if imported[name] {
			t.Errorf("imports station.%s, which it does not use", name)
		}
	}
	if _, err := manifest.Load(filepath.Join(cRepoRoot(t), "examples", "c", "hello")); err != nil {
		t.Errorf("module.yaml: %v", err)
	}
}

func cRepoRoot(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestBuildCErrors(t *testing.T) {
	RequireToolchain(t, LangC)
	ctx := context.Background()
	sdk := filepath.Join(cRepoRoot(t), "sdk", "c")
	out := filepath.Join(t.TempDir(), "m.wasm")

	if err := buildC(ctx, t.TempDir(), out, sdk); err == nil || !strings.Contains(err.Error(), "no .c files") {
		t.Errorf("empty dir: %v", err)
	}
	bad := writeCModule(t, map[string]string{"bad.c": "#include \"station.h\"\nint f(void) { return undeclared; }\n"})
	if err := buildC(ctx, bad, out, sdk); err == nil || !strings.Contains(err.Error(), "bad.c:2") || !strings.Contains(err.Error(), "undeclared") {
		t.Errorf("a compile error: %v", err)
	}
	warn := writeCModule(t, map[string]string{"warn.c": "#include \"station.h\"\nstatic int unused(void) { return 0; }\nconst station_command station_commands[] = {{0}};\n"})
	if err := buildC(ctx, warn, out, sdk); err == nil || !strings.Contains(err.Error(), "-Werror") {
		t.Errorf("a warning: %v", err)
	}
	nocmds := writeCModule(t, map[string]string{"m.c": "#include \"station.h\"\n"})
	if err := buildC(ctx, nocmds, out, sdk); err == nil || !strings.Contains(err.Error(), "station_commands") {
		t.Errorf("no table: %v", err)
	}
	if err := buildC(ctx, warn, out, ""); err == nil || !strings.Contains(err.Error(), "no station.c") {
		t.Errorf("no SDK: %v", err)
	}
}

// TestBuildCVendored builds a module that carries its own copy of the SDK:
// that copy is used, and the SDK directory is not.
func TestBuildCVendored(t *testing.T) {
	RequireToolchain(t, LangC)
	root := cRepoRoot(t)
	files := map[string]string{}
	for _, name := range []string{"station.h", "station.c"} {
		b, err := os.ReadFile(filepath.Join(root, "sdk", "c", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	files["station.c"] = strings.Replace(files["station.c"], `"unknown command %s (commands: %s)"`, `"vendored: unknown command %s (commands: %s)"`, 1)
	hello, err := os.ReadFile(filepath.Join(root, "examples", "c", "hello", "hello.c"))
	if err != nil {
		t.Fatal(err)
	}
	files["hello.c"] = string(hello)
	dir := writeCModule(t, files)
	out := filepath.Join(t.TempDir(), "m.wasm")
	if err := buildC(context.Background(), dir, out, filepath.Join(t.TempDir(), "nothing-here")); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	g := newCGuest(t, wasm)
	if rc, msg := g.call(t, "nope", nil); rc != 2 || msg != `vendored: unknown command "nope" (commands: fetch, greet)` {
		t.Errorf("vendored build: %d %q", rc, msg)
	}
}

// A cGuest runs a C module in wazero with a stand-in for the station's
// imports, for tests of the SDK that need control over the host side (and
// speed): every call's buffers must be consumed by the module.
type cGuest struct {
	ctx  context.Context
	mod  api.Module
	fn   api.Function
	bufs map[uint32][]byte
	next uint32
	out  []byte
	set  bool // output_set was called in this call
	logs []string
	// http answers http_request; nil refuses with denied.
	http func(doc []byte) (status uint32, answer []byte)
}

func newCGuest(t testing.TB, wasm []byte) *cGuest {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(2048).WithCompilationCache(CacheForTest()))
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	g := &cGuest{ctx: ctx, bufs: map[uint32][]byte{}}
	read := func(m api.Module, p, n uint32) []byte {
		b, ok := m.Memory().Read(p, n)
		if !ok {
			panic(fmt.Sprintf("the guest passed [%d, +%d) outside memory", p, n))
		}
		return bytes.Clone(b)
	}
	_, err := rt.NewHostModuleBuilder("station").
		NewFunctionBuilder().WithFunc(func(h uint32) int32 {
		b, ok := g.bufs[h]
		if !ok {
			return -1
		}
		return int32(len(b))
	}).Export("buf_len").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, h, p, n uint32) int32 {
		b, ok := g.bufs[h]
		switch {
		case !ok:
			return -3
		case n < uint32(len(b)):
			return -4
		case !m.Memory().Write(p, b):
			return -2
		}
		delete(g.bufs, h)
		return int32(len(b))
	}).Export("buf_read").
		NewFunctionBuilder().WithFunc(func(h uint32) { delete(g.bufs, h) }).Export("buf_free").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, p, n uint32) int32 {
		if n > 16<<20 {
			return -4
		}
		g.out, g.set = read(m, p, n), true
		return 0
	}).Export("output_set").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, level, p, n uint32) int32 {
		if n > 64<<10 {
			return -4
		}
		g.logs = append(g.logs, fmt.Sprintf("%d %s", level, read(m, p, n)))
		return 0
	}).Export("log").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, p, n uint32) uint64 {
		doc := read(m, p, n)
		status, answer := uint32(1), []byte(`{"code":"denied","capability":"network","target":"x:443","reason":"r","message":"no network here"}`)
		if g.http != nil {
			status, answer = g.http(doc)
		}
		var h uint32
		if answer != nil {
			h = g.newBuf(answer)
		}
		return uint64(status)<<32 | uint64(h)
	}).Export("http_request").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	g.mod, err = rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	g.fn = g.mod.ExportedFunction("station_call")
	return g
}

func (g *cGuest) newBuf(b []byte) uint32 {
	g.next++
	g.bufs[g.next] = b
	return g.next
}

// call runs command on input (nil: no input buffer) and returns the
// module's result code and output.
func (g *cGuest) call(t testing.TB, command string, input []byte) (uint32, string) {
	t.Helper()
	clear(g.bufs)
	g.out, g.set, g.logs = nil, false, nil
	cmd := g.newBuf([]byte(command))
	var in uint32
	if input != nil {
		in = g.newBuf(input)
	}
	res, err := g.fn.Call(g.ctx, uint64(cmd), uint64(in))
	if err != nil {
		t.Fatalf("%s: the module trapped: %v", command, err)
	}
	if len(g.bufs) != 0 {
		t.Errorf("%s: the module left %d buffers unread", command, len(g.bufs))
	}
	return uint32(res[0]), string(g.out)
}

// cGoJSON encodes v as the Go SDK encodes results.
func cGoJSON(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type cGreeting struct {
	Greeting string `json:"greeting"`
}

// TestCHelloGreet runs greet in the stand-in host, where every call is
// cheap: the result must be byte for byte what the Go SDK would encode.
func TestCHelloGreet(t *testing.T) {
	g := newCGuest(t, ForTestLang(t, "examples/c/hello"))
	ok := func(input, name string) {
		t.Helper()
		rc, out := g.call(t, "greet", []byte(input))
		if want := cGoJSON(t, cGreeting{"Hello, " + name + "!"}); rc != 0 || out != want {
			t.Errorf("greet %q = %d %q, want 0 %q", input, rc, out, want)
		}
	}
	fail := func(input, prefix string) {
		t.Helper()
		var in []byte
		if input != "<none>" {
			in = []byte(input)
		}
		rc, out := g.call(t, "greet", in)
		if rc != 1 || !strings.HasPrefix(out, prefix) {
			t.Errorf("greet %q = %d %q, want 1 %q...", input, rc, out, prefix)
		}
	}
	ok(`{"name": "Ada"}`, "Ada")
	ok(`{"name": "  Ada  "}`, "Ada")
	ok(" \t\n{\"name\":\"\\t\\n\\r\\f\\u000bAda \\u000b\"}\r\n", "Ada")
	ok(`{"name": "\u00c9mile \ud83d\ude00 \"q\" \\ \/ <&>"}`, "Émile 😀 \"q\" \\ / <&>")
	ok(`{"name": "Ünïcödé ☃ 𝄞"}`, "Ünïcödé ☃ 𝄞")
	ok(`{"name": "\ud800"}`, "\ufffd")             // a lone surrogate
	ok(`{"name": "\udc00\ud83d"}`, "\ufffd\ufffd") // two
	ok(`{"name": "\ud83dx"}`, "\ufffdx")
	ok(`{"name": "\ud83d\u0041"}`, "\ufffdA")
	ok(`{"name": "x\u2028y\u2029"}`, "x\u2028y\u2029")
	ok(`{"name": "x\u007f\u0080"}`, "x\u007f\u0080")
	ok(`{"na\u006de": "Ada"}`, "Ada") // keys are decoded before they are compared
	// A NUL is part of the name, escaped in the result: never cut short.
	ok(`{"name": "A\u0000da"}`, "A\x00da")
	ok(`{"name": "\u0000"}`, "\x00")
	if rc, out := g.call(t, "greet", []byte(`{"name":"A\u0000da"}`)); rc != 0 || out != `{"greeting":"Hello, A\u0000da!"}` {
		t.Errorf("NUL: %d %q", rc, out)
	}
	if rc, out := g.call(t, "greet", []byte(`{"name":"\u0001\u001f\"\\\b"}`)); rc != 0 || out != `{"greeting":"Hello, \u0001\u001f\"\\\b!"}` {
		t.Errorf("control characters: %d %q", rc, out)
	}

	for _, in := range []string{`{}`, `{"name": ""}`, `{"name": "   "}`, `{"name": " \t\n "}`, `{"name": 5}`, `{"name": null}`,
		`{"name": ["Ada"]}`, `{"name": {"first": "Ada"}}`, `{"name": true}`, `null`, ` null `, `<none>`, ` `, "\n\t"} {
		fail(in, "name is required")
	}
	for _, in := range []string{`[1]`, `"x"`, `5`, `true`, `[]`, `garbage`, `{`, `{"name": "Ada"`, `{"name": "Ada",}`,
		`{"name": "Ada"} {}`, `{"name": "Ada"}x`, `{"name" "Ada"}`, `{name: "Ada"}`, `{'name': 'Ada'}`, `{"name": "A` + "\n" + `da"}`,
		`{"name": "\x"}`, `{"name": "\u12"}`, `{"name": "\u12g4"}`, "{\"name\": \"\xff\"}", "{\"name\": \"\xc3\"}",
		"{\"name\": \"\xed\xa0\x80\"}", "{\"name\": \"\xc0\xaf\"}", "{\"name\": \"\xf4\x90\x80\x80\"}", "\xef\xbb\xbf{}",
		`{"name": "Ada", "name": "Bob"}`, `{"name": "Ada", "na\u006de": "Bob"}`, `{"name": "Ada", "extra": 1}`, `{"Name": "Ada"}`,
		`{"name": 01}`, `{"name": 1.}`, `{"name": -}`, `{"name": .5}`, `{"name": +1}`, `{"name": 1e}`, `{"name": tru}`, `{"name": nul}`,
		`{"name": NaN}`, `{"name": Infinity}`, `{"name": [1,]}`, `{"name": "Ada"} // comment`, "\x00", `{"name": "Ada"}` + "\x00"} {
		fail(in, "invalid input: ")
	}
	messages := map[string]string{
		`[1]`:                            `invalid input: the input is an array, not a JSON object`,
		`"x"`:                            `invalid input: the input is a string, not a JSON object`,
		`{"name": "Ada"`:                 `invalid input: unexpected end of JSON input`,
		`{"name": "Ada"}x`:               `invalid input: data after the JSON document at byte 15`,
		`{"name": "Ada", "extra": 1}`:    `invalid input: unknown field "extra"`,
		`{"name": "Ada", "name": "Bob"}`: `invalid input: duplicate key "name"`,
		"{\"name\": \"\xff\"}":           `invalid input: invalid UTF-8 at byte 10`,
		`garbage`:                        `invalid input: invalid character 'g' at byte 0`,
	}
	for in, want := range messages {
		if rc, out := g.call(t, "greet", []byte(in)); rc != 1 || out != want {
			t.Errorf("greet %q = %d %q, want %q", in, rc, out, want)
		}
	}
	// Deep nesting is refused, not a crash, past Go's limit; within it
	// the input is an object with an unknown field.
	for _, depth := range []int{100, 10000, 10001, 1 << 20} {
		in := `{"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		rc, out := g.call(t, "greet", []byte(in))
		want := `invalid input: unknown field "x"`
		if depth+1 > 10000 {
			want = "invalid input: exceeded max depth at byte 10004"
		}
		if rc != 1 || out != want {
			t.Errorf("depth %d: %d %.100q", depth, rc, out)
		}
	}
	// Large inputs: a name of 5 MiB is greeted whole; 4 MiB of something
	// else is refused; both leave no memory behind (see below).
	big := strings.Repeat("é", 5<<19)
	if rc, out := g.call(t, "greet", []byte(`{"name": "`+big+`"}`)); rc != 0 || out != cGoJSON(t, cGreeting{"Hello, " + big + "!"}) {
		t.Errorf("a 5 MiB name: %d, %d bytes", rc, len(out))
	}
	if rc, out := g.call(t, "greet", []byte(`[`+strings.Repeat(`0,`, 2<<20)+`0]`)); rc != 1 || out != "invalid input: the input is an array, not a JSON object" {
		t.Errorf("4 MiB array: %d %q", rc, out)
	}
	many := `{` + strings.Repeat(`"k":0,`, 1<<19) + `"name":"Ada"}`
	if rc, out := g.call(t, "greet", []byte(many)); rc != 1 || out != `invalid input: unknown field "k"` {
		t.Errorf("many keys: %d %q", rc, out)
	}
	if rc, out := g.call(t, "greet", []byte(`{"name":"`+strings.Repeat(`\u00e9`, 1<<20)+`"}`)); rc != 0 || out != cGoJSON(t, cGreeting{"Hello, " + strings.Repeat("é", 1<<20) + "!"}) {
		t.Errorf("6 MiB of escapes: %d, %d bytes", rc, len(out))
	}

	// No call keeps memory: after a warm-up, a thousand calls of every
	// kind do not grow the instance.
	mix := func() {
		g.call(t, "greet", []byte(`{"name": "`+strings.Repeat("a", 100<<10)+`"}`))
		g.call(t, "greet", []byte(`{"name": 5}`))
		g.call(t, "greet", []byte(`{"name": "Ada", "x": 1}`))
		g.call(t, "greet", []byte(`[`+strings.Repeat(`"\u00e9",`, 10<<10)+`0`))
		g.call(t, "nope", []byte(`{}`))
		g.call(t, "fetch", []byte(`{"url": "https://x/"}`))
	}
	for range 20 {
		mix()
	}
	size := g.mod.Memory().Size()
	for range 1000 {
		mix()
	}
	if after := g.mod.Memory().Size(); after != size {
		t.Errorf("memory grew from %d to %d bytes over 1000 rounds of calls", size, after)
	}
}

func TestCHelloUnknownCommand(t *testing.T) {
	g := newCGuest(t, ForTestLang(t, "examples/c/hello"))
	for _, name := range []string{"x", "greet2", "gree", "Greet", `a"b`} {
		rc, out := g.call(t, name, []byte(`{"name":"Ada"}`))
		want := fmt.Sprintf("unknown command %s (commands: fetch, greet)", cGoJSON(t, name))
		if rc != 2 || out != want {
			t.Errorf("%s: %d %q, want 2 %q", name, rc, out, want)
		}
	}
}

// TestCHelloFetchGuest runs fetch against answers the stand-in host makes
// up, including ones the station would never send.
func TestCHelloFetchGuest(t *testing.T) {
	g := newCGuest(t, ForTestLang(t, "examples/c/hello"))
	var got []byte
	answer := func(status uint32, doc string) {
		g.http = func(d []byte) (uint32, []byte) {
			got = d
			if doc == "<none>" {
				return status, nil
			}
			return status, []byte(doc)
		}
	}
	fetch := func(url string) (uint32, string) {
		t.Helper()
		return g.call(t, "fetch", []byte(cGoJSON(t, map[string]string{"url": url})))
	}
	answer(0, `{"status":200,"headers":{"Content-Type":["text/plain"]},"body":"aGVsbG8=","url":"https://h/"}`)
	if rc, out := fetch("https://h/"); rc != 0 || out != `{"status":200,"body":"hello"}` {
		t.Errorf("fetch: %d %q", rc, out)
	}
	if string(got) != `{"method":"GET","url":"https://h/"}` {
		t.Errorf("request document %s", got)
	}
	answer(0, `{"status":404,"url":"https://h/"}`)
	if rc, out := fetch("https://h/"); rc != 0 || out != `{"status":404,"body":""}` {
		t.Errorf("no body: %d %q", rc, out)
	}
	// A body that is not UTF-8 becomes U+FFFD per byte, as in Go.
	body := "caf\xc3\xa9 \xff\xc3 \xed\xa0\x80 \x00\x1b \u2028"
	answer(0, `{"status":500,"body":"`+base64.StdEncoding.EncodeToString([]byte(body))+`","future":{"x":[1]}}`)
	if rc, out := fetch("https://h/"); rc != 0 || out != `{"status":500,"body":`+cGoJSON(t, body)+`}` {
		t.Errorf("binary body: %d %q", rc, out)
	}
	for _, c := range []struct {
		status uint32
		doc    string
		want   string
	}{
		{1, `{"code":"denied","capability":"network","target":"e:443","reason":"is not in its allowlist","message":"sandbox violation: module m: network: \"e:443\" is not in its allowlist"}`,
			`sandbox violation: module m: network: "e:443" is not in its allowlist`},
		{5, `{"code":"failed","message":"dial tcp: connection refused"}`, "dial tcp: connection refused"},
		{6, `<none>`, "station: host call failed: timeout"},
		{3, `{"code":"invalid"}`, "station: host call failed: invalid"},
		{3, `not json`, "station: host call failed: invalid"},
		{99, `{"message":"m"}`, "m"},
		{99, `<none>`, "station: host call failed: unknown"},
		{0, `<none>`, "station: decode the station's response: unexpected end of JSON input"},
		{0, `{"status":"200"}`, "station: the station's response has no valid status"},
		{0, `{"status":42}`, "station: the station's response has no valid status"},
		{0, `{"status":200,"body":"a"}`, "station: decode the station's response: the body is not base64"},
		{0, `{"status":200,"body":"YQ"}`, "station: decode the station's response: the body is not base64"},
		{0, `{"status":200,"body":"Y Q=="}`, "station: decode the station's response: the body is not base64"},
		{0, `[1]`, "station: decode the station's response: not an object"},
	} {
		answer(c.status, c.doc)
		if rc, out := fetch("https://h/"); rc != 1 || out != c.want {
			t.Errorf("status %d, %s: %d %q, want %q", c.status, c.doc, rc, out, c.want)
		}
	}
	answer(0, `{"status":200}`)
	for _, in := range []string{`{}`, `{"url": ""}`, `{"url": 1}`, `{"url": null}`} {
		if rc, out := g.call(t, "fetch", []byte(in)); rc != 1 || out != "url is required" {
			t.Errorf("fetch %s: %d %q", in, rc, out)
		}
	}
	if rc, out := g.call(t, "fetch", []byte(`{"url": "https://h/\u0000"}`)); rc != 1 || out != "url contains a NUL byte" {
		t.Errorf("NUL in url: %d %q", rc, out)
	}
	// The request document escapes the URL.
	answer(0, `{"status":200}`)
	fetch("https://h/\"\\\n")
	if string(got) != `{"method":"GET","url":"https://h/\"\\\n"}` {
		t.Errorf("request document %s", got)
	}
}

// cSDKGuest exercises the SDK's API beyond what the example uses.
const cSDKGuest = `#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "station.h"

static const char *kind(station_json v) {
    static const char *const names[] = {"invalid", "null", "bool", "number", "string", "array", "object"};
    return names[station_json_type(v)];
}

/* canon writes v again, member by member, to test reading and writing. */
static void canon(station_writer *w, station_json v, int depth) {
    station_json_iter it;
    station_json k, x;
    size_t n;
    const char *s;
    if (depth > STATION_WRITER_MAX_DEPTH) {
        station_begin_array(w); /* the writer refuses this: too deep */
        return;
    }
    switch (station_json_type(v)) {
    case STATION_JSON_OBJECT:
        station_begin_object(w);
        station_json_iter_init(&it, v);
        while (station_json_next(&it, &k, &x)) {
            s = station_json_string(k, &n);
            station_key_n(w, s, n);
            canon(w, x, depth + 1);
        }
        station_end_object(w);
        break;
    case STATION_JSON_ARRAY:
        station_begin_array(w);
        station_json_iter_init(&it, v);
        while (station_json_next(&it, NULL, &x))
            canon(w, x, depth + 1);
        station_end_array(w);
        break;
    case STATION_JSON_STRING:
        s = station_json_string(v, &n);
        station_string_n(w, s, n);
        break;
    default:
        station_raw_json(w, v.text, v.len);
    }
}

static int cmd_canon(station_call *c) {
    station_json v;
    const char *err;
    if (!station_json_parse(c->input.text, c->input.len, &v, &err))
        return station_fail(c, "invalid: %s", err);
    canon(&c->result, v, 0);
    return STATION_OK;
}

/* types describes each member of the input as the accessors see it. */
static int cmd_types(station_call *c) {
    station_writer *w = &c->result;
    station_json_iter it;
    station_json k, v;
    size_t n, kn;
    double d;
    int64_t i;
    bool b;
    station_begin_object(w);
    station_json_iter_init(&it, c->input);
    while (station_json_next(&it, &k, &v)) {
        const char *key = station_json_string(k, &kn);
        station_key_n(w, key, kn);
        station_begin_object(w);
        station_key(w, "type");
        station_string(w, kind(v));
        const char *s = station_json_string(v, &n);
        if (s != NULL) {
            station_key(w, "string");
            station_string_n(w, s, n);
            station_key(w, "cstring");
            station_bool(w, station_json_string(v, NULL) != NULL);
            station_key(w, "terminated");
            station_bool(w, s[n] == '\0');
        }
        if (station_json_number(v, &d)) {
            station_key(w, "number");
            station_number(w, d);
        }
        if (station_json_int(v, &i)) {
            station_key(w, "int");
            station_int(w, i);
        }
        if (station_json_bool(v, &b)) {
            station_key(w, "bool");
            station_bool(w, b);
        }
        station_end_object(w);
    }
    station_end_object(w);
    return STATION_OK;
}

/* get looks up key in obj. */
static int cmd_get(station_call *c) {
    station_json obj, v;
    const char *key = station_json_get_string(c->input, "key", NULL);
    if (!station_json_get(c->input, "obj", &obj) || key == NULL)
        return station_fail(c, "want obj and key");
    station_writer *w = &c->result;
    bool found = station_json_get(obj, key, &v);
    station_begin_object(w);
    station_key(w, "found");
    station_bool(w, found);
    if (found) {
        station_key(w, "value");
        station_raw_json(w, v.text, v.len);
    }
    station_end_object(w);
    return STATION_OK;
}

static int cmd_base64(station_call *c) {
    size_t n, m;
    const char *s = station_json_get_string(c->input, "encode", &n);
    station_writer *w = &c->result;
    station_begin_object(w);
    if (s != NULL) {
        char *out = station_alloc(station_base64_encoded_len(n) + 1);
        m = station_base64_encode(s, n, out);
        station_key(w, "encoded");
        station_string_n(w, out, m);
        station_key(w, "terminated");
        station_bool(w, out[m] == '\0' && m == strlen(out));
    }
    if ((s = station_json_get_string(c->input, "decode", &n)) != NULL) {
        unsigned char *out = station_alloc(n / 4 * 3 + 1);
        bool ok = station_base64_decode(s, n, out, &m);
        station_key(w, "ok");
        station_bool(w, ok);
        if (ok) {
            station_key(w, "bytes");
            station_begin_array(w);
            for (size_t i = 0; i < m; i++)
                station_int(w, out[i]);
            station_end_array(w);
        }
    }
    station_end_object(w);
    return STATION_OK;
}

/* bytes writes the base64-decoded input as a string: the writer's
 * handling of bytes that are not UTF-8. */
static int cmd_bytes(station_call *c) {
    size_t n, m;
    const char *s = station_json_get_string(c->input, "b64", &n);
    char *raw = station_alloc(n / 4 * 3 + 1);
    if (s == NULL || !station_base64_decode(s, n, raw, &m))
        return station_fail(c, "bad b64");
    station_string_n(&c->result, raw, m);
    return STATION_OK;
}

static int cmd_numbers(station_call *c) {
    station_json arr, v;
    station_json_iter it;
    double d;
    if (!station_json_get(c->input, "values", &arr) || !station_json_iter_init(&it, arr))
        return station_fail(c, "want values");
    station_begin_array(&c->result);
    while (station_json_next(&it, NULL, &v))
        if (station_json_number(v, &d))
            station_number(&c->result, d);
        else
            station_null(&c->result);
    station_end_array(&c->result);
    return STATION_OK;
}

/* write misuses the writer as the input says. */
static int cmd_write(station_call *c) {
    const char *what = station_json_get_string(c->input, "case", NULL);
    station_writer *w = &c->result;
    if (what == NULL)
        return station_fail(c, "want case");
    if (!strcmp(what, "nan")) {
        station_begin_array(w);
        station_number(w, NAN);
        station_end_array(w);
    } else if (!strcmp(what, "inf")) {
        station_number(w, -INFINITY);
    } else if (!strcmp(what, "nokey")) {
        station_begin_object(w);
        station_int(w, 1);
        station_end_object(w);
    } else if (!strcmp(what, "twokeys")) {
        station_begin_object(w);
        station_key(w, "a");
        station_key(w, "b");
    } else if (!strcmp(what, "open")) {
        station_begin_object(w);
        station_key(w, "a");
        station_begin_array(w);
    } else if (!strcmp(what, "dangling")) {
        station_begin_object(w);
        station_key(w, "a");
        station_end_object(w);
    } else if (!strcmp(what, "mismatch")) {
        station_begin_object(w);
        station_end_array(w);
    } else if (!strcmp(what, "second")) {
        station_int(w, 1);
        station_int(w, 2);
    } else if (!strcmp(what, "raw")) {
        station_raw_json(w, "{\"a\": [1, 2]", 12);
    } else if (!strcmp(what, "all")) {
        station_begin_object(w);
        station_key(w, "raw");
        station_raw_json(w, " {\"a\" : [1, 2]} ", 16);
        station_key(w, "null");
        station_string(w, NULL);
        station_key(w, "t");
        station_bool(w, true);
        station_key(w, "f");
        station_bool(w, false);
        station_key(w, "min");
        station_int(w, INT64_MIN);
        station_key(w, "max");
        station_int(w, INT64_MAX);
        station_key(w, "empty");
        station_begin_array(w);
        station_begin_object(w);
        station_end_object(w);
        station_begin_array(w);
        station_end_array(w);
        station_end_array(w);
        station_key_n(w, "k\0\"", 3);
        station_string(w, "");
        station_end_object(w);
    }
    return STATION_OK;
}

/* ret returns the input's rc, after station_fail if it has a msg. */
static int cmd_ret(station_call *c) {
    int64_t rc = 0;
    const char *msg = station_json_get_string(c->input, "msg", NULL);
    station_json_get_int(c->input, "rc", &rc);
    if (msg != NULL)
        station_fail(c, "%s", msg);
    return (int)rc;
}

static int cmd_log(station_call *c) {
    int64_t n = 0;
    station_json_get_int(c->input, "n", &n);
    char *s = station_alloc((size_t)n * 2 + 1);
    for (int64_t i = 0; i < n; i++)
        memcpy(s + 2 * i, "\xc3\xa9", 2);
    station_log(STATION_WARN, "%s", s);
    station_log(STATION_DEBUG, "short %d", 42);
    return STATION_OK;
}

static int cmd_alloc(station_call *c) {
    int64_t n = 0;
    station_json_get_int(c->input, "n", &n);
    unsigned char *p = station_alloc((size_t)n);
    bool zero = p != NULL;
    for (int64_t i = 0; p != NULL && i < n; i += 4096)
        zero = zero && p[i] == 0;
    station_begin_object(&c->result);
    station_key(&c->result, "ok");
    station_bool(&c->result, p != NULL && zero);
    station_end_object(&c->result);
    return STATION_OK;
}

static int cmd_http(station_call *c) {
    station_json hs, h, name, value;
    station_json_iter it, pair;
    station_header headers[16];
    size_t count = 0, body_len = 0;
    station_http_request req = {0};
    req.method = station_json_get_string(c->input, "method", NULL);
    req.url = station_json_get_string(c->input, "url", NULL);
    const char *b64 = station_json_get_string(c->input, "body", &body_len);
    if (b64 != NULL) {
        char *body = station_alloc(body_len / 4 * 3 + 1);
        if (!station_base64_decode(b64, body_len, body, &req.body_len))
            return station_fail(c, "bad body");
        req.body = body;
    }
    if (station_json_get(c->input, "headers", &hs) && station_json_iter_init(&it, hs)) {
        while (count < 16 && station_json_next(&it, NULL, &h)) {
            station_json_iter_init(&pair, h);
            station_json_next(&pair, NULL, &name);
            station_json_next(&pair, NULL, &value);
            headers[count].name = station_json_string(name, NULL);
            headers[count].value = station_json_string(value, NULL);
            count++;
        }
        req.headers = headers;
        req.header_count = count;
    }
    station_http_response resp;
    station_error err;
    station_status s = station_http(&req, &resp, &err);
    station_writer *w = &c->result;
    station_begin_object(w);
    station_key(w, "status");
    station_string(w, station_status_name(s));
    if (s == STATION_STATUS_OK) {
        station_key(w, "http_status");
        station_int(w, resp.status);
        station_key(w, "body");
        station_string_n(w, resp.body, resp.body_len);
        station_key(w, "terminated");
        station_bool(w, resp.body[resp.body_len] == '\0');
        station_key(w, "url");
        station_string(w, resp.url);
        station_key(w, "content_type");
        station_string(w, station_http_header(&resp, "content-type"));
        station_key(w, "headers");
        station_raw_json(w, resp.headers.text, resp.headers.len);
    } else {
        station_key(w, "denied");
        station_bool(w, station_denied(&err));
        station_key(w, "error");
        station_begin_object(w);
        station_key(w, "status");
        station_int(w, err.status);
        station_key(w, "code");
        station_string(w, err.code);
        station_key(w, "capability");
        station_string(w, err.capability);
        station_key(w, "target");
        station_string(w, err.target);
        station_key(w, "reason");
        station_string(w, err.reason);
        station_key(w, "message");
        station_string(w, err.message);
        station_end_object(w);
    }
    station_end_object(w);
    return STATION_OK;
}

static int cmd_empty(station_call *c) {
    (void)c;
    return STATION_OK;
}

static int cmd_raw(station_call *c) {
    station_writer *w = &c->result;
    station_begin_object(w);
    station_key(w, "len");
    station_int(w, (int64_t)c->input.len);
    station_key(w, "terminated");
    station_bool(w, c->input.text[c->input.len] == '\0');
    station_key(w, "command");
    station_string(w, c->command);
    station_end_object(w);
    return STATION_OK;
}

const station_command station_commands[] = {
    {"canon", cmd_canon, NULL, STATION_RAW},
    {"types", cmd_types},
    {"get", cmd_get, "obj key"},
    {"base64", cmd_base64, "encode,decode"},
    {"bytes", cmd_bytes, "b64"},
    {"numbers", cmd_numbers, "values"},
    {"write", cmd_write, "case"},
    {"ret", cmd_ret, "rc msg"},
    {"log", cmd_log, "n"},
    {"alloc", cmd_alloc, "n"},
    {"http", cmd_http, "method, url, headers, body"},
    {"empty", cmd_empty},
    {"raw", cmd_raw, NULL, STATION_RAW},
    {0},
};
`

var cSDKGuestDir = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "station-csdk-guest-")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "guest.c"), []byte(cSDKGuest), 0o600)
	}
	if err != nil {
		panic(err)
	}
	return dir
})

func newCSDKGuest(t testing.TB) *cGuest {
	t.Helper()
	RequireToolchain(t, LangC)
	return newCGuest(t, ForTestLang(t, cSDKGuestDir()))
}

// mustCall runs a command that must succeed and decodes its result.
func (g *cGuest) mustCall(t testing.TB, command, input string) map[string]any {
	t.Helper()
	rc, out := g.call(t, command, []byte(input))
	if rc != 0 {
		t.Fatalf("%s %s: %d %q", command, input, rc, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s %s: %q: %v", command, input, out, err)
	}
	return v
}

func TestCSDKAccessors(t *testing.T) {
	g := newCSDKGuest(t)
	got := g.mustCall(t, "types", `{"s": "a\u0000b", "e": "", "u": "\ud83d\ude00", "n": -12.5e1, "i": 9223372036854775807,
		"big": 9223372036854775808, "neg": -9223372036854775808, "negbig": -9223372036854775809, "f": 1.0, "x": 1e2, "z": -0,
		"huge": 1e400, "tiny": 1e-400, "t": true, "no": false, "null": null, "a": [1], "o": {"k": "v"}}`)
	want := map[string]any{
		"s":      map[string]any{"type": "string", "string": "a\x00b", "cstring": false, "terminated": true},
		"e":      map[string]any{"type": "string", "string": "", "cstring": true, "terminated": true},
		"u":      map[string]any{"type": "string", "string": "😀", "cstring": true, "terminated": true},
		"n":      map[string]any{"type": "number", "number": -125.0},
		"i":      map[string]any{"type": "number", "number": 9223372036854775807.0, "int": 9223372036854775807.0},
		"big":    map[string]any{"type": "number", "number": 9223372036854775808.0},
		"neg":    map[string]any{"type": "number", "number": -9223372036854775808.0, "int": -9223372036854775808.0},
		"negbig": map[string]any{"type": "number", "number": -9223372036854775809.0},
		"f":      map[string]any{"type": "number", "number": 1.0},
		"x":      map[string]any{"type": "number", "number": 100.0},
		"huge":   map[string]any{"type": "number"},
		"tiny":   map[string]any{"type": "number", "number": 0.0},
		"t":      map[string]any{"type": "bool", "bool": true},
		"no":     map[string]any{"type": "bool", "bool": false},
		"null":   map[string]any{"type": "null"},
		"a":      map[string]any{"type": "array"},
		"o":      map[string]any{"type": "object"},
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s: %v, want %v", k, g, w)
		}
	}
	// Exact integers, which a float64 in Go cannot hold.
	rc, out := g.call(t, "types", []byte(`{"i": -9223372036854775808}`))
	if rc != 0 || out != `{"i":{"type":"number","number":-9223372036854776000,"int":-9223372036854775808}}` { // the number as Go writes the double
		t.Errorf("INT64_MIN: %q", out)
	}

	for _, c := range []struct{ obj, key, want string }{
		{`{"a": 1, "b": [2, {"a": 3}]}`, "a", `{"found":true,"value":1}`},
		{`{"a": 1, "b": [2, {"a": 3}]}`, "b", `{"found":true,"value":[2, {"a": 3}]}`}, // as written
		{`{"b": {"a": 3}}`, "a", `{"found":false}`},
		{`{"a\"b": "q"}`, `a"b`, `{"found":true,"value":"q"}`},
		{`{"\u00e9": 1}`, "é", `{"found":true,"value":1}`},
		{`{"\ud83d\ude00": 1}`, "😀", `{"found":true,"value":1}`},
		{`{"ab": 1}`, "a", `{"found":false}`},
		{`{"a": 1}`, "ab", `{"found":false}`},
		{`{"\u0061b": 1}`, "a", `{"found":false}`},
		{`{"a": 1, "a": 2}`, "a", `{"found":true,"value":1}`}, // the first, in a nested object
		{`{"": 1}`, "", `{"found":true,"value":1}`},
		{`[1, 2]`, "0", `{"found":false}`},
		{`"a"`, "a", `{"found":false}`},
		{`{}`, "a", `{"found":false}`},
		{`{ "x" : { "y" : "}" } , "a" : "\"," }`, "a", `{"found":true,"value":"\","}`},
	} {
		in := `{"obj": ` + c.obj + `, "key": ` + cGoJSON(t, c.key) + `}`
		if rc, out := g.call(t, "get", []byte(in)); rc != 0 || out != c.want {
			t.Errorf("get %s: %d %s, want %s", in, rc, out, c.want)
		}
	}

	// Numbers come out as Go's encoding/json writes them: the shortest
	// form that reads back as the same double.
	values := []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e20, 1e21, 1.5e21, 1e-6, 1e-7, 1.234e-7, 123456789012345678, 3.141592653589793,
		2.5e-308, 1.7976931348623157e308, 5e-324, 100, 123.456, 0.000123, -1e-10, 1e100, 4.35, 2.675, 0.3, 1.0 / 3, 2.0 / 3, 9007199254740993, 1e15, 1e16 + 2}
	for i := range 200 {
		values = append(values, math.Float64frombits(uint64(i)*0x9E3779B97F4A7C15), math.Float64frombits(0x3FF0000000000000+uint64(i)*0x1234567))
	}
	var in, wantNums []string
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		in = append(in, strconv.FormatFloat(v, 'g', -1, 64))
		wantNums = append(wantNums, cGoJSON(t, v))
	}
	in = append(in, "1e400", "-0.0", "1E2", "0.1e1")
	wantNums = append(wantNums, "null", "-0", "100", "1")
	rc, out = g.call(t, "numbers", []byte(`{"values": [`+strings.Join(in, ",")+`]}`))
	if got := strings.Split(strings.Trim(out, "[]"), ","); rc != 0 || len(got) != len(wantNums) {
		t.Errorf("numbers: %d %s", rc, out)
	} else {
		for i := range got {
			if got[i] != wantNums[i] {
				t.Errorf("number %s: %s, want %s", in[i], got[i], wantNums[i])
			}
		}
	}
}

func TestCSDKWriter(t *testing.T) {
	g := newCSDKGuest(t)
	for what, want := range map[string]string{
		"nan":      `sdk: command "write": encode the result: unsupported value: NaN`,
		"inf":      `sdk: command "write": encode the result: unsupported value: an infinity`,
		"nokey":    `sdk: command "write": encode the result: a value in an object without a key`,
		"twokeys":  `sdk: command "write": encode the result: a key outside an object, or two keys in a row`,
		"open":     `sdk: command "write": encode the result: the result is not complete (an object or array is still open)`,
		"dangling": `sdk: command "write": encode the result: an end of object that does not match`,
		"mismatch": `sdk: command "write": encode the result: an end of array that does not match`,
		"second":   `sdk: command "write": encode the result: a second value after the JSON document`,
		"raw":      `sdk: command "write": encode the result: raw JSON: unexpected end of JSON input`,
	} {
		if rc, out := g.call(t, "write", []byte(`{"case":"`+what+`"}`)); rc != 1 || out != want {
			t.Errorf("%s: %d %q, want %q", what, rc, out, want)
		}
	}
	want := `{"raw":{"a" : [1, 2]},"null":null,"t":true,"f":false,"min":-9223372036854775808,"max":9223372036854775807,"empty":[{},[]],"k\u0000\"":""}`
	if rc, out := g.call(t, "write", []byte(`{"case":"all"}`)); rc != 0 || out != want {
		t.Errorf("all: %d %s, want %s", rc, out, want)
	}
	// Strings: every byte value, alone and in sequences that are or are
	// not UTF-8, must come out as Go's encoding/json writes them.
	var cases []string
	for b := range 256 {
		cases = append(cases, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"\xa0b")
	}
	cases = append(cases, "\xe2\x82", "\xe2\x82\xac", "\xf0\x9f\x98", "\xf0\x9f\x98\x80", "\xed\xa0\x80", "\xed\x9f\xbf", "\xef\xbf\xbf",
		"\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xc0\x80", "\xe0\x80\x80", "\xf0\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\u2028\u2029\u2027\u202a",
		"<script>&amp;</script>", strings.Repeat("\x00\xff", 1000))
	for _, s := range cases {
		rc, out := g.call(t, "bytes", []byte(`{"b64":"`+base64.StdEncoding.EncodeToString([]byte(s))+`"}`))
		if want := cGoJSON(t, s); rc != 0 || out != want {
			t.Errorf("string %q: %d %s, want %s", s, rc, out, want)
		}
	}
	// Empty: nothing written is no output at all (the caller sees null).
	if rc, out := g.call(t, "empty", []byte(`{}`)); rc != 0 || out != "" || g.set {
		t.Errorf("empty: %d %q (output set: %v)", rc, out, g.set)
	}
}

func TestCSDKBase64(t *testing.T) {
	g := newCSDKGuest(t)
	for _, s := range []string{"", "f", "fo", "foo", "foob", "fooba", "foobar", "\x00\xff\xfe", strings.Repeat("\x00é", 1000)} {
		enc := base64.StdEncoding.EncodeToString([]byte(s))
		// The input is JSON, so the bytes to encode travel as a string:
		// only valid UTF-8 ones.
		if utf8.ValidString(s) {
			got := g.mustCall(t, "base64", cGoJSON(t, map[string]string{"encode": s}))
			if got["encoded"] != enc || got["terminated"] != true {
				t.Errorf("encode %q: %v, want %s", s, got, enc)
			}
		}
		got := g.mustCall(t, "base64", cGoJSON(t, map[string]string{"decode": enc}))
		var want []any
		for _, b := range []byte(s) {
			want = append(want, float64(b))
		}
		if got["ok"] != true || fmt.Sprint(got["bytes"]) != fmt.Sprint(want) && !(len(s) == 0 && got["bytes"] == nil) {
			t.Errorf("decode %q: %v", enc, got)
		}
	}
	for _, bad := range []string{"a", "ab", "abc", "abcde", "ab=c", "a===", "====", "ab==cd==", "ab\ncd", "ab cd", "abc-", "abc_", "Zm9v\n", "=abc"} {
		if got := g.mustCall(t, "base64", cGoJSON(t, map[string]string{"decode": bad})); got["ok"] != false {
			t.Errorf("decode %q: %v", bad, got)
		}
	}
}

func TestCSDKCalls(t *testing.T) {
	g := newCSDKGuest(t)
	for _, c := range []struct {
		input  string
		rc     uint32
		output string
	}{
		{`{"rc": 0}`, 0, ""},
		{`{"rc": 1, "msg": "it broke: \"x\"\nline 2"}`, 1, "it broke: \"x\"\nline 2"},
		{`{"rc": 1}`, 1, `command "ret" failed`},
		{`{"rc": -1}`, 1, `command "ret" failed`},
		{`{"rc": -1, "msg": "minus one"}`, 1, "minus one"},
		{`{"rc": 7, "msg": "seven"}`, 1, "seven"},
		{`{"rc": 2, "msg": "no such subcommand"}`, 2, "no such subcommand"},
		{`{"rc": 0, "msg": "ignored"}`, 0, ""},
		{`{"rc": 1, "msg": "é ☃ \u0000 after NUL"}`, 1, `command "ret" failed`}, // msg is read as a C string: refused
	} {
		if rc, out := g.call(t, "ret", []byte(c.input)); rc != c.rc || out != c.output {
			t.Errorf("ret %s: %d %q, want %d %q", c.input, rc, out, c.rc, c.output)
		}
	}
	// fields accepts names separated by spaces or commas.
	if got := g.mustCall(t, "http", `{"method": "GET", "url": "https://x/", "headers": [], "body": ""}`); got["status"] != "denied" {
		t.Errorf("fields: %v", got)
	}
	if rc, out := g.call(t, "base64", []byte(`{"encode": "", "decode": "", "ecnode": ""}`)); rc != 1 || out != `invalid input: unknown field "ecnode"` {
		t.Errorf("fields: %d %q", rc, out)
	}
	long := strings.Repeat("é", 40) + "\n\x00"
	if rc, out := g.call(t, "base64", []byte(cGoJSON(t, map[string]string{long: ""}))); rc != 1 || out != `invalid input: unknown field "`+strings.Repeat("é", 32)+`..."` {
		t.Errorf("a long unknown field: %d %q", rc, out)
	}
	if rc, out := g.call(t, "types", []byte(`{"a\u0000": 1, "a": 2, "a\u0000": 3}`)); rc != 1 || out != `invalid input: duplicate key "a\u0000"` {
		t.Errorf("duplicate key with a NUL: %d %q", rc, out)
	}
	// A raw command gets the bytes as they are, NUL-terminated.
	for _, in := range []string{"", "not json \x00\xff", "[1]"} {
		var input []byte
		if in != "" {
			input = []byte(in)
		}
		if got := g.mustCall(t, "raw", string(input)); got["len"] != float64(len(in)) || got["terminated"] != true || got["command"] != "raw" {
			t.Errorf("raw %q: %v", in, got)
		}
	}
	// A result over the station's output limit fails the call: output_set
	// refused it.
	zeros := make([]byte, 3<<20)
	want := fmt.Sprintf(`sdk: command "bytes": set a result of %d bytes: too_large`, 6*len(zeros)+2)
	if rc, out := g.call(t, "bytes", []byte(`{"b64":"`+base64.StdEncoding.EncodeToString(zeros)+`"}`)); rc != 1 || out != want {
		t.Errorf("an 18 MiB result: %d %q, want %q", rc, out, want)
	}
	// Memory that is not there is NULL, and the instance goes on.
	if got := g.mustCall(t, "alloc", `{"n": 1000000000}`); got["ok"] != false {
		t.Errorf("alloc 1 GB: %v", got)
	}
	if got := g.mustCall(t, "alloc", `{"n": 10000000}`); got["ok"] != true {
		t.Errorf("alloc 10 MB: %v", got)
	}
	// Logging: a line over 64 KiB is cut at a character boundary.
	if rc, _ := g.call(t, "log", []byte(`{"n": 40000}`)); rc != 0 || len(g.logs) != 2 {
		t.Fatalf("log: %d %d lines", rc, len(g.logs))
	}
	if l := g.logs[0]; !strings.HasPrefix(l, "2 éé") || !strings.HasSuffix(l, "é...") || len(l) != 2+64<<10-1 || !utf8.ValidString(l) {
		t.Errorf("long line: %d bytes, ends %q", len(l), l[len(l)-8:])
	}
	if g.logs[1] != "0 short 42" {
		t.Errorf("short line %q", g.logs[1])
	}
	if rc, _ := g.call(t, "log", []byte(`{"n": 32766}`)); rc != 0 || len(g.logs[0]) != 2+65532 || strings.HasSuffix(g.logs[0], "...") {
		t.Errorf("a line at the limit: %d bytes", len(g.logs[0]))
	}
}

func TestCSDKHTTP(t *testing.T) {
	g := newCSDKGuest(t)
	var doc []byte
	g.http = func(d []byte) (uint32, []byte) {
		doc = d
		return 0, []byte(`{"status":201,"headers":{"Content-Type":["text/plain","x"],"X-A":["1"]},"body":"AGLDqQ==","url":"https://h/final"}`)
	}
	got := g.mustCall(t, "http", `{"method": "POST", "url": "https://h/", "body": "AAH/",
		"headers": [["Accept", "a"], ["X-Multi", "1"], ["x-multi", "2"], ["Accept-Language", "fr"], ["X-MULTI", "3"], ["Quote\"", "\"\n"]]}`)
	wantDoc := `{"method":"POST","url":"https://h/","headers":{"Accept":["a"],"X-Multi":["1","2","3"],"Accept-Language":["fr"],"Quote\"":["\"\n"]},"body":"AAH/"}`
	if string(doc) != wantDoc {
		t.Errorf("request document\n%s\nwant\n%s", doc, wantDoc)
	}
	if got["status"] != "ok" || got["http_status"] != 201.0 || got["body"] != "\x00bé" || got["terminated"] != true || got["url"] != "https://h/final" ||
		got["content_type"] != "text/plain" || fmt.Sprint(got["headers"]) != "map[Content-Type:[text/plain x] X-A:[1]]" {
		t.Errorf("response %v", got)
	}
	g.http = func(d []byte) (uint32, []byte) { doc = d; return 0, []byte(`{"status":200}`) }
	got = g.mustCall(t, "http", `{"url": "https://h/"}`)
	if string(doc) != `{"method":"GET","url":"https://h/"}` || got["body"] != "" || got["url"] != "" || got["content_type"] != nil || fmt.Sprint(got["headers"]) != "map[]" {
		t.Errorf("GET: %s %v", doc, got)
	}
	// A large body travels base64-encoded both ways.
	body := bytes.Repeat([]byte{0, 1, 2, 0xff}, 3<<20)
	g.http = func(d []byte) (uint32, []byte) {
		var req struct{ Body []byte }
		if err := json.Unmarshal(d, &req); err != nil || !bytes.Equal(req.Body, body) {
			t.Errorf("large body: %v, %d bytes", err, len(req.Body))
		}
		return 0, []byte(`{"status":200,"body":"` + base64.StdEncoding.EncodeToString(body[:1<<20]) + `"}`)
	}
	got = g.mustCall(t, "http", `{"url": "https://h/", "body": "`+base64.StdEncoding.EncodeToString(body)+`"}`)
	if s, _ := got["body"].(string); len(s) < 1<<20 {
		t.Errorf("large response body: %d bytes", len(s))
	}
	g.http = func(d []byte) (uint32, []byte) {
		return 1, []byte(`{"code":"denied","capability":"network","target":"e:443","reason":"is not in its allowlist (a)","message":"sandbox violation: m","future":1}`)
	}
	got = g.mustCall(t, "http", `{"url": "https://e/"}`)
	if want := "map[capability:network code:denied message:sandbox violation: m reason:is not in its allowlist (a) status:1 target:e:443]"; got["status"] != "denied" || got["denied"] != true || fmt.Sprint(got["error"]) != want {
		t.Errorf("denied: %v", got)
	}
	g.http = func(d []byte) (uint32, []byte) {
		return 4, []byte(`{"code":"too_large","capability":"host","target":"x","reason":"r","message":"too big"}`)
	}
	got = g.mustCall(t, "http", `{"url": "https://e/"}`)
	if got["status"] != "too_large" || got["denied"] != false || got["error"].(map[string]any)["message"] != "too big" {
		t.Errorf("too_large: %v", got)
	}
	g.http = func(d []byte) (uint32, []byte) { return 7, nil }
	got = g.mustCall(t, "http", `{"url": "https://e/"}`)
	if want := "map[capability: code:unavailable message:station: host call failed: unavailable reason: status:7 target:]"; fmt.Sprint(got["error"]) != want {
		t.Errorf("unavailable: %v", got)
	}
}

// cCanonGo writes the valid JSON document data as the cSDKGuest's canon
// command does, with Go's decoder and encoder, and returns it with its
// nesting depth.
func cCanonGo(t testing.TB, data []byte) (string, int) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b strings.Builder
	maxDepth := 0
	var value func(depth int)
	value = func(depth int) {
		maxDepth = max(maxDepth, depth)
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("cCanonGo %q: %v", data, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			open, end := byte(v), byte('}')
			if v == '[' {
				end = ']'
			}
			b.WriteByte(open)
			for first := true; dec.More(); first = false {
				if !first {
					b.WriteByte(',')
				}
				if open == '{' {
					k, _ := dec.Token()
					b.WriteString(cGoJSON(t, k))
					b.WriteByte(':')
				}
				value(depth + 1)
			}
			dec.Token()
			b.WriteByte(end)
		case string:
			b.WriteString(cGoJSON(t, v))
		case json.Number:
			b.WriteString(string(v))
		case nil:
			b.WriteString("null")
		default:
			fmt.Fprint(&b, v)
		}
	}
	value(0)
	return b.String(), maxDepth
}

// cJSONSeeds are the documents the JSON tests start from.
var cJSONSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `-0.0e+0`, `1E-2`, `true`, `false`, `null`, ` [ 1 , 2 ] `, `{"a":{"b":[{}]}}`,
	`"\"\\\/\b\f\n\r\t\u0000\u001f\u0020\u007f\u00ff\u2028\uffff"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`, `"\ud800\ud800\udc00"`,
	`"\uD83D\uDE00"`, `"é☃😀"`, `{"a":1,"a":2}`, `{"\u0061":"\u0062"}`, `[1,]`, `{"a":1,}`, `[01]`, `1.`, `.1`, `-`, `+1`, `1e`, `1e+`,
	`"\u12"`, `"\x"`, "\"\t\"", "\"\x7f\"", "\"\xff\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"", `[1 2]`, `{"a" 1}`, `{1:2}`, `[`, `]`, `{"a"`,
	`nul`, `truex`, `[true false]`, "\x00", "[]\x00", `{} {}`, `"` + strings.Repeat(`\u00e9`, 100) + `"`,
	strings.Repeat("[", 300) + strings.Repeat("]", 300), strings.Repeat("[", 10001) + strings.Repeat("]", 10001), "\ufeff[]", "\u00a0[]", "\v[]",
}

// FuzzCJSON checks the SDK's JSON reader (and its writer) against Go's
// encoding/json: a document is valid for one exactly when it is valid for
// the other (Go, unlike the SDK, accepts bytes that are not UTF-8 in
// strings), and reading it and writing it again gives the same text.
func FuzzCJSON(f *testing.F) {
	for _, s := range cJSONSeeds {
		f.Add([]byte(s))
	}
	g := newCSDKGuest(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, out := g.call(t, "canon", data)
		if !json.Valid(data) || !utf8.Valid(data) {
			if rc != 1 || !strings.HasPrefix(out, "invalid: ") {
				t.Fatalf("%q is not valid JSON, but canon gives %d %q", data, rc, out)
			}
			return
		}
		want, depth := cCanonGo(t, data)
		if depth > cWriterMaxDepth {
			if rc != 1 || !strings.HasSuffix(out, "nested too deeply") {
				t.Fatalf("%.100q is nested %d deep: canon gives %d %.100q", data, depth, rc, out)
			}
			return
		}
		if rc != 0 || out != want {
			t.Fatalf("canon %q = %d %q, want %q", data, rc, out, want)
		}
	})
}

// cWriterMaxDepth is station.h's STATION_WRITER_MAX_DEPTH.
const cWriterMaxDepth = 256

// TestCHelloStation installs the example in a station and runs its
// commands end to end, with api.example.test served by a loopback HTTPS
// server through the operator's resolve override and extra CA.
func TestCHelloStation(t *testing.T) {
	wasm := ForTestLang(t, "examples/c/hello")
	root := cRepoRoot(t)
	ctx := context.Background()

	ca := fixture.NewCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from api.example.test") })
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("caf\xc3\xa9 \xff \x00 \"q\" \u2028")) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("0123456789abcdef"), 1<<16)) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/hello", http.StatusFound) })
	srv := ca.TLSServer(t, mux, "api.example.test")
	home := t.TempDir()
	cfg := fmt.Sprintf("network:\n  resolve:\n    - api.example.test:443=%s\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n", srv.Addr, ca.WriteFile(t, home))
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logBuf := &fixture.SyncBuffer{}
	st, err := station.Open(ctx, home, station.Options{Cache: CacheForTest(), Logger: slog.New(slog.NewTextHandler(logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })

	yaml, err := os.ReadFile(filepath.Join(root, "examples", "c", "hello", "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	install := func(yaml []byte) {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "module.yaml"), yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
			t.Fatal(err)
		}
	}
	install(yaml)
	// The same module under a manifest that lists a command the module
	// does not have: the station passes it on, the module answers.
	extra := strings.Replace(string(yaml), "id: station/hello-c\n", "id: station/hello-c-extra\n", 1)
	extra = strings.Replace(extra, "requires:", "  - name: x\n    description: not in the module\nrequires:", 1)
	install([]byte(extra))

	run := func(id, command, input string) (string, *host.CallError) {
		t.Helper()
		out, err := st.Run(ctx, id, command, []byte(input))
		if err == nil {
			return string(out), nil
		}
		var ce *host.CallError
		if !errors.As(err, &ce) {
			t.Fatalf("%s %s: %v", command, input, err)
		}
		return "", ce
	}
	const id = "station/hello-c"
	for in, want := range map[string]string{
		`{"name": "Ada"}`:          `{"greeting":"Hello, Ada!"}`,
		`{"name": "  Ada  "}`:      `{"greeting":"Hello, Ada!"}`,
		`{"name": "A\u0000da"}`:    `{"greeting":"Hello, A\u0000da!"}`,
		`{"name": "\ud83d\ude00"}`: `{"greeting":"Hello, 😀!"}`,
	} {
		if out, ce := run(id, "greet", in); ce != nil || out != want {
			t.Errorf("greet %s: %q %v, want %s", in, out, ce, want)
		}
	}
	for _, in := range []string{`{}`, `{"name": ""}`, `{"name": "  "}`, `{"name": 5}`, ``} {
		if _, ce := run(id, "greet", in); ce == nil || ce.Kind != host.KindCommand || ce.Msg != "name is required" {
			t.Errorf("greet %s: %v", in, ce)
		}
	}
	for _, in := range []string{`[1]`, `"x"`, `garbage`, `{"name": "Ada"`, `{"name": "Ada", "x": 1}`} {
		if _, ce := run(id, "greet", in); ce == nil || ce.Kind != host.KindCommand || !strings.HasPrefix(ce.Msg, "invalid input: ") {
			t.Errorf("greet %s: %v", in, ce)
		}
	}
	big := strings.Repeat("x", 6<<20)
	if out, ce := run(id, "greet", `{"name": "`+big+`"}`); ce != nil || out != `{"greeting":"Hello, `+big+`!"}` {
		t.Errorf("greet a 6 MiB name: %d bytes, %v", len(out), ce)
	}

	fetch := func(url string) (map[string]any, *host.CallError) {
		t.Helper()
		out, ce := run(id, "fetch", cGoJSON(t, map[string]string{"url": url}))
		if ce != nil {
			return nil, ce
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("fetch %s: %q: %v", url, out, err)
		}
		return v, nil
	}
	for path, want := range map[string]map[string]any{
		"/hello":    {"status": 200.0, "body": "hello from api.example.test"},
		"/redirect": {"status": 200.0, "body": "hello from api.example.test"},
		"/missing":  {"status": 404.0, "body": "404 page not found\n"},
		"/bytes":    {"status": 200.0, "body": "café \ufffd \x00 \"q\" \u2028"},
	} {
		if got, ce := fetch("https://api.example.test" + path); ce != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("fetch %s: %v %v, want %v", path, got, ce, want)
		}
	}
	if got, ce := fetch("https://api.example.test/big"); ce != nil || got["body"] != strings.Repeat("0123456789abcdef", 1<<16) {
		t.Errorf("fetch /big: %v", ce)
	}
	_, ce := fetch("https://evil.example.test/steal")
	if ce == nil || ce.Violation == nil {
		t.Fatalf("fetch of a host not allowed: %v", ce)
	}
	if ce.Msg != ce.Violation.Error() {
		t.Errorf("the failure is %q, not the Error document's message %q", ce.Msg, ce.Violation.Error())
	}
	for _, s := range []string{"module station/hello-c", "network", `"evil.example.test:443"`, "is not in its allowlist (api.example.test)"} {
		if !strings.Contains(ce.Msg, s) {
			t.Errorf("the denial %q does not say %s", ce.Msg, s)
		}
	}
	fixture.Eventually(t, 5*time.Second, func() bool {
		return strings.Contains(logBuf.String(), "fetch evil.example.test:443: denied: is not in its allowlist")
	})
	if _, ce := fetch("http://api.example.test/hello"); ce == nil || ce.Msg == "" {
		t.Errorf("fetch over http: %v", ce)
	}
	if _, ce := run(id, "fetch", `{}`); ce == nil || ce.Msg != "url is required" {
		t.Errorf("fetch {}: %v", ce)
	}

	if _, ce := run("station/hello-c-extra", "x", `{}`); ce == nil || ce.Kind != host.KindUnknown || ce.Msg != `unknown command "x" (commands: fetch, greet)` {
		t.Errorf("unknown command: %v", ce)
	}
	if out, ce := run("station/hello-c-extra", "greet", `{"name": "Ada"}`); ce != nil || out != `{"greeting":"Hello, Ada!"}` {
		t.Errorf("greet in the other module: %q %v", out, ce)
	}
}

// TestCCommandTables checks the tables the SDK refuses or answers for.
func TestCCommandTables(t *testing.T) {
	RequireToolchain(t, LangC)
	for _, c := range []struct {
		table   string
		command string
		rc      uint32
		out     string
	}{
		{`{0}`, "a", 2, `unknown command "a": this module registers no commands`},
		{`{"b", f}, {"a", f}, {"b", f}, {0}`, "a", 1, `sdk: command "b" is in station_commands twice`},
		{`{"a", f}, {"", f}, {0}`, "a", 1, `sdk: station_commands[1] has an empty name`},
		{`{"a", f}, {"b", NULL}, {0}`, "a", 1, `sdk: station_commands[1] has no function`},
		{`{"zeta", f}, {"alpha", f}, {"Beta", f}, {"a-b", f}, {0}`, "x", 2, `unknown command "x" (commands: Beta, a-b, alpha, zeta)`},
		{`{"zeta", f}, {"alpha", f}, {0}`, "alpha", 0, `{"ran":"alpha"}`},
	} {
		src := `#include "station.h"
__attribute__((unused)) static int f(station_call *c) {
    station_begin_object(&c->result);
    station_key(&c->result, "ran");
    station_string(&c->result, c->command);
    station_end_object(&c->result);
    return STATION_OK;
}
const station_command station_commands[] = {` + c.table + `};
`
		dir := writeCModule(t, map[string]string{"m.c": src})
		g := newCGuest(t, ForTestLang(t, dir))
		for range 2 { // the table is checked once; the answer stays
			if rc, out := g.call(t, c.command, []byte(`{}`)); rc != c.rc || out != c.out {
				t.Errorf("%s: %s: %d %q, want %d %q", c.table, c.command, rc, out, c.rc, c.out)
			}
		}
	}
}

// cNativeDriver runs the SDK natively, on a stub of the station's imports,
// so that AddressSanitizer and UndefinedBehaviorSanitizer watch it: a
// WebAssembly module has no bounds checks inside its own memory, so a read
// past the end of an input would go unnoticed there. Each input goes
// through dispatch as three commands, and its invariants abort:
//
//   - walk (raw): the document, parsed; every string decoded, every number
//     converted, every key found again with station_json_get; written
//     again with the writer, whose output must parse and write again the
//     same; and the bytes decoded and encoded as base64.
//   - strict (fields "a,b") and loose (no fields): the input check.
//
// Built with -DSTATION_LIBFUZZER and -fsanitize=fuzzer it is a libFuzzer
// target; otherwise main replays a file of records (a 4-byte little-endian
// length, then the bytes).
const cNativeDriver = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "station.h"

int32_t station__call(int32_t command, int32_t input);

static const char *bufs[3];
static size_t lens[3];
static bool live[3];
static char *output;
static size_t output_len;

int32_t station_host_buf_len(int32_t h) { return h >= 1 && h <= 2 && live[h] ? (int32_t)lens[h] : -1; }
int32_t station_host_buf_read(int32_t h, void *p, int32_t n) {
    if (h < 1 || h > 2 || !live[h])
        return -3;
    if ((size_t)n < lens[h])
        return -4;
    if (lens[h] > 0)
        memcpy(p, bufs[h], lens[h]);
    live[h] = false;
    return (int32_t)lens[h];
}
void station_host_buf_free(int32_t h) {
    if (h >= 1 && h <= 2)
        live[h] = false;
}
int32_t station_host_output_set(const void *p, int32_t n) {
    free(output);
    output = malloc((size_t)n + 1);
    if (n > 0)
        memcpy(output, p, (size_t)n);
    output_len = (size_t)n;
    return 0;
}
int32_t station_host_log(int32_t level, const void *p, int32_t n) { (void)level, (void)p, (void)n; return 0; }
int64_t station_host_http_request(const void *p, int32_t n) { (void)p, (void)n; return (int64_t)1 << 32; }
int64_t station_host_process_run(const void *p, int32_t n) { (void)p, (void)n; return (int64_t)7 << 32; }
int64_t station_host_llm_complete(const void *p, int32_t n) { (void)p, (void)n; return (int64_t)7 << 32; }

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "check failed: %s (line %d)\n", #cond, __LINE__); abort(); } } while (0)

static void walk(station_writer *w, station_json v, int depth) {
    station_json_iter it;
    station_json k, x, found;
    size_t n;
    double d;
    int64_t i;
    bool b;
    const char *s;
    if (depth > STATION_WRITER_MAX_DEPTH)
        return;
    switch (station_json_type(v)) {
    case STATION_JSON_OBJECT:
        station_begin_object(w);
        CHECK(station_json_iter_init(&it, v));
        while (station_json_next(&it, &k, &x)) {
            s = station_json_string(k, &n);
            CHECK(s != NULL && s[n] == '\0');
            if (strlen(s) == n) {
                CHECK(station_json_get(v, s, &found));
                station_json_get_string(v, s, NULL);
                station_json_get_int(v, s, &i);
                station_json_get_number(v, s, &d);
                station_json_get_bool(v, s, &b);
            }
            station_key_n(w, s, n);
            walk(w, x, depth + 1);
        }
        station_end_object(w);
        break;
    case STATION_JSON_ARRAY:
        station_begin_array(w);
        CHECK(station_json_iter_init(&it, v));
        while (station_json_next(&it, NULL, &x))
            walk(w, x, depth + 1);
        station_end_array(w);
        break;
    case STATION_JSON_STRING:
        s = station_json_string(v, &n);
        CHECK(s != NULL && s[n] == '\0');
        CHECK((station_json_string(v, NULL) != NULL) == (strlen(s) == n));
        station_string_n(w, s, n);
        break;
    case STATION_JSON_NUMBER:
        if (station_json_number(v, &d))
            station_number(w, d);
        else
            station_raw_json(w, v.text, v.len);
        station_json_int(v, &i);
        break;
    case STATION_JSON_BOOL:
        CHECK(station_json_bool(v, &b));
        station_bool(w, b);
        break;
    case STATION_JSON_NULL:
        station_null(w);
        break;
    default:
        CHECK(0);
    }
}

static int cmd_walk(station_call *c) {
    station_json v, again;
    const char *err;
    size_t n;
    char *b64 = station_alloc(station_base64_encoded_len(c->input.len) + 1);
    unsigned char *raw = station_alloc(c->input.len + 1); /* room for either decoding */
    CHECK(b64 && raw);
    station_base64_encode(c->input.text, c->input.len, b64);
    CHECK(station_base64_decode(b64, strlen(b64), raw, &n) && n == c->input.len && memcmp(raw, c->input.text, n) == 0);
    if (station_base64_decode(c->input.text, c->input.len, raw, &n)) {
        station_base64_encode(raw, n, b64);
        CHECK(strlen(b64) == c->input.len);
    }
    if (!station_json_parse(c->input.text, c->input.len, &v, &err))
        return station_fail(c, "invalid: %s", err);
    walk(&c->result, v, 0);
    if (c->result.error == NULL) {
        station_writer w2 = {0};
        CHECK(station_json_parse(c->result.data, c->result.len, &again, &err));
        walk(&w2, again, 0);
        CHECK(w2.error == NULL && w2.len == c->result.len && memcmp(w2.data, c->result.data, w2.len) == 0);
        station_writer_free(&w2);
    }
    return STATION_OK;
}

static int cmd_read(station_call *c) {
    size_t n;
    station_json_get_string(c->input, "a", &n);
    station_json_get_string(c->input, "b", NULL);
    return STATION_OK;
}

const station_command station_commands[] = {
    {"walk", cmd_walk, NULL, STATION_RAW},
    {"strict", cmd_read, "a,b"},
    {"loose", cmd_read},
    {0},
};

static void run(const char *command, const unsigned char *data, size_t size) {
    bufs[1] = command;
    lens[1] = strlen(command);
    bufs[2] = (const char *)data;
    lens[2] = size;
    live[1] = true;
    live[2] = size > 0;
    int32_t rc = station__call(1, size > 0 ? 2 : 0);
    CHECK(!live[1] && !live[2]);
    CHECK(rc == 0 || rc == 1);
    if (rc == 0 && output_len > 0)
        CHECK(station_json_parse(output, output_len, NULL, NULL));
    free(output);
    output = NULL;
    output_len = 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    run("walk", data, size);
    run("strict", data, size);
    run("loose", data, size);
    return 0;
}

#ifndef STATION_LIBFUZZER
int main(int argc, char **argv) {
    CHECK(argc == 2);
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL);
    unsigned char hdr[4];
    size_t count = 0;
    while (fread(hdr, 1, 4, f) == 4) {
        size_t n = (size_t)hdr[0] | (size_t)hdr[1] << 8 | (size_t)hdr[2] << 16 | (size_t)hdr[3] << 24;
        unsigned char *data = malloc(n > 0 ? n : 1); /* exactly n: ASan sees a read past the end */
        CHECK(data != NULL && fread(data, 1, n, f) == n);
        LLVMFuzzerTestOneInput(data, n);
        free(data);
        count++;
    }
    fclose(f);
    printf("%zu inputs\n", count);
    return 0;
}
#endif
`

// TestCSDKNative runs cNativeDriver under the sanitizers over the JSON
// seeds and mutations of them. It needs a native C compiler with ASan and
// UBSan (skipped otherwise).
func TestCSDKNative(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	cc := ""
	for _, c := range []string{os.Getenv("CC"), "cc", "clang", "gcc"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no native C compiler")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "driver.c"), []byte(cNativeDriver), 0o600); err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(cRepoRoot(t), "sdk", "c")
	bin := filepath.Join(dir, "driver")
	ctx := context.Background()
	build := exec.CommandContext(ctx, cc, "-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers",
		"-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
		"-I", sdk, "-o", bin, filepath.Join(dir, "driver.c"), filepath.Join(sdk, "station.c"), "-lm")
	if out, err := build.CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("sanitize")) || bytes.Contains(out, []byte("asan")) {
			t.Skipf("%s cannot build with the sanitizers: %s", cc, out)
		}
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}

	// The seeds, then mutations of them: bytes replaced, inserted or
	// deleted, drawn mostly from JSON's own alphabet.
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "{}[]\":,\\/ \t\nu0123456789abcdefABCDEF-+.eEtrulnsfDd\x00\x7f\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\xff"
	inputs := slices.Clone(cJSONSeeds)
	inputs = append(inputs, `{"a":"x","b":"y"}`, `{"a":1,"a":2}`, `{"a":1,"c":2}`, `{"b":"\u0000"}`, `{"a\u0000":1,"a\u0000":2}`,
		`{"x":[1,2,{"y":"\ud83d\ude00"}],"z":-1.5e-300,"w":123456789012345678901234567890}`, `"AAECAw=="`, `Zm9vYg==`)
	for range 30000 {
		b := []byte(inputs[rng.IntN(len(inputs))])
		for range 1 + rng.IntN(4) {
			c := alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(8) == 0 {
				c = byte(rng.IntN(256))
			}
			switch i := rng.IntN(len(b) + 1); {
			case rng.IntN(3) == 0 && i < len(b):
				b = slices.Delete(b, i, i+1)
			case rng.IntN(2) == 0 && i < len(b):
				b[i] = c
			default:
				b = slices.Insert(b, i, c)
			}
		}
		inputs = append(inputs, string(b))
	}
	var records bytes.Buffer
	for _, in := range inputs {
		records.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(in))))
		records.WriteString(in)
	}
	corpus := filepath.Join(dir, "inputs")
	if err := os.WriteFile(corpus, records.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	run := exec.CommandContext(ctx, bin, corpus)
	run.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS=print_stacktrace=1")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the native driver: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
