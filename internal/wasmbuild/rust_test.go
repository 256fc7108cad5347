package wasmbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/station"
)

func TestRustToolchain(t *testing.T) {
	t.Parallel()
	RequireToolchain(t, LangRust)
	desc, _ := RustToolchain()
	if !regexp.MustCompile(`^rustc \d+\.\d+\.\d+\S* \(\S+, wasm32-wasi(p1)?\)$`).MatchString(desc) {
		t.Errorf("RustToolchain() = %q, want like %q", desc, "rustc 1.63.0 (/usr/bin/rustc, wasm32-wasi)")
	}
}

// TestLookRust passes over a rustc that is missing and one without the
// WebAssembly standard library (a rustup toolchain without the target),
// and says what to install when none is left.
func TestLookRust(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the fake rustc is a shell script")
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "lib")
	os.Mkdir(empty, 0o755)
	fake := filepath.Join(dir, "rustc")
	script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in --version) echo 'rustc 1.99.0 (fake)';; *) echo %s;; esac\n", empty)
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nothing", "rustc")
	_, err := lookRust(context.Background(), []string{missing, fake, fake})
	if err == nil {
		t.Fatal("lookRust found a toolchain in a fake rustc")
	}
	msg := err.Error()
	for _, want := range []string{
		missing, fake + " (rustc 1.99.0): wasm32-wasip1: no libstd in " + empty,
		"apt-get install rustc libstd-rust-dev-wasm32", "rustup target add wasm32-wasip1", "STATION_RUSTC",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Count(msg, fake+" ") != 1 {
		t.Errorf("error %q tries %s more than once", msg, fake)
	}

	// A libstd makes it a toolchain, for the first target that has one.
	os.WriteFile(filepath.Join(empty, "libstd-0123.rlib"), nil, 0o644)
	tc, err := lookRust(context.Background(), []string{missing, fake})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tc.String(), "rustc 1.99.0 ("+fake+", wasm32-wasip1)"; got != want {
		t.Errorf("toolchain %q, want %q", got, want)
	}
}

// TestRustBuildHello builds the example and checks what it imports and
// exports: a reactor that declares ABI 1 and needs nothing the station
// does not offer.
func TestRustBuildHello(t *testing.T) {
	t.Parallel()
	wasm := ForTestLang(t, "examples/rust/hello")
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Fatalf("not a wasm module: % x", wasm[:min(8, len(wasm))])
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var station []string
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case "station":
			station = append(station, name)
		case "wasi_snapshot_preview1":
		default:
			t.Errorf("imports %s.%s", mod, name)
		}
	}
	slices.Sort(station)
	if want := []string{"buf_free", "buf_len", "buf_read", "http_request", "log", "output_set"}; !slices.Equal(station, want) {
		t.Errorf("station imports %v, want %v", station, want)
	}
	exports := m.ExportedFunctions()
	for _, name := range []string{"station_abi_1", "station_call"} {
		if exports[name] == nil {
			t.Errorf("does not export %s", name)
		}
	}
	if exports["station_call"] != nil {
		if p, r := exports["station_call"].ParamTypes(), exports["station_call"].ResultTypes(); len(p) != 2 || len(r) != 1 {
			t.Errorf("station_call has %d params and %d results, want 2 and 1", len(p), len(r))
		}
	}
	if exports["_start"] != nil {
		t.Error("exports _start: a command module, not a reactor")
	}
	if m.ExportedMemories()["memory"] == nil {
		t.Error("does not export its memory")
	}
}

// rustEnv is a station home whose network maps api.example.test and
// evil.example to a loopback HTTPS fixture.
type rustEnv struct {
	st  *station.Station
	log *fixture.SyncBuffer
}

