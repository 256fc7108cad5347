package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// The station's own tools: read-only views of what is installed and of the
// audit log, so a model can explain what a module may do and what it was
// refused. They read only what the exposed modules are and did.

// ModulesTool and AuditTool are the names of the station's own tools.
const (
	ModulesTool = "station_modules"
	AuditTool   = "station_audit"
)

// ModuleInfo is one installed module as station_modules lists it.
type ModuleInfo struct {
	ID          string              `json:"id"`
	Version     string              `json:"version"`
	Description string              `json:"description,omitempty"`
	Permissions station.Permissions `json:"permissions"`
	// Reach says in one line what the module may reach.
	Reach string `json:"reach"`
	// Tools are the names of its commands' tools.
	Tools []string `json:"tools"`
}

// ModulesResult is station_modules' result.
type ModulesResult struct {
	Modules []ModuleInfo `json:"modules"`
}

// AuditArgs are station_audit's arguments.
type AuditArgs struct {
	Module     string `json:"module,omitempty" jsonschema:"only this module's decisions (owner/slug)"`
	DeniedOnly bool   `json:"denied_only,omitempty" jsonschema:"only denials"`
	Trace      string `json:"trace,omitempty" jsonschema:"only decisions of calls with this trace, e.g. mcp/claude-ai/stdio-1"`
	Since      string `json:"since,omitempty" jsonschema:"only decisions at or after this RFC 3339 time"`
	Limit      int    `json:"limit,omitempty" jsonschema:"the most decisions returned, newest first kept (default 50, at most 500)"`
}

// AuditDecision is one decision as station_audit returns it.
type AuditDecision struct {
	Time       string `json:"time"`
	Module     string `json:"module"`
	Command    string `json:"command,omitempty"`
	Capability string `json:"capability"`
	Target     string `json:"target"`
	Allowed    bool   `json:"allowed"`
	Reason     string `json:"reason,omitempty"`
	Trace      string `json:"trace,omitempty"`
	Folded     int    `json:"folded,omitempty"`
}

// AuditResult is station_audit's result.
type AuditResult struct {
	Decisions []AuditDecision `json:"decisions"`
}

// Bounds of station_audit's limit.
const (
	defaultAuditLimit = 50
	maxAuditLimit     = 500
)

func (s *Server) addStationTools() {
	f, t := false, true
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        ModulesTool,
		Title:       "Station: installed modules",
		Description: "Lists the Station modules whose commands are tools here: version, the permissions the operator approved (hosts, write globs, programs), and their tools.",
		Annotations: &mcp.ToolAnnotations{Title: "Station: installed modules", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &f, OpenWorldHint: &f},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ModulesResult, error) {
		res, err := s.listModules(ctx)
		return nil, res, err
	})
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        AuditTool,
		Title:       "Station: audit log",
		Description: "Recent sandbox decisions (allowed and denied) of the modules exposed here, newest last: module, command, capability, target, reason, and the trace of the call (mcp/CLIENT/SESSION for tool calls).",
		Annotations: &mcp.ToolAnnotations{Title: "Station: audit log", ReadOnlyHint: true, DestructiveHint: &f, OpenWorldHint: &f, IdempotentHint: t},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, a AuditArgs) (*mcp.CallToolResult, AuditResult, error) {
		res, err := s.audit(ctx, a)
		return nil, res, err
	})
}

func (s *Server) exposed(id string) bool {
	return s.opts.Expose == nil || slices.Contains(s.opts.Expose, id)
}

func (s *Server) listModules(ctx context.Context) (ModulesResult, error) {
	exposed, err := s.exposedModules(ctx)
	if err != nil {
		return ModulesResult{}, err
	}
	mans := s.manifests(exposed)
	// The tools as clients see them: what Sync registered.
	tools := map[string][]string{}
	s.mu.Lock()
	for name, k := range s.tools {
		tools[k.module] = append(tools[k.module], name)
	}
	s.mu.Unlock()
	res := ModulesResult{Modules: []ModuleInfo{}}
	for i, m := range exposed {
		info := ModuleInfo{ID: m.ID, Version: m.Version, Tools: tools[m.ID]}
		slices.Sort(info.Tools)
		if info.Tools == nil {
			info.Tools = []string{}
		}
		json.Unmarshal(m.Approved, &info.Permissions)
		info.Reach = reach(info.Permissions)
		if mans[i] != nil {
			info.Description = mans[i].Description
		}
		res.Modules = append(res.Modules, info)
	}
	return res, nil
}

// exposedModules returns the installed modules MCP clients may see.
func (s *Server) exposedModules(ctx context.Context) ([]store.Module, error) {
	mods, err := s.st.Store.Modules(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(mods, func(m store.Module) bool { return !s.exposed(m.ID) }), nil
}

func (s *Server) audit(ctx context.Context, a AuditArgs) (AuditResult, error) {
	f := store.AuditFilter{Module: a.Module, DeniedOnly: a.DeniedOnly, Trace: a.Trace, Limit: a.Limit}
	switch {
	case f.Limit == 0:
		f.Limit = defaultAuditLimit
	case f.Limit < 0 || f.Limit > maxAuditLimit:
		return AuditResult{}, fmt.Errorf("limit: want 1 to %d", maxAuditLimit)
	}
	if a.Module != "" && !s.exposed(a.Module) {
		return AuditResult{}, fmt.Errorf("module %s is not exposed to MCP clients here", a.Module)
	}
	if a.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, a.Since)
		if err != nil {
			return AuditResult{}, fmt.Errorf("since: want an RFC 3339 time, e.g. 2026-12-02T10:00:00Z")
		}
		f.Since = t
	}
	if err := s.st.Audit.Flush(ctx); err != nil {
		s.log.Warn("mcp: audit flush", "err", err)
	}
	want := f.Limit
	if s.opts.Expose != nil && a.Module == "" {
		f.Limit = maxAuditLimit // filtered below to the exposed modules
	}
	recs, err := s.st.Store.Audit(ctx, f)
	if err != nil {
		return AuditResult{}, err
	}
	res := AuditResult{Decisions: []AuditDecision{}}
	for _, r := range recs {
		if !s.exposed(r.Module) {
			continue
		}
		res.Decisions = append(res.Decisions, AuditDecision{Time: r.Time.UTC().Format(time.RFC3339Nano), Module: r.Module, Command: r.Command,
			Capability: string(r.Capability), Target: r.Target, Allowed: r.Allowed, Reason: r.Reason, Trace: r.Trace, Folded: r.Folded})
	}
	if n := len(res.Decisions) - want; n > 0 {
		res.Decisions = res.Decisions[n:] // the newest want
	}
	return res, nil
}
