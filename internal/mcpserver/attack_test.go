package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/mcpserver"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/workflow"
)

// The attacks of this file are those of a hostile module author (a
// manifest crafted against the server), a hostile MCP client, and a web page
// on the operator's machine. Each test is an attack that must fail.

// serveMemory runs a server over w in this process and connects a client
// to it through an in-memory transport.
func serveMemory(t *testing.T, w *world, o mcpserver.Options, client string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := mcpserver.New(ctx, w.st, o)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	go srv.Serve(ctx, st)
	return connect(t, ct, client, nil)
}

// tools lists the tools a client sees, by name.
func tools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		out[tl.Name] = tl
	}
	return out
}

// installManifest installs the probe under a manifest given whole (for
// attacks that need more than install's command line).
func installManifest(t *testing.T, st *station.Station, manifest string, wasm []byte) error {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil })
	return err
}

// TestAttackSchemaNeverLoads: a schema whose $ref (or $id and a relative
// $ref) points at a file or a URL does not install, and nothing was
// fetched: references must resolve inside the schema.
func TestAttackSchemaNeverLoads(t *testing.T) {
	w := newWorld(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(rw, `{"type":"object"}`)
	}))
	t.Cleanup(srv.Close)
	secret := filepath.Join(t.TempDir(), "schema.json")
	os.WriteFile(secret, []byte(`{"type":"object"}`), 0o600)
	for i, schema := range []string{
		`{"type":"object","$ref":"` + srv.URL + `/s.json"}`,
		`{"type":"object","$ref":"file://` + secret + `"}`,
		`{"type":"object","$id":"` + srv.URL + `/root.json","properties":{"a":{"$ref":"other.json"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"` + secret + `"}}}`,
		`{"type":"object","$schema":"` + srv.URL + `/meta.json"}`,
	} {
		id := fmt.Sprintf("test/fetch%d", i)
		err := installManifest(t, w.st, fmt.Sprintf("id: %s\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: run\n    input_schema: %s\n", id, schema), probe.Wasm(t, probe.NoNetworkTag))
		if err == nil {
			t.Errorf("%s installed with the input schema %s", id, schema)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schemas' URL was fetched %d times", n)
	}
}

// TestAttackPathologicalSchemaKeywords: patterns that backtrack in other
// engines (Go's regexp is linear), a multipleOf of 1e-300 and a huge
// minLength check in well under the module's deadline, and the server
// goes on serving.
func TestAttackPathologicalSchemaKeywords(t *testing.T) {
	w := newWorld(t)
	w.install(t, w.st, "test/regex", "1.0.0", `    input_schema:
      type: object
      properties:
        s: {type: string, pattern: "^(a+)+$"}
        t: {type: string, pattern: "^(a|aa)*(b|c)?(a*)*$", minLength: 2000000000}
        n: {type: number, multipleOf: 1e-300}
        m: {type: number, multipleOf: 0.0000001, maximum: 1e308}
        e: {enum: [1, 2, 3, "a", {x: [1, 2]}]}
`, probe.Wasm(t, probe.NoNetworkTag))
	cs := serveMemory(t, w, mcpserver.Options{}, "regex")
	evil := strings.Repeat("a", 1<<20) + "!"
	for _, args := range []map[string]any{
		{"s": evil},
		{"t": evil},
		{"n": 1e300},
		{"m": 12345678.123456789},
		{"e": map[string]any{"x": []int{1, 2, 3}}},
	} {
		start := time.Now()
		r := call(t, cs, "regex__run", args)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("arguments %.40v took %v to check", args, d)
		}
		if !r.IsError || !strings.Contains(text(r), "input_schema") {
			t.Errorf("arguments %.40v: isError %v, %.200q; want the schema's complaint", args, r.IsError, text(r))
		}
	}
	if r := call(t, cs, "pure__run", actions(probe.Output(1))); r.IsError {
		t.Errorf("a call after the pathological ones: %q", text(r))
	}
}

// TestAttackHostileArguments: arguments that are not an object, that repeat
// a key, that nest deeper than any decoder goes, or whose numbers are beyond
// a float's precision get an error (result or protocol) and never reach a
// module past its schema; the server goes on serving.
func TestAttackHostileArguments(t *testing.T) {
	w := newWorld(t)
	cs := serveMemory(t, w, mcpserver.Options{}, "hostile-args")
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	for _, tt := range []struct{ name, args string }{
		{"an array", `[1,2,3]`},
		{"a string", `"not an object"`},
		{"a number", `42`},
		// The last of a repeated key is what the schema checks, the
		// first one the module refuses (encoding/json reports it).
		{"a repeated key, the last one wrong", `{"actions":[],"actions":7}`},
		{"a repeated key, the first one wrong", `{"actions":7,"actions":[]}`},
		{"nine actions, past maxItems", `{"actions":[{},{},{},{},{},{},{},{},{}]}`},
		{"nested 20000 deep", `{"actions":[],"x":` + deep + `}`},
		{"a number beyond float64", `{"actions":1e400}`},
	} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "stripe__run", Arguments: json.RawMessage(tt.args)})
		if err == nil && !r.IsError {
			t.Errorf("%s: the call succeeded: %.200q", tt.name, text(r))
		}
	}
	// The schema checks the last of a repeated key; the module reads the
	// last as well, so nine actions cannot slip past maxItems in front of
	// an empty list.
	if r := call(t, cs, "stripe__run", json.RawMessage(`{"actions":[{},{},{},{},{},{},{},{},{}],"actions":[]}`)); r.IsError || text(r) != `{"results":[]}` {
		t.Errorf("a repeated key, the last one right: isError %v, %q; want no results", r.IsError, text(r))
	}
	if r := call(t, cs, "pure__run", actions(probe.Output(1))); r.IsError {
		t.Errorf("a call after the hostile arguments: %q", text(r))
	}
}