func newRustEnv(t *testing.T) *rustEnv {
	t.Helper()
	home := t.TempDir()
	ca := fixture.NewCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body := new(bytes.Buffer)
		body.ReadFrom(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header()["X-Test"] = r.Header.Values("X-Test")
		w.WriteHeader(http.StatusCreated)
		w.Write(body.Bytes())
	})
	srv := ca.TLSServer(t, mux, "api.example.test", "evil.example")
	config := fmt.Sprintf("network:\n  resolve:\n    - api.example.test:443=%s\n    - evil.example:443=%s\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		srv.Addr, srv.Addr, ca.WriteFile(t, home))
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &rustEnv{log: &fixture.SyncBuffer{}}
	st, err := station.Open(context.Background(), home, station.Options{Cache: CacheForTest(), Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("open station: %v", err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	e.st = st
	return e
}

// install installs wasm under manifest, approving it.
func (e *rustEnv) install(t *testing.T, manifest string, wasm []byte) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(manifest), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600)
	if _, err := e.st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatalf("install: %v", err)
	}
}

// run calls command of module id.
func (e *rustEnv) run(t *testing.T, id, command string, input []byte) ([]byte, *host.CallError) {
	t.Helper()
	out, err := e.st.Run(context.Background(), id, command, input)
	if err == nil {
		return out, nil
	}
	var ce *host.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("%s %s: %v (%T), want a *host.CallError", id, command, err, err)
	}
	return nil, ce
}

// ok calls command and fails the test unless it returns want.
func (e *rustEnv) ok(t *testing.T, id, command, input, want string) {
	t.Helper()
	out, ce := e.run(t, id, command, []byte(input))
	if ce != nil {
		t.Errorf("%s %.80q: %v", command, input, ce)
	} else if string(out) != want {
		t.Errorf("%s %.80q = %.200s, want %.200s", command, input, out, want)
	}
}

// fails calls command and fails the test unless it fails with kind and a
// message for which match holds.
func (e *rustEnv) fails(t *testing.T, id, command, input string, kind host.ErrorKind, match func(string) bool, want string) {
	t.Helper()
	out, ce := e.run(t, id, command, []byte(input))
	switch {
	case ce == nil:
		t.Errorf("%s %.80q = %.200s, want an error: %s", command, input, out, want)
	case ce.Kind != kind || !match(ce.Msg):
		t.Errorf("%s %.80q: %s error %q, want %s error %s", command, input, ce.Kind, ce.Msg, kind, want)
	}
}

func rustIs(want string) (func(string) bool, string) {
	return func(s string) bool { return s == want }, fmt.Sprintf("%q", want)
}

func rustHasPrefix(want string) (func(string) bool, string) {
	return func(s string) bool { return strings.HasPrefix(s, want) }, fmt.Sprintf("starting with %q", want)
}

// goJSON is v as the Go SDK encodes a result.
func rustGoJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

const rustHelloID = "station/hello-rust"

