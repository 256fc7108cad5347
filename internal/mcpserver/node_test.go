package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/mcpserver"
	"github.com/station-dev/station/internal/probe"
)

// envRequireNode set to 1 makes a machine without Node.js and npm fail the
// TypeScript client test instead of skipping it (CI sets it).
const envRequireNode = "STATION_REQUIRE_NODE"

// nodeDir is the npm project of the TypeScript client: the official MCP
// TypeScript SDK at the version package-lock.json pins, and client.mjs.
const nodeDir = "testdata/node"

// minNode is the oldest Node.js major version the pinned SDK supports (its
// package.json's engines).
const minNode = 18

// npmTimeout bounds the install of the pinned dependencies.
const npmTimeout = 5 * time.Minute

// TestTypeScriptClient: the official MCP TypeScript SDK's client, written
// and maintained apart from the Go SDK the server is built on, sees the
// same server over both transports. Over stdio it starts the test binary as
// `station mcp` itself, with only the environment a desktop client passes
// on (the SDK's few inherited variables and the server entry's env); over
// HTTP it reaches the daemon's /mcp with the daemon's token. It lists the
// tools, with the manifest's schema and the annotations of each module's
// approval, calls one that succeeds and one the sandbox denies, and closes
// the way the SDK closes.
func TestTypeScriptClient(t *testing.T) {
	node, npm := nodeTools(t)
	dir := installNodeModules(t, npm)
	w := newWorld(t)
	addr, token := w.serveHTTP(t, mcpserver.Options{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serverEnv, _ := json.Marshal(map[string]string{envStdio: w.home})
	calls, _ := json.Marshal([]map[string]any{
		{"name": "stripe__run", "arguments": actions(probe.HTTP("GET", "https://api.stripe.com/"))},
		{"name": "stripe__run", "arguments": actions(probe.HTTP("GET", "https://api.groq.com/"), probe.Panic("gave up"))},
	})
	for _, tt := range []struct {
		name string
		args []string
		env  []string
	}{
		{"stdio", []string{"stdio", exe, "-test.run=^$"}, []string{"MCP_SERVER_ENV=" + string(serverEnv)}},
		{"http", []string{"http", "http://" + addr + daemon.MCPPath}, []string{"MCP_TOKEN=" + token}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			groqBefore := w.groq.Accepted()
			saw := runClient(t, node, dir, tt.args, append(tt.env, "MCP_CALLS="+string(calls)))

			if saw.Server.Name != "station" {
				t.Errorf("server %+v: want station", saw.Server)
			}
			if !saw.Capabilities.Tools.ListChanged {
				t.Errorf("capabilities %+v: want tools.listChanged", saw.Capabilities)
			}
			tools := map[string]tsTool{}
			for _, tool := range saw.Tools {
				tools[tool.Name] = tool
			}
			for _, want := range []string{"stripe__run", "writer__run", "pure__run", mcpserver.ModulesTool, mcpserver.AuditTool} {
				if _, ok := tools[want]; !ok {
					t.Fatalf("no tool %s in %v", want, saw.Tools)
				}
			}
			checkStripeSchema(t, tools["stripe__run"].InputSchema)
			if s := string(tools["pure__run"].InputSchema); s != `{"type":"object"}` {
				t.Errorf("pure's input schema %s: want an open object", s)
			}
			for _, tt := range []struct {
				name                            string
				readOnly, destructive, openWorl bool
			}{{"stripe__run", false, false, true}, {"writer__run", false, true, false}, {"pure__run", true, false, false}} {
				a := tools[tt.name].Annotations
				if a == nil {
					t.Errorf("%s has no annotations", tt.name)
					continue
				}
				// Absent hints take the defaults MCP gives them.
				if hint(a.ReadOnlyHint, false) != tt.readOnly || hint(a.DestructiveHint, true) != tt.destructive || hint(a.OpenWorldHint, true) != tt.openWorl {
					t.Errorf("%s annotations %s: want readOnly %v, destructive %v, openWorld %v", tt.name, a, tt.readOnly, tt.destructive, tt.openWorl)
				}
			}
			if d := tools["stripe__run"].Description; !strings.Contains(d, "test/stripe@1.0.0") || !strings.Contains(d, "may connect to api.stripe.com") {
				t.Errorf("stripe's description %q: want the module and what it may reach", d)
			}

			if len(saw.Calls) != 2 {
				t.Fatalf("calls %+v: want the two asked", saw.Calls)
			}
			if c := saw.Calls[0]; c.Error != "" || c.IsError || !strings.Contains(c.Text, "hello from stripe") {
				t.Errorf("allowed call: %+v; want the fixture's answer", c)
			}
			if c := saw.Calls[1]; c.Error != "" || !c.IsError || !strings.Contains(c.Text, "test/stripe") || !strings.Contains(c.Text, "network") ||
				!strings.Contains(c.Text, `"api.groq.com:443"`) || !strings.Contains(c.Text, "allowlist") {
				t.Errorf("denied call: %+v; want isError naming module, capability, target and reason", c)
			}
			if n := w.groq.Accepted(); n != groqBefore {
				t.Errorf("api.groq.com accepted %d connections during a denied call", n-groqBefore)
			}

			switch tt.name {
			case "stdio":
				// The SDK ends the server's input, waits 2 s for it to
				// exit, then sends SIGTERM.
				if saw.CloseMS >= 1900 {
					t.Errorf("closing took %d ms: the server did not exit when its input ended", saw.CloseMS)
				}
			case "http":
				if saw.Terminated == nil || !*saw.Terminated {
					t.Errorf("terminated %v: the session was not ended with DELETE", saw.Terminated)
				}
			}
		})
	}
}

// tsResult is the line client.mjs prints.
type tsResult struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Capabilities struct {
		Tools struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	Tools []tsTool `json:"tools"`
	Calls []struct {
		Name    string `json:"name"`
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
		Error   string `json:"error"`
	} `json:"calls"`
	Terminated *bool `json:"terminated"`
	CloseMS    int   `json:"closeMs"`
}

// tsTool is a tool as the TypeScript client listed it.
type tsTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations *tsAnnotations  `json:"annotations"`
}

