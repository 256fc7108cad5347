//go:build !wasip1

package sllm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
)

func TestEncode(t *testing.T) {
	temp := 0.5
	doc, err := encode(Request{Messages: []Message{System("s"), User("u"), Assistant("a")}, MaxTokens: 9, Temperature: &temp, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}],"max_tokens":9,"temperature":0.5,"json":true}`
	if string(doc) != want {
		t.Errorf("encode =\n %s\nwant\n %s", doc, want)
	}
	doc, _ = encode(Request{Messages: []Message{User("u")}})
	if got := string(doc); got != `{"messages":[{"role":"user","content":"u"}]}` {
		t.Errorf("encode without options = %s", got)
	}
}

func TestDecode(t *testing.T) {
	ok, _ := json.Marshal(abi.LLMResponse{Model: "m", Content: "c", FinishReason: "length", Usage: abi.LLMUsage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}})
	got, err := decode(abi.StatusOK, ok)
	want := &Response{Model: "m", Content: "c", FinishReason: "length", Usage: Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("decode(ok) = %+v, %v; want %+v", got, err, want)
	}
	denied := `{"code":"denied","capability":"llm","target":"m","reason":"has used its budget","message":"sandbox violation: ..."}`
	_, err = decode(abi.StatusDenied, []byte(denied))
	var he *sdk.HostError
	if !errors.As(err, &he) || !he.Denied() || he.Capability != "llm" || he.Reason != "has used its budget" {
		t.Errorf("decode(denied) = %#v", err)
	}
	if _, err := decode(abi.StatusOK, []byte("{")); err == nil {
		t.Error("decode accepted a malformed answer")
	}
}

func TestNative(t *testing.T) {
	ctx := context.Background()
	_, err := Complete(ctx, Request{Messages: []Message{User("x")}})
	var he *sdk.HostError
	if !errors.As(err, &he) || he.Status != abi.StatusUnavailable || !strings.Contains(err.Error(), "SetNativeCompleter") {
		t.Fatalf("Complete without a fake: %v", err)
	}
	SetNativeCompleter(func(ctx context.Context, req Request) (*Response, error) {
		return &Response{Content: "fake: " + req.Messages[0].Content}, nil
	})
	t.Cleanup(func() { SetNativeCompleter(nil) })
	if got, err := Ask(ctx, "hello"); err != nil || got != "fake: hello" {
		t.Errorf("Ask = %q, %v", got, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Complete(canceled, Request{Messages: []Message{User("x")}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Complete with a canceled context: %v", err)
	}
}