// TestRustHello runs the example in a station, end to end: the behavior
// the Go and C builds of the same commands share.
func TestRustHello(t *testing.T) {
	t.Parallel()
	wasm := ForTestLang(t, "examples/rust/hello")
	root, _ := RepoRoot()
	manifest, err := os.ReadFile(filepath.Join(root, "examples", "rust", "hello", "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := newRustEnv(t)
	e.install(t, string(manifest), wasm)

	greeting := func(name string) string { return rustGoJSON(t, map[string]string{"greeting": "Hello, " + name + "!"}) }
	t.Run("greet", func(t *testing.T) {
		e.ok(t, rustHelloID, "greet", `{"name": "Ada"}`, `{"greeting":"Hello, Ada!"}`)
		e.ok(t, rustHelloID, "greet", `{"name": "  Ada  "}`, `{"greeting":"Hello, Ada!"}`)
		e.ok(t, rustHelloID, "greet", "{\"name\": \"\\t\\n Ada Lovelace\\r\\u000b\\f\"}", `{"greeting":"Hello, Ada Lovelace!"}`)
		// A field the command does not read is refused, as the Go SDK and the C SDK refuse it.
		for in, field := range map[string]string{`{"name": "Ada", "extra": [1, {"x": null}]}`: "extra", `{"Name": "Ada"}`: "Name"} {
			m, w := rustIs(`invalid input: unknown field "` + field + `"`)
			e.fails(t, rustHelloID, "greet", in, host.KindCommand, m, w)
		}
		e.ok(t, rustHelloID, "greet", `{"name": "A", "name": "B"}`, `{"greeting":"Hello, B!"}`) // the last wins, as in Go
		for _, in := range []string{``, `{}`, `null`, `{"name": ""}`, `{"name": "   "}`, `{"name": 7}`, `{"name": null}`, `{"name": ["Ada"]}`} {
			m, w := rustIs("name is required")
			e.fails(t, rustHelloID, "greet", in, host.KindCommand, m, w)
		}
	})
	t.Run("escapes", func(t *testing.T) {
		e.ok(t, rustHelloID, "greet", `{"name": "\u00c5da \ud83d\ude00 \uD83D\uDE00"}`, greeting("Åda 😀 😀"))
		e.ok(t, rustHelloID, "greet", `{"name": "\ud800"}`, greeting("\ufffd"))        // a lone high surrogate
		e.ok(t, rustHelloID, "greet", `{"name": "\udc00x"}`, greeting("\ufffdx"))      // a lone low one
		e.ok(t, rustHelloID, "greet", `{"name": "\ud800\u0041"}`, greeting("\ufffdA")) // not followed by a low one
		e.ok(t, rustHelloID, "greet", "{\"name\": \"a\xffb\"}", greeting("a\ufffdb"))  // invalid UTF-8
		special := "<b>&amp;</b> \"q\" \\ / \b\f\n\r\t \x01\x1f \x7f \u2028\u2029 é"
		in := rustGoJSON(t, map[string]string{"name": "x" + special})
		e.ok(t, rustHelloID, "greet", in, greeting("x"+special))
		e.ok(t, rustHelloID, "greet", `{"name": "\"\\\/\b\f\n\r\t\u0000"}`, greeting("\"\\/\b\f\n\r\t\x00"))
	})
	t.Run("invalid input", func(t *testing.T) {
		for _, in := range []string{
			`[1]`, `"x"`, `7`, `true`, `garbage`, `{`, `{"name": "Ada"`, `{"name": "Ada"} x`, `{"name": "Ada"}{}`,
			`{"name": "Ada",}`, `{'name': 'Ada'}`, `{name: "Ada"}`, `{"name": "Ada\x01"}`, `{"name": "\x"}`,
			`{"name": "\u12"}`, `{"name": 01}`, `{"name": NaN}`, "\xef\xbb\xbf{}",
		} {
			m, w := rustHasPrefix("invalid input:")
			e.fails(t, rustHelloID, "greet", in, host.KindCommand, m, w)
		}
	})
	t.Run("deep", func(t *testing.T) {
		nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
		nameIs, nameWant := rustIs("name is required") // parsed whole, then not a string
		e.fails(t, rustHelloID, "greet", `{"name": `+nest(500)+`}`, host.KindCommand, nameIs, nameWant)
		for _, n := range []int{600, 100_000, 4 << 20} {
			m, w := rustHasPrefix("invalid input: nesting deeper than 512 levels")
			e.fails(t, rustHelloID, "greet", `{"name": `+nest(n)+`}`, host.KindCommand, m, w)
		}
		m, w := rustHasPrefix("invalid input: nesting deeper than")
		e.fails(t, rustHelloID, "greet", strings.Repeat(`{"a":`, 1<<20), host.KindCommand, m, w)
		e.ok(t, rustHelloID, "greet", `{"name": "Ada"}`, `{"greeting":"Hello, Ada!"}`) // the instance lives
	})
	t.Run("large", func(t *testing.T) {
		name := strings.Repeat("Ada ", 2<<20) + "Lovelace" // 8 MiB
		e.ok(t, rustHelloID, "greet", `{"name": "`+name+`"}`, greeting(name))
		filler := strings.Repeat(`"`+strings.Repeat("x", 1000)+`\n",`, 12_000) // 12 MiB to skip
		m, w := rustIs(`invalid input: unknown field "skip"`)                  // read whole, then refused
		e.fails(t, rustHelloID, "greet", `{"skip": [`+filler+`0], "name": "Ada"}`, host.KindCommand, m, w)
	})
	t.Run("fetch", func(t *testing.T) {
		e.ok(t, rustHelloID, "fetch", `{"url": "https://api.example.test/hello"}`, `{"status":200,"body":"hello from api.example.test"}`)
		e.ok(t, rustHelloID, "fetch", `{"url": "https://api.example.test/nowhere"}`, `{"status":404,"body":"404 page not found\n"}`)
		e.ok(t, rustHelloID, "fetch", `{"url": "https://api.example.test/latin1"}`, `{"status":200,"body":"caf`+"\ufffd"+`"}`)
		for _, in := range []string{``, `{}`, `{"url": ""}`, `{"url": 7}`} {
			m, w := rustIs("url is required")
			e.fails(t, rustHelloID, "fetch", in, host.KindCommand, m, w)
		}
		m, w := rustHasPrefix("invalid input:")
		e.fails(t, rustHelloID, "fetch", `["https://api.example.test/hello"]`, host.KindCommand, m, w)
	})
	t.Run("denied", func(t *testing.T) {
		_, ce := e.run(t, rustHelloID, "fetch", []byte(`{"url": "https://evil.example/hello"}`))
		if ce == nil {
			t.Fatal("fetch of evil.example succeeded")
		}
		v := ce.Violation
		if ce.Kind != host.KindCommand || v == nil {
			t.Fatalf("error %v (kind %s, violation %v), want the module's failure with the denial attached", ce, ce.Kind, v)
		}
		if ce.Msg != v.Error() {
			t.Errorf("module's message %q, want the Error document's message %q", ce.Msg, v.Error())
		}
		for _, want := range []string{"module " + rustHelloID + ":", "network:", `"evil.example:443"`, "is not in its allowlist (api.example.test)"} {
			if !strings.Contains(ce.Msg, want) {
				t.Errorf("message %q does not say %q", ce.Msg, want)
			}
		}
	})
	t.Run("unknown command", func(t *testing.T) {
		// The station refuses a command the manifest does not declare; the
		// module's answer shows under a manifest that declares one more.
		extra := strings.Replace(string(manifest), "id: "+rustHelloID, "id: "+rustHelloID+"-extra", 1)
		extra = strings.Replace(extra, "commands:\n", "commands:\n  - name: wave\n    description: not implemented\n", 1)
		e.install(t, extra, wasm)
		m, w := rustIs(`unknown command "wave" (commands: fetch, greet)`)
		e.fails(t, rustHelloID+"-extra", "wave", `{}`, host.KindUnknown, m, w)
	})
}

// rustSDKTestModule exercises the SDK beyond the example: the JSON round trip,
// raw commands, results of every kind, logging, HTTP details, host errors
// and panics.
const rustSDKTestModule = `
use station::http::{self, Request};
use station::json::{Object, Value};
use station::{log, Error, HostError};

fn echo(input: Value) -> Result<Value, Error> {
    Ok(input)
}

fn raw(input: Vec<u8>) -> Result<Vec<u8>, String> {
    Ok(input)
}

fn nothing(_: Object) -> Result<(), Error> {
    Ok(())
}

fn fail(input: Object) -> Result<Value, String> {
    Err(input.get_str("message").unwrap_or("failed").to_owned())
}

fn big(input: Object) -> Result<Value, Error> {
    let n = input["bytes"].as_u64().ok_or_else(|| Error::new("bytes is required"))?;
    Ok(Value::from("x".repeat(n as usize)))
}

fn numbers(_: Object) -> Result<Value, Error> {
    Ok(vec![1.0, 0.5, -0.0, 1e21, 1e-7, 123456.789, f64::NAN].into_iter().collect::<Value>())
}

fn logs(_: Object) -> Result<(), Error> {
    log::debug("a debug line");
    log::info("an info line\nwith a newline");
    log::warn("a warn line");
    log::error(&format!("an error line {}", "x".repeat(100_000)));
    Ok(())
}

fn post(input: Object) -> Result<Object, HostError> {
    let resp = Request::post(input.get_str("url").unwrap_or(""), input.get_str("body").unwrap_or(""))
        .header("X-Test", "one")
        .header("X-Test", "two")
        .send()?;
    let mut headers: Vec<Value> = resp.headers.iter().filter(|(k, _)| k.starts_with("X-")).map(|(k, v)| Value::from(format!("{}: {}", k, v))).collect();
    headers.sort_by_key(|v| v.to_string());
    Ok(Object::new()
        .with("status", resp.status)
        .with("method", resp.header("x-method"))
        .with("headers", headers)
        .with("body", resp.text().map_err(|e| HostError::new(station::Status::Failed, e.to_string()))?)
        .with("url", resp.url))
}

fn host_error(input: Object) -> Result<Object, Error> {
    match http::get(input.get_str("url").unwrap_or("")) {
        Ok(resp) => Err(Error::new(format!("got status {}", resp.status))),
        Err(e) => Ok(Object::new()
            .with("denied", e.is_denied())
            .with("status", e.status.code())
            .with("code", e.code)
            .with("capability", e.capability)
            .with("target", e.target)
            .with("reason", e.reason)
            .with("message", e.message)),
    }
}

fn boom(_: Object) -> Result<(), Error> {
    panic!("boom: the handler panicked")
}

station::commands! {
    "echo" => echo,
    "raw" => raw,
    "nothing" => nothing,
    "fail" => fail,
    "big" => big,
    "numbers" => numbers,
    "logs" => logs,
    "post" => post,
    "host-error" => host_error,
    "panic" => boom,
}
`

const rustSDKTestID = "station/rust-sdk-test"

func TestRustSDK(t *testing.T) {
	t.Parallel()
	RequireToolchain(t, LangRust)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "src", "lib.rs"), []byte(rustSDKTestModule), 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := ForTestLang(t, dir)
	commands := []string{"echo", "raw", "nothing", "fail", "big", "numbers", "logs", "post", "host-error", "panic"}
	var m strings.Builder
	fmt.Fprintf(&m, "id: %s\nversion: \"1.0.0\"\ndescription: the Rust SDK's test module\nwasm: module.wasm\ncommands:\n", rustSDKTestID)
	for _, c := range commands {
		fmt.Fprintf(&m, "  - name: %s\n    description: %s\n", c, c)
	}
	m.WriteString("requires:\n  network:\n    allow: [api.example.test]\n  subprocess: false\n  filesystem_writes: []\n")
	e := newRustEnv(t)
	e.install(t, m.String(), wasm)

	t.Run("json", func(t *testing.T) {
		for _, doc := range []string{
			`null`, `true`, `0`, `-0`, `1.5e3`, `123456789012345678901234567890`, `""`, `[]`, `{}`,
			`{"a":[1,{"b":null}],"c":"d"}`, `"\"\\\n\r\t\b\f\u0001\u001f\u2028\u2029<>&é😀"`,
		} {
			e.ok(t, rustSDKTestID, "echo", doc, doc)
		}
		e.ok(t, rustSDKTestID, "echo", ` { "a" : [ 1 , 2 ] , "b" : "\/\u00e9\ud83d\ude00\u0041" } `, `{"a":[1,2],"b":"/é😀A"}`)
		e.ok(t, rustSDKTestID, "echo", ``, `null`)
		e.ok(t, rustSDKTestID, "echo", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`)
		e.ok(t, rustSDKTestID, "echo", `"\ud83d"`, `"`+"\ufffd"+`"`)
		nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
		e.ok(t, rustSDKTestID, "echo", nest(512), nest(512))
		m, w := rustIs("invalid input: nesting deeper than 512 levels at byte 512")
		e.fails(t, rustSDKTestID, "echo", nest(513), host.KindCommand, m, w)
		m, w = rustIs("invalid input: data after the JSON document at byte 4")
		e.fails(t, rustSDKTestID, "echo", `[1] 2`, host.KindCommand, m, w)
		m, w = rustIs("invalid input: unterminated string at byte 4")
		e.fails(t, rustSDKTestID, "echo", `[1, "abc`, host.KindCommand, m, w)
		// Several MiB in, the same out.
		large := rustGoJSON(t, map[string]any{"s": strings.Repeat("line\n\"quoted\" \u00e9\t", 500_000), "n": []int{1, 2, 3}})
		e.ok(t, rustSDKTestID, "echo", large, large)
	})
	t.Run("results", func(t *testing.T) {
		e.ok(t, rustSDKTestID, "raw", `{"kept": "as is" }`, `{"kept": "as is" }`)
		e.fails(t, rustSDKTestID, "raw", `not json`, host.KindCommand, func(s string) bool { return strings.Contains(s, "not JSON") }, "the station's refusal")
		e.ok(t, rustSDKTestID, "nothing", `{}`, `null`)
		e.ok(t, rustSDKTestID, "numbers", `{}`, `[1,0.5,-0,1e+21,1e-7,123456.789,null]`)
		m, w := rustIs("it broke: é")
		e.fails(t, rustSDKTestID, "fail", `{"message": "it broke: é"}`, host.KindCommand, m, w)
		e.ok(t, rustSDKTestID, "big", `{"bytes": 3}`, `"xxx"`)
		_, ce := e.run(t, rustSDKTestID, "big", []byte(`{"bytes": 17000000}`))
		if ce == nil || ce.Msg != `station: command "big": set a result of 17000002 bytes: too_large` || !strings.Contains(ce.Error(), "16 MiB") {
			t.Errorf("big result: %v, want the SDK's message and the station's limit", ce)
		}
		e.ok(t, rustSDKTestID, "big", `{"bytes": 3}`, `"xxx"`)
	})
	t.Run("log", func(t *testing.T) {
		e.ok(t, rustSDKTestID, "logs", ``, `null`)
		log := e.log.String()
		for _, want := range []string{"a debug line", `an info line\\x0awith a newline`, "a warn line", "an error line xxx"} {
			if !strings.Contains(log, want) {
				t.Errorf("station log does not have %q", want)
			}
		}
		if strings.Contains(log, "x"+strings.Repeat("x", 64<<10)) {
			t.Error("a line longer than 64 KiB was logged")
		}
		if !strings.Contains(log, "x...") {
			t.Error("the long line was not cut with ...")
		}
	})
	t.Run("http", func(t *testing.T) {
		e.ok(t, rustSDKTestID, "post", `{"url": "https://api.example.test/echo", "body": "hé\u0000llo"}`,
			`{"status":201,"method":"POST","headers":["X-Method: POST","X-Test: one","X-Test: two"],"body":"hé\u0000llo","url":"https://api.example.test/echo"}`)
		out, ce := e.run(t, rustSDKTestID, "host-error", []byte(`{"url": "https://evil.example/x?token=secret"}`))
		if ce != nil {
			t.Fatal(ce)
		}
		var he struct {
			Denied                                    bool
			Status                                    int
			Code, Capability, Target, Reason, Message string
		}
		if err := json.Unmarshal(out, &he); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if !he.Denied || he.Status != 1 || he.Code != "denied" || he.Capability != "network" || he.Target != "evil.example:443" ||
			!strings.Contains(he.Reason, "allowlist") || !strings.Contains(he.Message, "module "+rustSDKTestID+":") {
			t.Errorf("host error %+v, want a network denial of evil.example:443", he)
		}
		out, ce = e.run(t, rustSDKTestID, "host-error", []byte(`{"url": "ftp://api.example.test/"}`))
		if ce != nil || !strings.Contains(string(out), `"denied":false`) || !strings.Contains(string(out), `"code":"invalid"`) {
			t.Errorf("host-error of ftp://: %s, %v; want an invalid request, not a denial", out, ce)
		}
	})
	t.Run("panic", func(t *testing.T) {
		m, w := rustHasPrefix("trapped: wasm error: unreachable (panic: boom: the handler panicked (src/lib.rs:")
		e.fails(t, rustSDKTestID, "panic", `{}`, host.KindCrash, m, w)
		if log := e.log.String(); !strings.Contains(log, `level=ERROR msg="guest log" module=`+rustSDKTestID+` command=panic text="panic: boom: the handler panicked (src/lib.rs:`) {
			t.Errorf("the panic is not in the module log:\n%s", log)
		}
		e.ok(t, rustSDKTestID, "echo", `[1]`, `[1]`) // a new instance serves the next call
	})
}

// TestRustBuildErrors: the compiler's output reaches the error, a module
// without src/lib.rs is refused, and a copy of the SDK in the module's
// directory (station/) is used instead of the given one.
func TestRustBuildErrors(t *testing.T) {
	t.Parallel()
	RequireToolchain(t, LangRust)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(root, "sdk", "rust")
	ctx := context.Background()
	write := func(dir, name, text string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	broken := t.TempDir()
	write(broken, "src/lib.rs", "fn greet( {}\n")
	err = buildRust(ctx, broken, filepath.Join(t.TempDir(), "m.wasm"), sdk)
	if err == nil || !strings.Contains(err.Error(), "src/lib.rs") || !strings.Contains(err.Error(), "error") || !strings.Contains(err.Error(), "compile the module") {
		t.Errorf("build of a syntax error: %v, want the compiler's message", err)
	}

	empty := t.TempDir()
	if err := buildRust(ctx, empty, filepath.Join(t.TempDir(), "m.wasm"), sdk); err == nil || !strings.Contains(err.Error(), "src/lib.rs") {
		t.Errorf("build of a directory without src/lib.rs: %v", err)
	}

	vendored := t.TempDir()
	lib, err := os.ReadFile(filepath.Join(sdk, "src", "lib.rs"))
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(sdk, "src"))
	for _, f := range entries {
		b, _ := os.ReadFile(filepath.Join(sdk, "src", f.Name()))
		write(vendored, filepath.Join("station", "src", f.Name()), string(b))
	}
	write(vendored, "station/src/lib.rs", string(lib)+"\n/// Only in the copy.\npub const VENDORED: &str = \"yes\";\n")
	write(vendored, "src/lib.rs", `
fn which(_: station::json::Object) -> Result<station::json::Value, station::Error> {
    Ok(station::VENDORED.into())
}
station::commands! { "which" => which }
`)
	out := filepath.Join(t.TempDir(), "m.wasm")
	if err := buildRust(ctx, vendored, out, sdk); err != nil {
		t.Fatalf("build with a vendored SDK: %v", err)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Errorf("built %d bytes (%v), want a wasm module", len(b), err)
	}
	os.RemoveAll(filepath.Join(vendored, "station"))
	if err := buildRust(ctx, vendored, out, sdk); err == nil || !strings.Contains(err.Error(), "VENDORED") {
		t.Errorf("build without the vendored SDK: %v, want the compiler to miss VENDORED", err)
	}
}
