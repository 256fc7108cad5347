//go:build !wasip1

package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk"
	"github.com/station-dev/station/sdk/abi"
	"github.com/station-dev/station/sdk/sllm"
)

// fake answers like a provider would, and records the requests.
func fake(t *testing.T, answer func(sllm.Request) (*sllm.Response, error)) *[]sllm.Request {
	var reqs []sllm.Request
	sllm.SetNativeCompleter(func(ctx context.Context, r sllm.Request) (*sllm.Response, error) {
		reqs = append(reqs, r)
		return answer(r)
	})
	t.Cleanup(func() { sllm.SetNativeCompleter(nil) })
	return &reqs
}

func TestSummarize(t *testing.T) {
	reqs := fake(t, func(r sllm.Request) (*sllm.Response, error) {
		return &sllm.Response{Model: "m", Content: "  A short summary.\n", FinishReason: "stop", Usage: sllm.Usage{TotalTokens: 42}}, nil
	})
	tests := []struct{ input, want, wantErr string }{
		{input: `{"text":"Station runs modules."}`, want: `{"summary":"A short summary.","model":"m","tokens":42}`},
		{input: `{"text":"x","sentences":3}`, want: `{"summary":"A short summary.","model":"m","tokens":42}`},
		{input: `{"text":"   "}`, wantErr: "text is required"},
		{input: `{"text":"x","sentences":9}`, wantErr: "sentences must be between 1 and 5"},
		{input: `{"text":"` + strings.Repeat("a", maxText+1) + `"}`, wantErr: "at most 32768"},
	}
	for _, tt := range tests {
		got, err := sdk.Invoke(context.Background(), "summarize", []byte(tt.input))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("summarize(%.40s) error %v, want %q", tt.input, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("summarize(%.40s) = %s, %v; want %s", tt.input, got, err, tt.want)
		}
	}
	if len(*reqs) != 2 || !strings.Contains((*reqs)[1].Messages[0].Content, "3 plain sentence") || (*reqs)[0].Messages[1].Content != "Station runs modules." {
		t.Errorf("requests %+v", *reqs)
	}
}

func TestKeywords(t *testing.T) {
	content := `{"keywords":["a","b","c","d","e","f"]}`
	reqs := fake(t, func(r sllm.Request) (*sllm.Response, error) {
		return &sllm.Response{Model: "m", Content: content, Usage: sllm.Usage{TotalTokens: 7}}, nil
	})
	got, err := sdk.Invoke(context.Background(), "keywords", []byte(`{"text":"x"}`))
	if err != nil || string(got) != `{"keywords":["a","b","c","d","e"],"model":"m","tokens":7}` {
		t.Errorf("keywords = %s, %v", got, err)
	}
	if !(*reqs)[0].JSON {
		t.Error("keywords did not ask for JSON")
	}
	content = "not json"
	if _, err := sdk.Invoke(context.Background(), "keywords", []byte(`{"text":"x"}`)); err == nil || !strings.Contains(err.Error(), "did not answer with the JSON") {
		t.Errorf("keywords with a non-JSON answer: %v", err)
	}
}

func TestRefusalExplained(t *testing.T) {
	fake(t, func(sllm.Request) (*sllm.Response, error) {
		return nil, &sdk.HostError{Status: abi.StatusDenied, Capability: "llm", Reason: "has used its budget", Message: "sandbox violation: ..."}
	})
	_, err := sdk.Invoke(context.Background(), "summarize", []byte(`{"text":"x"}`))
	var he *sdk.HostError
	if err == nil || !strings.Contains(err.Error(), "the station refused the completion (has used its budget): sandbox violation") || !errors.As(err, &he) {
		t.Errorf("error %v", err)
	}
}
