package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// A request document with a field the ABI does not have is refused, naming
// the field: the guest never believes it set an option the station ignored.
// Keys in another case, duplicate keys and trailing data are refused too.
func TestRequestDocumentsAreStrict(t *testing.T) {
	fake := &fakeLLM{}
	h := newHost(t, host.Options{LLM: fake.complete})
	if _, err := h.Load(context.Background(), parse(t, llmManifest("test/llm", "true")), probe.Wasm(t, probe.LLMTag)); err != nil {
		t.Fatal(err)
	}
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	tests := []struct {
		name   string
		imp    string
		doc    string
		status abi.Status
		msg    string
	}{
		{"tls option", abi.ImportHTTPRequest, `{"method":"GET","url":"https://a.example/","tls":{"insecure_skip_verify":true}}`, abi.StatusInvalid, `request document: unknown field "tls"`},
		{"url in another case", abi.ImportHTTPRequest, `{"url":"https://a.example/","URL":"https://b.example/"}`, abi.StatusInvalid, `request document: unknown field "URL"`},
		{"duplicate url", abi.ImportHTTPRequest, `{"url":"https://a.example/","url":"https://b.example/"}`, abi.StatusInvalid, `request document: duplicate key "url"`},
		{"trailing document", abi.ImportHTTPRequest, `{"url":"https://a.example/"} {"url":"https://b.example/"}`, abi.StatusInvalid, "request document: invalid character '{' after top-level value"},
		{"known fields only", abi.ImportHTTPRequest, `{"method":"GET","url":"https://a.example/"}`, abi.StatusDenied, ""},
		{"llm model", abi.ImportLLMComplete, `{"model":"gpt-5",` + msgs + `}`, abi.StatusInvalid, `request document: unknown field "model"`},
		{"llm message name", abi.ImportLLMComplete, `{"messages":[{"role":"user","content":"x","name":"n"}]}`, abi.StatusInvalid, `request document: unknown field "name" in messages[0]`},
		{"llm duplicate max_tokens", abi.ImportLLMComplete, `{` + msgs + `,"max_tokens":1,"max_tokens":100000}`, abi.StatusInvalid, `request document: duplicate key "max_tokens"`},
		{"llm trailing data", abi.ImportLLMComplete, `{` + msgs + `}x`, abi.StatusInvalid, "request document: invalid character 'x' after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fake.count()
			r := runProbe(t, h, context.Background(), "test/llm", probe.RawData(tt.imp, tt.doc, probe.DataPtr, probe.DataLen).ReadBuffer())[0]
			if !r.OK || r.ABIStatus == nil {
				t.Fatalf("raw call failed: %+v", r.Error)
			}
			if got := abi.Status(*r.ABIStatus); got != tt.status {
				t.Errorf("status %s, want %s (buffer %v)", got, tt.status, deref(r.Buffer))
			}
			if tt.msg != "" {
				var e abi.Error
				if err := json.Unmarshal([]byte(deref(r.Buffer)), &e); err != nil || e.Code != tt.status.String() || e.Message != tt.msg {
					t.Errorf("error document %s, want message %q", deref(r.Buffer), tt.msg)
				}
			}
			if tt.status == abi.StatusInvalid && fake.count() != before {
				t.Error("a refused document reached the station's LLM")
			}
		})
	}
}

