package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLLMUsage: a workflow's llm step is the station's own spending and
// shows as (station); --since must be positive.
func TestLLMUsage(t *testing.T) {
	h := newWFHome(t)
	r := stationEnv(t, h.env, "llm", "usage")
	if r.code != 0 || !strings.Contains(r.err, "no LLM usage in the last 24h0m0s") {
		t.Errorf("usage before any call: %d %q %q", r.code, r.out, r.err)
	}
	file := h.file(t, "invoice.yaml", invoiceWorkflow)
	stationEnv(t, h.env, "workflow", "run", file, "--input", "customer=cus_42", "--input", "key=sk_test_1").want(t, 0)

	r = stationEnv(t, h.env, "llm", "usage", "--json").want(t, 0)
	var rows []struct {
		Module           string `json:"module"`
		Calls            int64  `json:"calls"`
		CompletionTokens int64  `json:"completion_tokens"`
	}
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 1 || rows[0].Module != "(station)" || rows[0].Calls != 1 || rows[0].CompletionTokens == 0 {
		t.Errorf("llm usage --json = %s (%v)", r.out, err)
	}
	r = stationEnv(t, h.env, "llm", "usage").want(t, 0)
	if !strings.Contains(r.out, "MODULE") || !strings.Contains(r.out, "(station)") {
		t.Errorf("llm usage:\n%s", r.out)
	}
	stationEnv(t, h.env, "llm", "usage", "--since", "0s").want(t, 2)
}