// TestAttackClientNameInTrace: the client's name is its own to choose; in
// the audit trace it cannot add a path segment, control characters, bidi
// overrides, or more than 64 bytes.
func TestAttackClientNameInTrace(t *testing.T) {
	w := newWorld(t)
	name := "claude-ai/../../station\x1b[2J\r\n\u202eevil\x00" + strings.Repeat("x", 1<<16)
	cs := serveMemory(t, w, mcpserver.Options{}, name)
	if r := call(t, cs, "stripe__run", actions(probe.HTTP("GET", "https://api.groq.com/"), probe.Panic("gave up"))); !r.IsError {
		t.Fatalf("the denied call: %q", text(r))
	}
	r := call(t, cs, mcpserver.AuditTool, map[string]any{"module": stripeMod, "denied_only": true})
	var audit mcpserver.AuditResult
	if err := json.Unmarshal([]byte(text(r)), &audit); err != nil || len(audit.Decisions) == 0 {
		t.Fatalf("audit %q: %v", text(r), err)
	}
	trace := audit.Decisions[len(audit.Decisions)-1].Trace
	parts := strings.Split(trace, "/")
	if len(parts) != 3 || parts[0] != "mcp" || !strings.HasPrefix(parts[1], "claude-ai_") || len(parts[1]) > 64 {
		t.Errorf("trace %q: want mcp/CLIENT/SESSION with CLIENT at most 64 bytes", trace)
	}
	for _, r := range trace {
		if r < 0x20 || r == 0x7f || r == 0x202e {
			t.Errorf("trace %q holds %U", trace, r)
		}
	}
}