// Every limit a module meets is a recorded refusal naming the module, the
// capability, the target and the limit; the guest gets too_large (with an
// Error document where the import returns one) and a failing call's error
// names the module and the limit.
func TestLimitsAreRecorded(t *testing.T) {
	rec := &fixture.Recorder{}
	h := newHost(t, host.Options{Recorder: rec})
	man := parse(t, probeNoNet+"limits: {max_request: 1KiB, max_output: 1KiB, max_input: 2KiB}\n")
	if _, err := h.Load(context.Background(), man, probe.Wasm(t)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		act    probe.Action
		target string
		reason string
		detail string // what the error adds: the limit for people, and the manifest key that raises it
		doc    bool   // the guest gets an Error document
	}{
		{"request document", probe.Raw(abi.ImportHTTPRequest, 16, 4096).ReadBuffer(), abi.ImportHTTPRequest,
			"request document of 4096 bytes exceeds the limit of 1024", "; the limit is 1 KiB (raise it with limits.max_request in the module's manifest)", true},
		{"log line", probe.Raw(abi.ImportLog, 1, 16, host.MaxLogLine+1), abi.ImportLog,
			"line of 65537 bytes exceeds the limit of 65536; nothing was logged", "; the limit is 64 KiB", false},
		{"output", probe.Raw(abi.ImportOutputSet, 16, 4096), abi.ImportOutputSet,
			"the module's result of 4096 bytes exceeds the limit of 1024", "; the limit is 1 KiB (raise it with limits.max_output in the module's manifest)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rec.Len()
			out, err := h.Call(context.Background(), "test/probe", probe.Command, probe.Run(tt.act))
			if err == nil {
				res, derr := probe.Decode(out)
				if derr != nil || len(res) != 1 || !res[0].OK {
					t.Fatalf("probe result %s: %v", out, derr)
				}
				switch {
				case res[0].ABIStatus != nil: // a packed i64 result
					if got := abi.Status(*res[0].ABIStatus); got != abi.StatusTooLarge {
						t.Errorf("status %s, want too_large", got)
					}
				case res[0].Value == nil || *res[0].Value != -int64(abi.StatusTooLarge):
					t.Errorf("result %s, want -too_large", out)
				}
				if tt.doc {
					var e abi.Error
					if err := json.Unmarshal([]byte(deref(res[0].Buffer)), &e); err != nil {
						t.Fatalf("error document %q: %v", deref(res[0].Buffer), err)
					}
					want := abi.Error{Code: "too_large", Capability: "host", Target: tt.target, Reason: tt.reason,
						Message: `limit exceeded: module test/probe: host: "` + tt.target + `" ` + tt.reason + tt.detail}
					if e != want {
						t.Errorf("error document\n got %+v\nwant %+v", e, want)
					}
				}
			} else {
				// output_set's refusal fails the call: the error names the
				// module and the limit.
				var ce *host.CallError
				if want := "module test/probe: run: " + tt.reason + tt.detail; !errors.As(err, &ce) || ce.Limit == nil || ce.Limit.Reason != tt.reason || err.Error() != want {
					t.Errorf("call error\n got %v\nwant %s", err, want)
				}
			}
			var got []sandbox.Decision
			for _, d := range rec.Since(before) {
				if d.Capability == sandbox.Host {
					d.Time = d.Time.UTC().Truncate(0)
					got = append(got, d)
				}
			}
			if len(got) != 1 {
				t.Fatalf("host decisions %+v, want one", got)
			}
			want := sandbox.Decision{Time: got[0].Time, Module: "test/probe", Command: probe.Command, Capability: sandbox.Host, Target: tt.target, Reason: tt.reason}
			if got[0] != want {
				t.Errorf("decision\n got %+v\nwant %+v", got[0], want)
			}
		})
	}

	// The caller's input over the limit: refused before the guest runs,
	// recorded, and the error names the module and the limit.
	before := rec.Len()
	_, err := h.Call(context.Background(), "test/probe", probe.Command, []byte(`"`+strings.Repeat("x", 3000)+`"`))
	var ce *host.CallError
	const want = "module test/probe: run: input of 3002 bytes exceeds the limit of 2048; the limit is 2 KiB (raise it with limits.max_input in the module's manifest)"
	if !errors.As(err, &ce) || ce.Kind != host.KindInput || ce.Limit == nil || ce.Limit.Limit != 2048 || ce.Limit.Key != "limits.max_input" || err.Error() != want {
		t.Errorf("oversized input:\n got %v\nwant %s", err, want)
	}
	if got := rec.Since(before); len(got) != 1 || got[0].Module != "test/probe" || got[0].Target != "input" || got[0].Reason != "input of 3002 bytes exceeds the limit of 2048" {
		t.Errorf("oversized input: decisions %+v", got)
	}
}
