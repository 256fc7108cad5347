//go:build !wasip1

package probe_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk/abi"
)

// run calls the probe's run command and decodes its results.
func run(t *testing.T, h *fakeHost, actions ...probe.Action) []probe.Result {
	t.Helper()
	code, out, err := h.Call(withTimeout(t, 30*time.Second), probe.Command, probe.Run(actions...))
	if err != nil || code != abi.CallOK {
		t.Fatalf("run: code %d, output %.300s, error %v", code, out, err)
	}
	results, err := probe.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(actions) {
		t.Fatalf("got %d results for %d actions", len(results), len(actions))
	}
	return results
}

func newProbe(t *testing.T, tags ...string) *fakeHost {
	t.Helper()
	h, err := newFakeHost(t, probe.Wasm(t, tags...))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRunBasics(t *testing.T) {
	h := newProbe(t)
	rs := run(t, h, probe.Output(100), probe.Log("hello"), probe.Sleep(time.Millisecond), probe.Env(),
		probe.Alloc(8<<20, false), probe.Print("stdout", "printed"), probe.Action{Op: "nope"})
	if got := rs[0].Data; len(got) != 100 {
		t.Errorf("output: got %d bytes, want 100", len(got))
	}
	if got, want := h.Logs(), []string{"1 hello"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("logs = %q, want %q", got, want)
	}
	if !rs[3].OK || len(rs[3].Args) != 0 || len(rs[3].Env) != 0 {
		t.Errorf("env = %+v, want ok with no args and no environment", rs[3])
	}
	if !rs[4].OK || !rs[5].OK || h.stdout.String() != "printed\n" {
		t.Errorf("alloc, print = %+v, %+v; stdout %q", rs[4], rs[5], h.stdout.String())
	}
	if rs[6].OK || rs[6].Error == nil || rs[6].Error.Message != `unknown op "nope"` {
		t.Errorf("unknown op = %+v", rs[6])
	}
}

func TestCallErrors(t *testing.T) {
	h := newProbe(t)
	ctx := withTimeout(t, 30*time.Second)
	tests := []struct {
		name, command, input string
		code                 int32
		want                 string
	}{
		{"unknown command", "nope", "", abi.CallUnknownCommand, `unknown command "nope" (commands: run)`},
		{"unknown field", probe.Command, `{"actions":[],"x":1}`, abi.CallFailed, `invalid input: json: unknown field "x"`},
		{"trailing data", probe.Command, `{"actions":[]} {}`, abi.CallFailed, `invalid input: data after the JSON document`},
		{"panic", probe.Command, string(probe.Run(probe.Panic("boom"))), abi.CallFailed, "panic: boom"},
		{"still works", probe.Command, `{"actions":[]}`, abi.CallOK, `{"results":[]}`},
		{"output too large", probe.Command, string(probe.Run(probe.Output(16<<20 + 1))), abi.CallFailed,
			`sdk: command "run": set a result of 16777266 bytes: too_large`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, err := h.Call(ctx, tt.command, []byte(tt.input))
			if err != nil || code != tt.code || string(out) != tt.want {
				t.Errorf("Call(%s, %.40s) = %d, %q, %v; want %d, %q", tt.command, tt.input, code, out, err, tt.code, tt.want)
			}
		})
	}
	if logs := strings.Join(h.Logs(), "\n"); !strings.Contains(logs, `3 command panicked command=run panic=boom stack=`) {
		t.Errorf("the panic was not logged with its stack: %.300s", logs)
	}
}

func TestHTTP(t *testing.T) {
	h := newProbe(t)
	var got []abi.HTTPRequest
	h.http = func(r abi.HTTPRequest) (abi.Status, any) {
		got = append(got, r)
		if strings.Contains(r.URL, "evil") {
			return abi.StatusDenied, abi.Error{Code: "denied", Capability: "network", Target: "evil.example:443", Reason: "is not in its allowlist", Message: "sandbox violation"}
		}
		return abi.StatusOK, abi.HTTPResponse{Status: 201, Headers: map[string][]string{"X-A": {"1"}}, Body: []byte("created"), URL: r.URL + "final"}
	}
	rs := run(t, h,
		probe.HTTP("POST", "https://api.example/").WithHeader("X-Key", "k").WithBody("payload"),
		probe.HTTP("GET", "https://evil.example/"),
		probe.Spawn(probe.HTTP("GET", "https://api.example/w"), true),
		probe.RawData(abi.ImportHTTPRequest, `{"method":"GET","url":"https://api.example/raw"}`, probe.DataPtr, probe.DataLen).ReadBuffer(),
		probe.Raw(abi.ImportHTTPRequest, 0xfffffff0, 100).ReadBuffer(),
	)
	if r := rs[0]; !r.OK || r.Status != 201 || r.Body != "created" || r.URL != "https://api.example/final" || r.Headers["X-A"][0] != "1" {
		t.Errorf("http = %+v", r)
	}
	want := abi.HTTPRequest{Method: "POST", URL: "https://api.example/", Headers: map[string][]string{"X-Key": {"k"}}, Body: []byte("payload")}
	if a, b := mustJSON(got[0]), mustJSON(want); a != b {
		t.Errorf("station got %s, want %s", a, b)
	}
	if e := rs[1].Error; rs[1].OK || e == nil || e.Status != int32(abi.StatusDenied) || e.Capability != "network" || e.Target != "evil.example:443" || e.Message != "sandbox violation" {
		t.Errorf("denied http = %+v %+v", rs[1], e)
	}
	if r := rs[2].Result; r == nil || r.Status != 201 {
		t.Errorf("spawned http = %+v", rs[2])
	}
	if r := rs[3]; r.ABIStatus == nil || *r.ABIStatus != 0 || r.Buffer == nil || !strings.Contains(*r.Buffer, `"url":"https://api.example/rawfinal"`) {
		t.Errorf("raw http_request = %+v", r)
	}
	if r := rs[4]; r.ABIStatus == nil || abi.Status(*r.ABIStatus) != abi.StatusFault || r.Buffer == nil || !strings.Contains(*r.Buffer, `"code":"fault"`) {
		t.Errorf("raw http_request with a bad pointer = %+v", r)
	}
}