// TestAttackHTTPEveryMethod: every method of /mcp — the event stream's GET
// and the session's DELETE too — is behind the token, the Host check and
// the web-page checks; a session id the server never gave answers nothing.
func TestAttackHTTPEveryMethod(t *testing.T) {
	w := newWorld(t)
	addr, token := w.serveHTTP(t, mcpserver.Options{})
	do := func(method string, hdr map[string]string) int {
		req, _ := http.NewRequest(method, "http://"+addr+daemon.MCPPath, nil)
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	auth := "Bearer " + token
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	for _, method := range []string{"GET", "DELETE", "PUT", "OPTIONS"} {
		for _, tt := range []struct {
			name string
			hdr  map[string]string
			want int
		}{
			{"no token", map[string]string{"Mcp-Session-Id": "x"}, http.StatusUnauthorized},
			{"the token under another scheme", map[string]string{"Authorization": "Basic " + token}, http.StatusUnauthorized},
			{"from a web page", map[string]string{"Authorization": auth, "Origin": "null"}, http.StatusForbidden},
			{"same-site fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
			{"DNS rebinding", map[string]string{"Authorization": auth, "Host": "attacker.example:" + port}, http.StatusForbidden},
			{"rebinding to localhost on another port", map[string]string{"Authorization": auth, "Host": "localhost:1"}, http.StatusForbidden},
		} {
			if got := do(method, tt.hdr); got != tt.want {
				t.Errorf("%s %s: %d, want %d", method, tt.name, got, tt.want)
			}
		}
		if method == "GET" || method == "DELETE" {
			if got := do(method, map[string]string{"Authorization": auth, "Mcp-Session-Id": "AAAAAAAAAAAAAAAAAAAAAAAAAA"}); got < 400 || got >= 500 {
				t.Errorf("%s with a session id the server never gave: %d, want a 4xx", method, got)
			}
		}
	}
}

// TestAttackExposeThroughAuditAndWorkflows: with only pure exposed, the
// decisions of a module not exposed are in no answer of station_audit
// (whatever its filters), and a workflow that uses such a module is no
// tool: one of the operator's that uses it in its last step after twenty
// that are fine, one that uses it in a step that never runs (if: false),
// and a team's.
func TestAttackExposeThroughAuditAndWorkflows(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if _, err := w.st.Run(ctx, stripeMod, probe.Command, probe.Run(probe.HTTP("GET", "https://api.groq.com/"))); err != nil {
		t.Fatal(err)
	}
	wfDir := filepath.Join(w.home, mcpserver.WorkflowDir)
	teamDir := hubsync.WorkflowDir(w.home, "crew")
	for _, d := range []string{wfDir, teamDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pure := "  - id: p%d\n    uses: test/pure run\n    with: {actions: []}\n"
	var many strings.Builder
	for i := range 20 {
		fmt.Fprintf(&many, pure, i)
	}
	for file, body := range map[string]string{
		filepath.Join(wfDir, "fine.yaml"):     "steps:\n" + fmt.Sprintf(pure, 0),
		filepath.Join(wfDir, "late.yaml"):     "steps:\n" + many.String() + "  - id: s\n    uses: test/stripe run\n    needs: [p19]\n    with: {actions: []}\n",
		filepath.Join(wfDir, "cond.yaml"):     "steps:\n" + fmt.Sprintf(pure, 0) + "  - id: s\n    uses: test/writer run\n    if: false\n    with: {actions: []}\n",
		filepath.Join(teamDir, "reach.yaml"):  "steps:\n  - id: s\n    uses: test/stripe run\n    with: {actions: []}\n",
		filepath.Join(teamDir, "fine-2.yaml"): "steps:\n" + fmt.Sprintf(pure, 0),
	} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wfs, err := workflowService(w)
	if err != nil {
		t.Fatal(err)
	}
	cs := serveMemory(t, w, mcpserver.Options{Expose: []string{pureMod}, Workflows: wfs}, "narrow")
	var names []string
	for name := range tools(t, cs) {
		if strings.HasPrefix(name, "workflow__") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if got := strings.Join(names, ","); got != "workflow__crew__fine_2,workflow__fine" {
		t.Errorf("workflow tools %s; want only those whose every module is exposed", got)
	}
	for _, args := range []map[string]any{
		{}, {"denied_only": true}, {"limit": 500}, {"since": "2000-01-01T00:00:00Z"}, {"trace": ""},
		{"module": ""}, {"module": "test/stripe "}, {"module": "TEST/STRIPE"}, {"module": "test/%"},
	} {
		r := call(t, cs, mcpserver.AuditTool, args)
		if r.IsError {
			continue // refused, naming what it was asked
		}
		if strings.Contains(text(r), stripeMod) || strings.Contains(text(r), "groq") {
			t.Errorf("station_audit %v shows a module not exposed: %.300s", args, text(r))
		}
	}
	for _, args := range []map[string]any{{"limit": -1}, {"limit": 501}, {"limit": 1 << 40}, {"since": "yesterday"}} {
		if r := call(t, cs, mcpserver.AuditTool, args); !r.IsError {
			t.Errorf("station_audit %v: %.200s; want an error", args, text(r))
		}
	}
}

// TestAttackOutputSchemaNotAnObject: an output_schema that does not
// describe an object (MCP's output schemas do) is not the tool's
// outputSchema, and its results are never structuredContent.
func TestAttackOutputSchemaNotAnObject(t *testing.T) {
	w := newWorld(t)
	w.install(t, w.st, "test/array-out", "1.0.0", "    output_schema: {type: array}\n", probe.Wasm(t, probe.NoNetworkTag))
	w.install(t, w.st, "test/either-out", "1.0.0", "    output_schema: {type: [object, array]}\n", probe.Wasm(t, probe.NoNetworkTag))
	cs := serveMemory(t, w, mcpserver.Options{}, "typed")
	tl := tools(t, cs)
	for _, name := range []string{"array-out__run", "either-out__run"} {
		if tl[name] == nil {
			t.Fatalf("no tool %s", name)
		}
		if tl[name].OutputSchema != nil {
			t.Errorf("%s has the output schema %v; MCP's describe objects", name, tl[name].OutputSchema)
		}
		if r := call(t, cs, name, actions(probe.Output(1))); r.IsError || r.StructuredContent != nil {
			t.Errorf("%s: isError %v, structured %v", name, r.IsError, r.StructuredContent)
		}
	}
}

// TestAttackDescriptionsArePlainText: a module or command description
// with escape sequences or bidi overrides does not install, so it never
// reaches a tool's description.
func TestAttackDescriptionsArePlainText(t *testing.T) {
	w := newWorld(t)
	for i, desc := range []string{"\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "safe\u202etxt.exe", "line\rover", "\u2028x"} {
		for _, where := range []string{"module", "command"} {
			id := fmt.Sprintf("test/desc-%s-%d", where, i)
			mdesc, cdesc := "fine", "fine"
			if where == "module" {
				mdesc = desc
			} else {
				cdesc = desc
			}
			m := fmt.Sprintf("id: %s\nversion: \"1.0.0\"\ndescription: %q\nwasm: module.wasm\ncommands:\n  - name: run\n    description: %q\n", id, mdesc, cdesc)
			if err := installManifest(t, w.st, m, probe.Wasm(t, probe.NoNetworkTag)); err == nil {
				t.Errorf("a %s description %q installed", where, desc)
			}
		}
	}
}

// stdioServer starts `station mcp` over home as a program, its standard
// error kept (in part) for the test's messages.

// workflowService is the workflow engine over w, as the tests' servers
// run workflows.
func workflowService(w *world) (*workflow.Service, error) {
	return workflow.NewService(context.Background(), w.st, func(string) string { return "" })
}
