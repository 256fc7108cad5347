package host

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk/abi"
)

// checkDoc is the strict half of decoding a request document: what
// json.Unmarshal accepts and ignores (unknown fields, keys in another case,
// duplicate keys) is refused, naming the key, bounded and quoted.
func TestCheckDoc(t *testing.T) {
	long := strings.Repeat("k", 100)
	tests := []struct {
		name  string
		shape *docShape
		doc   string
		want  string // "" for accepted
	}{
		{"http ok", httpShape, `{"method":"GET","url":"https://a.example/","headers":{"A":["1"],"B":["2"]},"body":"eA=="}`, ""},
		{"http escaped key", httpShape, `{"ur\u006c":"https://a.example/"}`, ""},
		{"http escapes in values", httpShape, `{"url":"https://a.example/\"}\\","headers":{"A\"":["\\\""]}}`, ""},
		{"http tls option", httpShape, `{"method":"GET","url":"https://a.example/","tls":{"insecure_skip_verify":true}}`, `unknown field "tls"`},
		{"http timeout option", httpShape, `{"url":"https://a.example/","timeout_ms":5}`, `unknown field "timeout_ms"`},
		{"http key in another case", httpShape, `{"url":"https://a.example/","URL":"https://b.example/"}`, `unknown field "URL"`},
		{"http duplicate url", httpShape, `{"url":"https://a.example/","url":"https://b.example/"}`, `duplicate key "url"`},
		{"http duplicate header", httpShape, `{"url":"https://a.example/","headers":{"A":["1"],"A":["2"]}}`, `duplicate key "A" in headers`},
		{"http key with control bytes", httpShape, `{"url":"x","a\u0000\u202eb":1}`, `unknown field "a\x00\u202eb"`},
		{"http long key", httpShape, `{"` + long + `":1}`, `unknown field "` + long[:maxKeyInError] + `"...`},
		{"process ok", processShape, `{"argv":["git","status"],"env":{"A":"1"},"stdin":"eA==","dir":"/w"}`, ""},
		{"process shell option", processShape, `{"argv":["git"],"shell":true}`, `unknown field "shell"`},
		{"process duplicate argv", processShape, `{"argv":["git"],"argv":["rm"]}`, `duplicate key "argv"`},
		{"process duplicate env", processShape, `{"argv":["git"],"env":{"A":"1","A":"2"}}`, `duplicate key "A" in env`},
		{"llm ok", llmShape, `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"temperature":0.5,"json":true}`, ""},
		{"llm model", llmShape, `{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}`, `unknown field "model"`},
		{"llm message field", llmShape, `{"messages":[{"role":"user","content":"x"},{"role":"user","content":"x","name":"n"}]}`, `unknown field "name" in messages[1]`},
		{"llm duplicate role", llmShape, `{"messages":[{"role":"user","role":"system","content":"x"}]}`, `duplicate key "role" in messages[0]`},
		{"null", httpShape, `null`, ""},
		{"field in a map's value", mapOfMessages, `{"a":{"role":"user"},"b\"":{"role":"user","name":"n"}}`, `unknown field "name" in ["b\""]`},
		{"whitespace and empty values", llmShape, " {\n\"messages\" : [ ] , \"json\" :true } ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.doc)) {
				t.Fatalf("test document is not JSON: %s", tt.doc)
			}
			got := ""
			if err := checkDoc([]byte(tt.doc), tt.shape); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("checkDoc(%s)\n got %s\nwant %s", tt.doc, got, tt.want)
			}
		})
	}
}

// mapOfMessages is a shape no abi type has yet: an error inside a map's
// value names the key.
var mapOfMessages = shapeOf(reflect.TypeFor[map[string]abi.LLMMessage]())

// The shapes follow the abi types' json tags.
func TestShapes(t *testing.T) {
	tests := []struct {
		shape *docShape
		want  string
	}{
		{httpShape, "method url headers body"},
		{processShape, "argv env stdin dir"},
		{llmShape, "messages max_tokens temperature json"},
		{llmShape.fields[0].elem, "role content"},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.shape.names, " "); got != tt.want {
			t.Errorf("shape %q, want %q", got, tt.want)
		}
	}
}

func BenchmarkCheckDoc(b *testing.B) {
	doc, _ := json.Marshal(abi.HTTPRequest{Method: "POST", URL: "https://api.stripe.com/v1/invoices", Headers: map[string][]string{"Authorization": {"Bearer x"}, "Content-Type": {"application/json"}}, Body: make([]byte, 4096)})
	b.ReportAllocs()
	for b.Loop() {
		if err := checkDoc(doc, httpShape); err != nil {
			b.Fatal(err)
		}
	}
}
