// Package mcpserver is the station's MCP server (docs/mcp.md): every
// command of every installed module the operator exposes is a tool any MCP
// client can call — Claude Desktop, VS Code, Cursor, Goose — with the same
// confinement, approvals and audit as `station run`.
//
// It is one more caller of the station's single dispatch entry point,
// Station.Run: a tool call is a module call, under the module's deadline and
// limits, audited with the MCP client's name and session as its trace.
// Nothing here decides what a module may do; a sandbox denial comes back to
// the client as a tool result with isError set, naming the module, the
// capability, the target and the reason, so the model can read it.
//
// The protocol is the official MCP Go SDK's (github.com/modelcontextprotocol/go-sdk):
// stdio for `station mcp`, streamable HTTP for the daemon's /mcp. The tool
// list follows the store: installs, upgrades and removals made while a
// client is connected — by this process or another — reach it as
// notifications/tools/list_changed.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
	"github.com/station-dev/station/manifest"
)

// Options configure a Server.
type Options struct {
	// Expose lists the module ids whose commands are tools; nil means every
	// installed module (config mcp.expose; `station mcp --module`).
	Expose []string
	// Version is the station's version, sent as the server's.
	Version string
	// Logger receives the server's own events (tool list changes, a failed
	// read of the store). Nil: discard.
	Logger *slog.Logger
	// Poll is how often the installed modules are read again for changes
	// made by other processes (default DefaultPoll).
	Poll time.Duration
	// Workflows, if set, runs the workflows that are tools (workflows.go);
	// nil: no workflow is a tool.
	Workflows *workflow.Service
}

// DefaultPoll is how often a Server looks for modules installed, upgraded
// or removed by another process.
const DefaultPoll = time.Second

// Server is the MCP server over one station.
type Server struct {
	st   *station.Station
	mcp  *mcp.Server
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	tools   map[string]toolKey // the module tools registered, by tool name
	refused map[toolKey]bool   // tools left out (the SDK refused them, or a name was taken), logged once

	parsedMu  sync.Mutex
	parsed    map[string]*manifest.Manifest // the stored manifests, parsed, by module copy
	workflows map[string]*workflow.Workflow // the workflow files, loaded (nil: did not load), by version

	sessions atomic.Int64 // numbers the sessions that have no id of their own (stdio)
	names    sync.Map     // *mcp.ServerSession without an id of its own → "stdio-N"
}

// toolKey is what a module tool was made from: when any of it changes the
// tool is made again.
type toolKey struct {
	module, version, digest, command string
	def                              string // the tool's definition as JSON
}

// New builds a server over st and registers the tools of the installed
// modules.
func New(ctx context.Context, st *station.Station, o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{st: st, opts: o, log: o.Logger, tools: map[string]toolKey{}, refused: map[toolKey]bool{}, parsed: map[string]*manifest.Manifest{}, workflows: map[string]*workflow.Workflow{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "station", Title: "Station", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Each tool is a command of a module installed in this Station. Every call runs confined to what the module's manifest declares and the operator approved: a tool result with isError says what was denied and why.",
		Logger:       o.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.addStationTools()
	if err := s.Sync(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// MCP returns the SDK server, for a transport to serve.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Handler returns the streamable HTTP handler of the server (the daemon
// mounts it at /mcp behind its own checks of Host, Origin and token).
// Every session shares the one tool list. Its CloseSessions ends every
// session, and with them the event streams clients hold open: the daemon
// calls it before it shuts its listener down, which would otherwise wait
// for those streams.
func (s *Server) Handler() *HTTPHandler {
	return &HTTPHandler{s: s, h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxRequestBytes,
		// A client that went away without ending its session (a crash,
		// a laptop closed) does not keep it for ever.
		SessionTimeout: SessionTimeout,
	})}
}

// HTTPHandler is the server's streamable HTTP transport (Handler).
type HTTPHandler struct {
	s *Server
	h *mcp.StreamableHTTPHandler
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// CloseSessions ends every session of the server.
func (h *HTTPHandler) CloseSessions() {
	for ss := range h.s.mcp.Sessions() {
		ss.Close()
	}
}

// SessionTimeout is how long an HTTP session may stay without a request
// before the server ends it; the client then starts a new one, as MCP says.
const SessionTimeout = 30 * time.Minute

// MaxRequestBytes bounds one MCP message, on either transport: a tool's
// arguments are a module's input, which the daemon bounds the same way.
const MaxRequestBytes = 16 << 20

// Serve runs the server on t until ctx ends or the client disconnects,
// following the installed modules meanwhile.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	return s.mcp.Run(ctx, t)
}

// Watch reads the installed modules every Options.Poll until ctx ends, and
// updates the tools (and so tells connected clients) when they changed.
func (s *Server) Watch(ctx context.Context) {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("mcp: read the installed modules", "err", err)
		}
	}
}