// tsAnnotations are a tool's annotations; nil is a hint left out.
type tsAnnotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    *bool  `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint"`
	OpenWorldHint   *bool  `json:"openWorldHint"`
}

func (a *tsAnnotations) String() string {
	b, _ := json.Marshal(a)
	return string(b)
}

// hint is the value of an annotation hint, def when it was left out.
func hint(h *bool, def bool) bool {
	if h == nil {
		return def
	}
	return *h
}

// checkStripeSchema checks that the stripe tool's input schema, as the
// TypeScript client decoded it, is the one its manifest declares.
func checkStripeSchema(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type     string `json:"type"`
			MaxItems int    `json:"maxItems"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("stripe's input schema %s: %v", raw, err)
	}
	if a := s.Properties["actions"]; s.Type != "object" || a.Type != "array" || a.MaxItems != 8 || len(s.Required) != 1 || s.Required[0] != "actions" {
		t.Errorf("stripe's input schema %s: want the manifest's", raw)
	}
}

// nodeTools finds node and npm, skipping the test when either is missing
// or Node.js is older than the SDK supports, or failing it when
// STATION_REQUIRE_NODE=1.
func nodeTools(t *testing.T) (node, npm string) {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		msg := why + "; the TypeScript client test needs Node.js " + strconv.Itoa(minNode) + " or later and npm on PATH (Debian: apt-get install nodejs npm)"
		if os.Getenv(envRequireNode) == "1" {
			t.Fatal(msg + "; " + envRequireNode + "=1 makes that a failure")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("no node")
	}
	npm, err = exec.LookPath("npm")
	if err != nil {
		missing("no npm")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		missing(node + " --version: " + err.Error())
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNode {
		missing(node + " is " + v)
	}
	return node, npm
}

// installNodeModules makes sure nodeDir/node_modules holds the locked
// dependencies and returns nodeDir's absolute path. It runs npm ci only
// when node_modules is missing or older than package-lock.json, and then in
// a fresh copy of the project whose node_modules is moved into place whole:
// a test binary running beside this one (another go test, another -count)
// never sees a half-made node_modules. Where two install at once into a
// missing node_modules, the first to finish wins and the other uses its
// install; replacing a stale one, the last to finish wins (both installed
// the same lock).
func installNodeModules(t *testing.T, npm string) string {
	t.Helper()
	dir, err := filepath.Abs(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	if nodeModulesFresh(t, dir) {
		return dir
	}
	tmp, err := os.MkdirTemp(dir, ".npm-ci-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json", ".npmrc"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of %s, after %v: %v\n%s\nTo install by hand: cd %s && npm ci --ignore-scripts",
			dir, time.Since(start).Round(time.Millisecond), err, out, dir)
	}
	t.Logf("npm ci: %v", time.Since(start).Round(time.Millisecond))
	nm := filepath.Join(dir, "node_modules")
	if _, err := os.Lstat(nm); err == nil && !nodeModulesFresh(t, dir) {
		if err := os.Rename(nm, filepath.Join(tmp, "stale-node_modules")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("moving the stale %s aside: %v", nm, err)
		}
	}
	if err := os.Rename(filepath.Join(tmp, "node_modules"), nm); err != nil && !nodeModulesFresh(t, dir) {
		t.Fatalf("putting the install in place: %v", err)
	}
	return dir
}

// nodeModulesFresh reports whether dir's node_modules was installed from
// its package-lock.json as it is now: npm writes node_modules/.package-lock.json
// last, so it is missing from an install that did not finish.
func nodeModulesFresh(t *testing.T, dir string) bool {
	t.Helper()
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	return err == nil && !installed.ModTime().Before(lock.ModTime())
}

// runClient runs client.mjs with args, the environment of the test and env,
// and decodes the line it prints.
func runClient(t *testing.T, node, dir string, args, env []string) tsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"client.mjs"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "MCP_TIMEOUT_MS=60000")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The server started over stdio writes to the same stderr: do not wait
	// on it for long should it outlive node.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("client.mjs %s saw: %s", args[0], bytes.TrimSpace(stdout.Bytes()))
	var r tsResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		t.Fatalf("client.mjs printed %q: %v\nstderr: %s", stdout.Bytes(), err, stderr.Bytes())
	}
	return r
}
