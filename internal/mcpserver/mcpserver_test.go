package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/mcpserver"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/internal/workflow"
)

// envStdio makes the test binary `station mcp` for the home it names: the
// stdio transport is tested against the real command, started the way a
// desktop client starts it.
const envStdio = "STATION_TEST_MCP_STDIO"

func TestMain(m *testing.M) {
	if home := os.Getenv(envStdio); home != "" {
		// The tests' compilation cache (on disk, shared by the test
		// processes), so the child does not compile the probe again.
		os.Exit(cli.Run(context.Background(), []string{"mcp", "--home", home},
			cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, Cache: wasmbuild.CacheForTest()}))
	}
	os.Exit(m.Run())
}

const (
	stripeMod = "test/stripe"
	writerMod = "test/writer"
	pureMod   = "test/pure"
	spinMod   = "test/spin" // a short deadline, for the calls that run away
)

// world is a station home with three modules of different policies: one
// that may reach api.stripe.com (a loopback fixture; api.groq.com is
// another, which it may not reach), one that may write under a directory,
// and one that may do neither; and a fourth like the last with a deadline
// of half a second.
type world struct {
	home         string
	st           *station.Station
	stripe, groq *fixture.Server
	writable     string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{home: t.TempDir(), writable: t.TempDir()}
	ca := fixture.NewCA(t)
	w.stripe = ca.TLSServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "hello from stripe") }), "api.stripe.com")
	w.groq = ca.TLSServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "groq") }), "api.groq.com")
	cfg := fmt.Sprintf("network:\n  resolve:\n    - api.stripe.com:443=%s\n    - api.groq.com:443=%s\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n",
		w.stripe.Addr, w.groq.Addr, ca.WriteFile(t, w.home))
	if err := os.WriteFile(filepath.Join(w.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w.st = open(t, w.home)
	w.install(t, w.st, stripeMod, "1.0.0", `    description: Run the probe's actions
    input_schema:
      type: object
      properties:
        actions: {type: array, maxItems: 8}
      required: [actions]
requires:
  network:
    allow: [api.stripe.com]
`, probe.Wasm(t))
	w.install(t, w.st, spinMod, "1.0.0", "limits: {timeout: 500ms}\n", probe.Wasm(t, probe.NoNetworkTag))
	w.install(t, w.st, writerMod, "1.0.0", fmt.Sprintf("requires:\n  filesystem_writes: [%q]\n", w.writable+"/**"), probe.Wasm(t))
	w.install(t, w.st, pureMod, "1.0.0", "", probe.Wasm(t, probe.NoNetworkTag))
	return w
}

func open(t testing.TB, home string) *station.Station {
	t.Helper()
	st, err := station.Open(context.Background(), home, station.Options{Cache: wasmbuild.CacheForTest()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// install installs the probe as id; rest follows the command's name in the
// manifest (more of the command, then requires and limits).
func (w *world) install(t testing.TB, st *station.Station, id, version, rest string, wasm []byte) {
	t.Helper()
	dir := t.TempDir()
	m := fmt.Sprintf("id: %s\nversion: %q\ndescription: A probe\nwasm: module.wasm\ncommands:\n  - name: %s\n%s", id, version, probe.Command, rest)
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Install(context.Background(), dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
}

// serveHTTP runs the daemon with its MCP server over w and returns the
// daemon's address and token.
func (w *world) serveHTTP(t testing.TB, o mcpserver.Options) (addr, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := mcpserver.New(ctx, w.st, o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(daemon.Options{Station: w.st, Version: "test", MCP: srv.Handler(), Background: []func(context.Context){srv.Watch}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := daemon.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return ln.Addr().String(), d.Token()
}

// httpTransport reaches the MCP server of the daemon at addr with its token.
func httpTransport(addr, token string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: "http://" + addr + daemon.MCPPath, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
}

// bearer adds the daemon's token to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// transports are the two ways a client reaches the server: `station mcp`
// started as a program (stdio), and the daemon's /mcp (streamable HTTP).
func transports(t *testing.T, w *world) map[string]func() mcp.Transport {
	addr, token := w.serveHTTP(t, mcpserver.Options{Poll: 50 * time.Millisecond})
	return map[string]func() mcp.Transport{
		"stdio": func() mcp.Transport {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envStdio+"="+w.home)
			cmd.Stderr = os.Stderr
			return &mcp.CommandTransport{Command: cmd}
		},
		"http": func() mcp.Transport {
			return httpTransport(addr, token)
		},
	}
}

func connect(t *testing.T, tr mcp.Transport, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return r
}

func actions(as ...probe.Action) json.RawMessage { return probe.Run(as...) }

// TestToolsOverBothTransports lists and calls tools with the official Go
// SDK's client over stdio and over the daemon's streamable HTTP: schemas
// and annotations from the manifests and approvals; a call that succeeds;
// one the sandbox denies (isError naming module, capability, target and
// reason; audited with the client and session; the host it aimed at saw no
// connection); one that times out; arguments the schema refuses; an unknown
// tool — and the server still serves after all of it.
func TestToolsOverBothTransports(t *testing.T) {
	w := newWorld(t)
	for name, tr := range transports(t, w) {
		t.Run(name, func(t *testing.T) {
			cs := connect(t, tr(), "claude-test-"+name, nil)
			ctx := context.Background()
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tools := map[string]*mcp.Tool{}
			for _, tool := range list.Tools {
				tools[tool.Name] = tool
			}
			for _, want := range []string{"stripe__run", "writer__run", "pure__run", mcpserver.ModulesTool, mcpserver.AuditTool} {
				if tools[want] == nil {
					t.Fatalf("no tool %s in %v", want, list.Tools)
				}
			}
			stripe, writer, pure := tools["stripe__run"], tools["writer__run"], tools["pure__run"]
			if b, _ := json.Marshal(stripe.InputSchema); !strings.Contains(string(b), `"maxItems":8`) || !strings.Contains(string(b), `"required":["actions"]`) {
				t.Errorf("stripe's input schema %s: want the manifest's", b)
			}
			if b, _ := json.Marshal(pure.InputSchema); string(b) != `{"type":"object"}` {
				t.Errorf("pure's input schema %s: want an open object", b)
			}
			for _, tt := range []struct {
				tool                            *mcp.Tool
				readOnly, destructive, openWorl bool
			}{{stripe, false, false, true}, {writer, false, true, false}, {pure, true, false, false}} {
				a := tt.tool.Annotations
				if a == nil || a.ReadOnlyHint != tt.readOnly || a.DestructiveHint == nil || *a.DestructiveHint != tt.destructive || a.OpenWorldHint == nil || *a.OpenWorldHint != tt.openWorl {
					t.Errorf("%s annotations %+v: want readOnly %v, destructive %v, openWorld %v", tt.tool.Name, a, tt.readOnly, tt.destructive, tt.openWorl)
				}
			}
			if !strings.Contains(stripe.Description, "test/stripe@1.0.0") || !strings.Contains(stripe.Description, "may connect to api.stripe.com") {
				t.Errorf("stripe's description %q: want the module and what it may reach", stripe.Description)
			}
			if !strings.Contains(writer.Description, "may write "+w.writable+"/**") {
				t.Errorf("writer's description %q", writer.Description)
			}

			r := call(t, cs, "stripe__run", actions(probe.HTTP("GET", "https://api.stripe.com/")))
			if r.IsError || !strings.Contains(text(r), "hello from stripe") {
				t.Errorf("allowed call: isError %v, %q", r.IsError, text(r))
			}

			groqBefore := w.groq.Accepted()
			r = call(t, cs, "stripe__run", actions(probe.HTTP("GET", "https://api.groq.com/"), probe.Panic("gave up")))
			msg := text(r)
			if !r.IsError || !strings.HasPrefix(msg, `denied by the sandbox: module test/stripe (network): "api.groq.com:443" is not in its allowlist (api.stripe.com)`) {
				t.Errorf("denied call: isError %v, %q; want module, capability, target and reason", r.IsError, msg)
			}
			if n := w.groq.Accepted(); n != groqBefore {
				t.Errorf("api.groq.com accepted %d connections during a denied call", n-groqBefore)
			}

			r = call(t, cs, "spin__run", actions(probe.Loop()))
			if !r.IsError || !strings.Contains(text(r), "timeout") {
				t.Errorf("runaway call: isError %v, %q; want a timeout", r.IsError, text(r))
			}

			r = call(t, cs, "stripe__run", map[string]any{"actions": 7})
			if !r.IsError || !strings.Contains(text(r), "input_schema") {
				t.Errorf("arguments against the schema: isError %v, %q", r.IsError, text(r))
			}

			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nobody__none", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "nobody__none") {
				t.Errorf("unknown tool: %v, want a protocol error naming it", err)
			}

			// The audit tool shows the denial, traced to this client.
			r = call(t, cs, mcpserver.AuditTool, map[string]any{"module": stripeMod, "denied_only": true})
			var audit mcpserver.AuditResult
			if err := json.Unmarshal([]byte(text(r)), &audit); err != nil {
				t.Fatalf("audit result %q: %v", text(r), err)
			}
			found := false
			for _, d := range audit.Decisions {
				if d.Target == "api.groq.com:443" && strings.HasPrefix(d.Trace, "mcp/claude-test-"+name+"/") && !d.Allowed {
					found = true
				}
			}
			if !found {
				t.Errorf("the denial is not in the audit log with this client's trace: %+v", audit.Decisions)
			}

			r = call(t, cs, mcpserver.ModulesTool, map[string]any{})
			var mods mcpserver.ModulesResult
			if err := json.Unmarshal([]byte(text(r)), &mods); err != nil || len(mods.Modules) != 4 {
				t.Errorf("station_modules: %q, %v", text(r), err)
			}

			// Still serving.
			if r := call(t, cs, "pure__run", actions(probe.Output(3))); r.IsError {
				t.Errorf("a call after all that: %q", text(r))
			}
		})
	}
}

// TestListChanged: a module installed, upgraded or removed by another
// process while a client is connected reaches it as
// notifications/tools/list_changed, and the new list has it.
func TestListChanged(t *testing.T) {
	w := newWorld(t)
	for name, tr := range transports(t, w) {
		t.Run(name, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			cs := connect(t, tr(), "watcher", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				changed <- struct{}{}
			}})
			other := open(t, w.home) // another process's station
			id := "test/late-" + name
			w.install(t, other, id, "1.0.0", "", probe.Wasm(t, probe.NoNetworkTag))
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no tools/list_changed within 10 s of an install")
			}
			tool := "late-" + name + "__run"
			fixture.Eventuallyf(t, 10*time.Second, func() bool {
				list, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					return false
				}
				for _, t := range list.Tools {
					if t.Name == tool {
						return true
					}
				}
				return false
			}, "the installed module's tool %s in the list", tool)
			if r := call(t, cs, tool, actions(probe.Output(1))); r.IsError {
				t.Errorf("the new tool: %q", text(r))
			}
		})
	}
}

// TestConcurrentClients: 50 calls at once from two clients across three
// modules with different policies: every decision is the calling module's,
// about what that call asked for, under the calling client's trace.
func TestConcurrentClients(t *testing.T) {
	w := newWorld(t)
	tr := transports(t, w)["http"]
	clients := map[string]*mcp.ClientSession{"alpha": connect(t, tr(), "alpha", nil), "beta": connect(t, tr(), "beta", nil)}
	type ask struct{ client, module, target string }
	var mu sync.Mutex
	asked := map[ask]bool{}
	var wg sync.WaitGroup
	for i := range 50 {
		client := []string{"alpha", "beta"}[i%2]
		cs := clients[client]
		wg.Go(func() {
			tag := fmt.Sprintf("call-%d", i)
			var tool string
			var a ask
			var args json.RawMessage
			switch i % 3 {
			case 0:
				tool, a = "stripe__run", ask{client, stripeMod, "api.stripe.com:443"}
				args = actions(probe.HTTP("GET", "https://api.stripe.com/"+tag))
			case 1:
				path := filepath.Join(w.writable, tag)
				tool, a = "writer__run", ask{client, writerMod, path}
				args = actions(probe.Action{Op: probe.OpWrite, Path: path, Data: tag})
			case 2:
				tool, a = "pure__run", ask{client, pureMod, ""}
				args = actions(probe.Output(len(tag)))
			}
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil || r.IsError {
				t.Errorf("%s %s: %v %+v", client, tool, err, r)
				return
			}
			if a.module == writerMod {
				if b, err := os.ReadFile(a.target); err != nil || string(b) != tag {
					t.Errorf("%s: the file %s holds %q, %v", tag, a.target, b, err)
				}
			}
			mu.Lock()
			asked[a] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	r := call(t, clients["alpha"], mcpserver.AuditTool, map[string]any{"limit": 500})
	var audit mcpserver.AuditResult
	if err := json.Unmarshal([]byte(text(r)), &audit); err != nil {
		t.Fatal(err)
	}
	seen := map[ask]bool{}
	for _, d := range audit.Decisions {
		parts := strings.Split(d.Trace, "/")
		if len(parts) != 3 || parts[0] != "mcp" {
			continue
		}
		k := ask{parts[1], d.Module, d.Target}
		if d.Module == stripeMod && strings.HasPrefix(d.Target, "api.stripe.com:443 (") {
			k.target = "api.stripe.com:443" // the connect, with the address dialed
		}
		if d.Module == writerMod && !asked[k] {
			// a write's decisions may name the directory it opens
			k.target = ""
			for a := range asked {
				if a.client == k.client && a.module == writerMod && strings.HasPrefix(a.target, d.Target) {
					k.target = a.target
				}
			}
		}
		if !asked[k] || !d.Allowed {
			t.Errorf("decision %+v: no call of %s asked %s of %s, or it was refused", d, k.client, d.Target, d.Module)
		}
		seen[k] = true
	}
	for a := range asked {
		if a.module != pureMod && !seen[a] {
			t.Errorf("%s's call of %s on %s left no decision under its trace", a.client, a.module, a.target)
		}
	}
}

// TestHTTPAttacks: /mcp is the daemon's: without the token, from a web
// page (Origin), or through another host name (DNS rebinding) it answers
// nothing of MCP; malformed and oversized messages get protocol errors and
// the server keeps serving.
func TestHTTPAttacks(t *testing.T) {
	w := newWorld(t)
	addr, token := w.serveHTTP(t, mcpserver.Options{})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	post := func(body string, hdr map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", "http://"+addr+daemon.MCPPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	auth := "Bearer " + token
	for _, tt := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"a wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"from a web page", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"from the daemon's own origin, in a browser", map[string]string{"Authorization": auth, "Origin": "http://" + addr}, http.StatusForbidden},
		{"a cross-site fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"DNS rebinding", map[string]string{"Authorization": auth, "Host": "evil.example:" + strings.Split(addr, ":")[1]}, http.StatusForbidden},
	} {
		if resp, body := post(init, tt.hdr); resp.StatusCode != tt.want || strings.Contains(body, "protocolVersion") {
			t.Errorf("%s: %d %s; want %d and no MCP answer", tt.name, resp.StatusCode, body, tt.want)
		}
	}
	for _, tt := range []struct{ name, body string }{
		{"not JSON", "{nope"},
		{"not JSON-RPC", `{"hello":"world"}`},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", daemon.MaxRequestBytes) + `"}}`},
	} {
		if resp, body := post(tt.body, map[string]string{"Authorization": auth}); resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: %d %.200s; want a 4xx protocol error", tt.name, resp.StatusCode, body)
		}
	}
	if resp, body := post(init, map[string]string{"Authorization": auth}); resp.StatusCode != http.StatusOK || !strings.Contains(body, "protocolVersion") {
		t.Errorf("a good initialize after the attacks: %d %s", resp.StatusCode, body)
	}
}

// TestStdioMalformedMessages: over stdio, a line that is not JSON-RPC gets a
// protocol error and the server goes on answering.
func TestStdioMalformedMessages(t *testing.T) {
	w := newWorld(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envStdio+"="+w.home)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		dec := json.NewDecoder(out)
		for {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				close(lines)
				return
			}
			lines <- string(v)
		}
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the server ended before %s", what)
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("no answer for %s", what)
		}
		return ""
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	if l := next("initialize"); !strings.Contains(l, "protocolVersion") {
		t.Fatalf("initialize: %s", l)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`+"\n")
	if l := next("an unknown method"); !strings.Contains(l, `"error"`) || !strings.Contains(l, `"id":2`) {
		t.Errorf("an unknown method: %s", l)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pure__run","arguments":"not an object"}}`+"\n")
	if l := next("arguments that are not an object"); !strings.Contains(l, `"id":3`) || !(strings.Contains(l, `"error"`) || strings.Contains(l, `"isError":true`)) {
		t.Errorf("arguments that are not an object: %s", l)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`+"\n")
	if l := next("tools/list after the bad messages"); !strings.Contains(l, "pure__run") {
		t.Errorf("tools/list after the bad messages: %s", l)
	}
}

// TestUpgradesAndRemovals: an upgrade another process approved changes the
// tool (its version in the description) and tells the client; an upgrade
// that asks for more and is not approved changes nothing — the client goes
// on seeing, and calling, the version that is installed; a removal takes the
// tool away.
func TestUpgradesAndRemovals(t *testing.T) {
	w := newWorld(t)
	addr, token := w.serveHTTP(t, mcpserver.Options{Poll: 50 * time.Millisecond})
	changed := make(chan struct{}, 16)
	cs := connect(t, httpTransport(addr, token),
		"upgrader", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	describe := func() string {
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			if tool.Name == "pure__run" {
				return tool.Description
			}
		}
		return ""
	}
	waitChanged := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("no tools/list_changed within 10 s of %s", what)
		}
	}
	other := open(t, w.home)
	w.install(t, other, pureMod, "1.1.0", "", probe.Wasm(t, probe.NoNetworkTag))
	waitChanged("an upgrade")
	fixture.Eventuallyf(t, 5*time.Second, func() bool { return strings.Contains(describe(), "test/pure@1.1.0") }, "the upgraded version in the tool")

	// An escalating upgrade, declined (as a held team change would be):
	// nothing changes.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte("id: test/pure\nversion: \"2.0.0\"\nwasm: module.wasm\ncommands: [{name: run}]\nrequires: {network: {allow: [api.groq.com]}}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600)
	if _, err := other.Install(context.Background(), dir, func(p station.Plan) (bool, error) { return false, nil }); err == nil {
		t.Fatal("a declined upgrade installed")
	}
	select {
	case <-changed:
		t.Error("tools/list_changed after a declined upgrade")
	case <-time.After(500 * time.Millisecond):
	}
	if d := describe(); !strings.Contains(d, "test/pure@1.1.0") || strings.Contains(d, "groq") {
		t.Errorf("after a declined upgrade the tool says %q; want the installed 1.1.0", d)
	}
	if r := call(t, cs, "pure__run", actions(probe.Output(2))); r.IsError {
		t.Errorf("the installed version: %q", text(r))
	}

	if err := other.Remove(context.Background(), pureMod); err != nil {
		t.Fatal(err)
	}
	waitChanged("a removal")
	fixture.Eventuallyf(t, 5*time.Second, func() bool { return describe() == "" }, "the removed module's tool gone")
}

// TestExpose: only the modules the operator exposes are tools, listed by
// station_modules, or in station_audit's answers.
func TestExpose(t *testing.T) {
	w := newWorld(t)
	addr, token := w.serveHTTP(t, mcpserver.Options{Expose: []string{pureMod}})
	cs := connect(t, httpTransport(addr, token), "narrow", nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "pure__run,station_audit,station_modules" {
		t.Errorf("tools %v; want pure's and the station's only", names)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "stripe__run", Arguments: actions()}); err == nil {
		t.Error("a module not exposed was callable")
	}
	r := call(t, cs, mcpserver.ModulesTool, map[string]any{})
	if strings.Contains(text(r), stripeMod) || !strings.Contains(text(r), pureMod) {
		t.Errorf("station_modules: %s", text(r))
	}
	if _, err := w.st.Run(context.Background(), stripeMod, probe.Command, probe.Run(probe.HTTP("GET", "https://api.groq.com/"))); err != nil {
		t.Fatal(err)
	}
	if r := call(t, cs, mcpserver.AuditTool, map[string]any{"module": stripeMod}); !r.IsError {
		t.Errorf("station_audit of a module not exposed: %s", text(r))
	}
	r = call(t, cs, mcpserver.AuditTool, map[string]any{})
	if strings.Contains(text(r), stripeMod) {
		t.Errorf("station_audit shows a module not exposed: %s", text(r))
	}
}

// TestWorkflowTools: a workflow in STATION_HOME/workflows is the tool
// workflow__NAME with its declared inputs as the schema; a run goes through
// the engine (its steps through the module's sandbox); a workflow that uses
// a module not exposed is no tool.
func TestWorkflowTools(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.home, mcpserver.WorkflowDir)
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "echo-twice.yaml"), []byte(`description: Runs the pure probe twice
inputs:
  bytes: {type: integer, required: true, description: how many bytes each step returns}
  label: {type: string, default: x}
steps:
  - id: one
    uses: test/pure run
    with: {actions: [{op: output, bytes: "${{ inputs.bytes }}"}]}
  - id: two
    uses: test/pure run
    needs: [one]
    with: {actions: [{op: output, bytes: 1}]}
`), 0o600)
	os.WriteFile(filepath.Join(dir, "reach.yaml"), []byte("steps:\n  - id: a\n    uses: test/stripe run\n    with: {actions: []}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("steps: [\n"), 0o600)
	wfs, err := workflow.NewService(context.Background(), w.st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	addr, token := w.serveHTTP(t, mcpserver.Options{Expose: []string{pureMod}, Workflows: wfs})
	cs := connect(t, httpTransport(addr, token), "wf", nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tool *mcp.Tool
	for _, tl := range list.Tools {
		switch tl.Name {
		case "workflow__echo_twice":
			tool = tl
		case "workflow__reach", "workflow__broken":
			t.Errorf("%s is a tool: it uses a module not exposed, or does not load", tl.Name)
		}
	}
	if tool == nil {
		t.Fatalf("no workflow__echo_twice in %v", list.Tools)
	}
	b, _ := json.Marshal(tool.InputSchema)
	if !strings.Contains(string(b), `"required":["bytes"]`) || !strings.Contains(string(b), `"bytes":{"description":"how many bytes each step returns","type":"integer"}`) {
		t.Errorf("the workflow's input schema %s", b)
	}
	if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
		t.Errorf("a workflow of a module that may do nothing: annotations %+v", tool.Annotations)
	}
	r := call(t, cs, "workflow__echo_twice", map[string]any{"bytes": 3})
	if r.IsError || !strings.Contains(text(r), `"status":"succeeded"`) {
		t.Errorf("a workflow run: %q", text(r))
	}
	if r := call(t, cs, "workflow__echo_twice", map[string]any{}); !r.IsError || !strings.Contains(text(r), "bytes") {
		t.Errorf("a run without its required input: %q", text(r))
	}
}

// TestOutputSchema: a command that declares an output schema is a tool with
// that outputSchema; a result that matches it is structured content too,
// one that does not is an error result — a client may trust what it gets.
func TestOutputSchema(t *testing.T) {
	w := newWorld(t)
	w.install(t, w.st, "test/typed", "1.0.0", "    output_schema:\n      type: object\n      properties: {results: {type: array}}\n      required: [results]\n", probe.Wasm(t, probe.NoNetworkTag))
	w.install(t, w.st, "test/liar", "1.0.0", "    output_schema:\n      type: object\n      required: [invoice_id]\n", probe.Wasm(t, probe.NoNetworkTag))
	addr, token := w.serveHTTP(t, mcpserver.Options{})
	cs := connect(t, httpTransport(addr, token), "typed", nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name == "typed__run" {
			if b, _ := json.Marshal(tl.OutputSchema); !strings.Contains(string(b), `"required":["results"]`) {
				t.Errorf("typed's output schema %s", b)
			}
		}
	}
	r := call(t, cs, "typed__run", actions(probe.Output(2)))
	if r.IsError || r.StructuredContent == nil {
		t.Errorf("a matching result: isError %v, structured %v, %q", r.IsError, r.StructuredContent, text(r))
	}
	r = call(t, cs, "liar__run", actions(probe.Output(2)))
	if !r.IsError || !strings.Contains(text(r), "does not match its output_schema") || r.StructuredContent != nil {
		t.Errorf("a result against the schema: isError %v, %q", r.IsError, text(r))
	}
}

// TestDaemonStopsWithClientsConnected: a client holding its event stream
// open does not keep the daemon from stopping for the whole grace period.
func TestDaemonStopsWithClientsConnected(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := mcpserver.New(ctx, w.st, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(daemon.Options{Station: w.st, Version: "test", MCP: srv.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := daemon.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, ln, time.Minute) }()
	cs := connect(t, httpTransport(ln.Addr().String(), d.Token()), "lingering", nil)
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the client's standalone event stream is open
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("daemon: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon still waits for a connected MCP client 10 s after it was told to stop (its grace is a minute)")
	}
}