// Sync makes the module tools what the store holds now: a tool per command
// of each exposed module, as its installed (approved) version declares it.
// The SDK tells connected clients when the list changed. An upgrade that
// waits for the operator's approval is not installed yet, so its module's
// tools stay those of the version that is.
func (s *Server) Sync(ctx context.Context) error {
	exposed, err := s.exposedModules(ctx)
	if err != nil {
		return err
	}
	want := map[string]moduleTool{}
	names := toolNames(exposed, s.manifests(exposed))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range append(names, s.workflowTools(ctx)...) {
		if _, dup := want[t.name]; dup {
			if !s.refused[t.key] {
				s.refused[t.key] = true
				s.log.Warn("mcp: two tools would have one name; the second is left out", "tool", t.name, "module", t.key.module)
			}
			continue
		}
		want[t.name] = t
	}

	var stale []string
	for name, k := range s.tools {
		if t, ok := want[name]; !ok || t.key != k {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		s.mcp.RemoveTools(stale...)
		for _, name := range stale {
			delete(s.tools, name)
		}
	}
	added := 0
	for name, t := range want {
		if _, ok := s.tools[name]; ok {
			continue
		}
		h := s.callModule(t)
		if t.workflow != nil {
			h = s.callWorkflow(t)
		}
		if err := s.addTool(t.tool, h); err != nil {
			if !s.refused[t.key] {
				s.refused[t.key] = true
				s.log.Warn("mcp: a tool the SDK refused is left out", "tool", name, "module", t.key.module, "err", err)
			}
			continue
		}
		s.tools[name] = t.key
		added++
	}
	if len(stale) > 0 || added > 0 {
		s.log.Info("mcp: tools changed", "tools", len(s.tools), "added", added, "removed or replaced", len(stale))
	}
	return nil
}

// addTool adds t, turning the SDK's panic on a tool it finds invalid into
// an error: a module's tool must never take the server down.
func (s *Server) addTool(t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.mcp.AddTool(t, h)
	return nil
}

// manifests parses the stored manifest of each module (nil where it does
// not parse: Run will say why when its tools are called). A manifest is
// parsed once per installed copy (Sync runs every second).
func (s *Server) manifests(mods []store.Module) []*manifest.Manifest {
	s.parsedMu.Lock()
	defer s.parsedMu.Unlock()
	seen := map[string]bool{}
	out := make([]*manifest.Manifest, len(mods))
	for i, m := range mods {
		key := m.ID + "\x00" + m.Version + "\x00" + m.Digest + "\x00" + string(m.Manifest)
		seen[key] = true
		man, ok := s.parsed[key]
		if !ok {
			var err error
			if man, err = s.st.ParseManifest(m.ID+"/"+manifest.FileName, m.Manifest); err != nil {
				s.log.Warn("mcp: a stored manifest does not parse; its module has no tools", "module", m.ID, "err", err)
				man = nil
			}
			s.parsed[key] = man
		}
		out[i] = man
	}
	for k := range s.parsed {
		if !seen[k] {
			delete(s.parsed, k)
		}
	}
	return out
}

// traceOf names the caller of a tool call for the audit log:
// "mcp/CLIENT/SESSION", from the name the client gave when it connected
// (sanitized: it is the client's to choose) and the session's id — over
// stdio, which has none, "stdio-N" for the process's Nth session.
func (s *Server) traceOf(ss *mcp.ServerSession) string {
	if ss == nil {
		return "mcp"
	}
	client := "client"
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		client = p.ClientInfo.Name
	}
	client = strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, sandbox.SanitizeLimit(client, 64))
	id := ss.ID()
	switch {
	case id == "":
		// Numbered once per session; a stdio server has one or a few,
		// so the map stays small (HTTP sessions have ids of their own).
		v, ok := s.names.Load(ss)
		if !ok {
			v, _ = s.names.LoadOrStore(ss, fmt.Sprintf("stdio-%d", s.sessions.Add(1)))
		}
		id = v.(string)
	case len(id) > 16:
		id = id[:16]
	}
	return "mcp/" + client + "/" + id
}

// callModule returns the handler of a module tool: one call of the
// module's command through Station.Run, its errors as tool results.
func (s *Server) callModule(t moduleTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		input := []byte(req.Params.Arguments)
		if len(input) == 0 || string(input) == "null" {
			input = []byte("{}")
		}
		if !isObject(input) {
			return errorResult("invalid arguments: a tool's arguments are a JSON object (its input schema says which members)"), nil
		}
		ctx = sandbox.WithTrace(ctx, s.traceOf(req.Session))
		out, err := s.st.Run(ctx, t.key.module, t.key.command, input)
		if err != nil {
			return failure(t, err), nil
		}
		return success(t, out), nil
	}
}

// success is the result of a call that returned out: the JSON as text and,
// when the command declares an output schema, as structured content —
// checked against it, since a client may trust what matches.
func success(t moduleTool, out []byte) *mcp.CallToolResult {
	if len(out) == 0 {
		out = []byte("null")
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}
	if t.output == nil {
		return res
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return errorResult(fmt.Sprintf("module %s: %s: its result is not JSON (%v), so it cannot match its output_schema", t.key.module, t.key.command, err))
	}
	if err := t.output.Validate(v); err != nil {
		return errorResult(fmt.Sprintf("module %s: %s: its result does not match its output_schema: %s", t.key.module, t.key.command, sandbox.SanitizeLimit(err.Error(), 1024)))
	}
	res.StructuredContent = json.RawMessage(out)
	return res
}

// failure is the result of a call that failed: isError, with a text the
// model can read and explain — for a denial the module, the capability,
// the target and the reason.
func failure(t moduleTool, err error) *mcp.CallToolResult {
	var v *sandbox.Violation
	var ce *host.CallError
	switch {
	case errors.As(err, &v):
		return errorResult(fmt.Sprintf("denied by the sandbox: module %s (%s): %q %s. The operator approved only what the module's manifest declares; retrying will not help.", v.Module, v.Capability, v.Target, strings.TrimSuffix(v.Reason, ".")))
	case errors.As(err, &ce) && ce.Kind == host.KindTimeout:
		return errorResult(err.Error() + " (the module's limits.timeout ended the call)")
	case errors.As(err, &ce) && ce.Kind == host.KindInput:
		return errorResult("invalid arguments: " + err.Error())
	}
	return errorResult(err.Error())
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// isObject reports whether data is a JSON object (after white space).
func isObject(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
