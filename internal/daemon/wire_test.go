package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
)

// fullAPIError is an APIError with every field set, so that its JSON has
// every key.
func fullAPIError() *APIError {
	v := sandbox.Deny("dave/stripe", sandbox.Network, "evil.example:443", "is not in its allowlist")
	return &APIError{Code: CodeCallFailed, Message: "m", Module: "dave/stripe", Command: "fetch", Kind: host.KindCommand, Detail: "d", Violation: v,
		Limit: &APILimit{Module: "dave/stripe", Capability: sandbox.Host, Target: "output", Reason: "r", Limit: 16 << 20, Bytes: true, Key: "limits.max_output", KeyIn: "manifest"}}
}

func keys(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestErrorWireIsSnakeCase: every key of an error answer, the violation's
// and the limit's included, is snake_case, and docs/openapi.yaml's Error
// describes exactly those keys.
func TestErrorWireIsSnakeCase(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Properties map[string]schema `yaml:"properties"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	described := doc.Components.Schemas["Error"]
	var check func(path string, got map[string]any, want schema)
	check = func(path string, got map[string]any, want schema) {
		var names []string
		for k := range got {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !snake.MatchString(k) {
				t.Errorf("%s.%s is not snake_case", path, k)
			}
			w, ok := want.Properties[k]
			if !ok {
				t.Errorf("%s.%s is not in docs/openapi.yaml", path, k)
				continue
			}
			if sub, ok := got[k].(map[string]any); ok {
				check(path+"."+k, sub, w)
			}
		}
		for k := range want.Properties {
			if _, ok := got[k]; !ok {
				t.Errorf("docs/openapi.yaml describes %s.%s, which the daemon does not send", path, k)
			}
		}
	}
	check("error", keys(t, fullAPIError()), described)
}

// TestErrorWireReadsOlderDaemons: a violation and a limit as daemons before
// the snake_case keys sent them still decode (encoding/json matches keys
// without regard to case), so a newer client keeps its exit codes.
func TestErrorWireReadsOlderDaemons(t *testing.T) {
	var e APIError
	old := `{"code":"call_failed","message":"m","module":"a/b","command":"c","kind":"command",
		"violation":{"Module":"a/b","Capability":"network","Target":"evil.example:443","Reason":"is not in its allowlist"},
		"limit":{"Module":"a/b","Capability":"host","Target":"output","Reason":"r","Limit":5}}`
	if err := json.Unmarshal([]byte(old), &e); err != nil {
		t.Fatal(err)
	}
	if e.Violation == nil || e.Violation.Target != "evil.example:443" || e.Violation.Capability != sandbox.Network || e.Limit == nil || e.Limit.Limit != 5 {
		t.Errorf("decoded %+v (violation %+v, limit %+v)", e, e.Violation, e.Limit)
	}
	if ce, ok := e.Err().(*host.CallError); !ok || ce.Violation == nil || ce.Violation.Reason != "is not in its allowlist" {
		t.Errorf("Err() = %v, want a *host.CallError with the violation", e.Err())
	}
}