func TestSpawnOutlivesCall(t *testing.T) {
	h := newProbe(t)
	calls := 0
	h.http = func(r abi.HTTPRequest) (abi.Status, any) {
		calls++
		return abi.StatusOK, abi.HTTPResponse{Status: 200, URL: r.URL}
	}
	rs := run(t, h, probe.Spawn(probe.Seq(probe.Sleep(50*time.Millisecond), probe.HTTP("GET", "https://later.example/")), false))
	if rs[0].ID != 1 || calls != 0 {
		t.Fatalf("spawn = %+v, %d requests; want id 1 and none yet", rs[0], calls)
	}
	rs = run(t, h, probe.Collect(5*time.Second))
	if len(rs[0].Results) != 1 || rs[0].Results[0].ID != 1 || rs[0].Results[0].Results[1].Status != 200 || calls != 1 {
		t.Fatalf("collect = %+v, %d requests", rs[0], calls)
	}
}

func TestRaw(t *testing.T) {
	h := newProbe(t)
	rs := run(t, h,
		probe.Raw(abi.ImportBufLen, 12345),
		probe.Raw(abi.ImportBufRead, 1, 0xffffffff, 10),
		probe.RawData(abi.ImportLog, "raw line", 2, probe.DataPtr, probe.DataLen),
		probe.Raw(abi.ImportLog, 2, 0xfffffff0, 1000),
		probe.Raw(abi.ImportBufFree, 7),
		probe.Raw(abi.ImportBufLen, 1, 2),
		probe.Raw("exec", 0, 0),
	)
	values := []int64{-1, -int64(abi.StatusInvalid), 0, -int64(abi.StatusFault)}
	for i, want := range values {
		if rs[i].Value == nil || *rs[i].Value != want {
			t.Errorf("raw %d = %+v, want value %d", i, rs[i], want)
		}
	}
	if !rs[4].OK || rs[4].Value != nil {
		t.Errorf("buf_free = %+v, want ok without a value", rs[4])
	}
	if rs[5].OK || rs[6].OK {
		t.Errorf("wrong arity, unknown import = %+v, %+v; want errors", rs[5], rs[6])
	}
	if logs := h.Logs(); len(logs) != 1 || logs[0] != "2 raw line" {
		t.Errorf("logs = %q", logs)
	}
}

func TestCrashes(t *testing.T) {
	tests := []struct {
		name    string
		action  probe.Action
		timeout time.Duration
		want    string
	}{
		{"trap", probe.Trap(), 30 * time.Second, "out of bounds memory access"},
		{"loop", probe.Loop(), 200 * time.Millisecond, "deadline exceeded"},
		{"exit", probe.Exit(3), 30 * time.Second, "exit_code(3)"},
		// The Go runtime's fatal errors end in runtime.abort: unreachable.
		{"panic in a goroutine", probe.Spawn(probe.Panic("bg"), true), 30 * time.Second, "unreachable"},
		{"memory", probe.Alloc(512<<20, true), 30 * time.Second, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newProbe(t)
			_, out, err := h.Call(withTimeout(t, tt.timeout), probe.Command, probe.Run(tt.action))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v (output %.100q), want %q", tt.name, err, out, tt.want)
			}
		})
	}
}

func TestVariants(t *testing.T) {
	ctx := context.Background()
	interp := wazero.NewRuntimeConfigInterpreter()
	if _, err := newFakeHostWith(t, interp, probe.Wasm(t, probe.ExtraImportTag)); err == nil || !strings.Contains(err.Error(), `"exec" is not exported in module "station"`) {
		t.Errorf("instantiating the extra-import probe: error %v, want a missing import", err)
	}
	base := []string{abi.ImportBufLen, abi.ImportBufRead, abi.ImportBufFree, abi.ImportOutputSet, abi.ImportLog}
	h, err := newFakeHost(t, probe.Wasm(t, probe.NoNetworkTag), base...)
	if err != nil {
		t.Fatalf("the no-network probe must load without http_request: %v", err)
	}
	code, out, err := h.Call(ctx, probe.Command, probe.Run(probe.HTTP("GET", "https://x.example/")))
	rs, _ := probe.Decode(out)
	if err != nil || code != abi.CallOK || len(rs) != 1 || rs[0].OK {
		t.Errorf("http in the no-network probe = %d %s %v, want a failed action", code, out, err)
	}
	if _, err := newFakeHostWith(t, interp, probe.Wasm(t), base...); err == nil {
		t.Errorf("the default probe loaded without http_request")
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
