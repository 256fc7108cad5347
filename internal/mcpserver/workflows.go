package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/workflow"
)

// Workflows are tools too: each workflow file of the station's own
// (STATION_HOME/workflows/NAME.yaml) and each a team synced here
// (STATION_HOME/teams/TEAM/workflows/NAME.yaml) is the tool workflow__NAME
// (workflow__TEAM__NAME for a team's), whose input schema is the
// workflow's declared inputs. A run goes through the workflow engine, whose
// module steps go through Station.Run like any call. A workflow is a tool
// only when every module it uses is exposed.

// WorkflowDir is where the operator's own workflows are read from, under
// the station home.
const WorkflowDir = "workflows"

// maxWorkflows bounds how many workflow files a directory may contribute.
const maxWorkflows = 256

// workflowFiles lists the workflow files and the tool name each gets.
func (s *Server) workflowFiles() map[string]string {
	out := map[string]string{}
	add := func(dir, prefix string) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		sort.Strings(files)
		if len(files) > maxWorkflows {
			s.log.Warn("mcp: too many workflow files; the first ones are tools", "dir", dir, "files", len(files), "max", maxWorkflows)
			files = files[:maxWorkflows]
		}
		for _, f := range files {
			name := toolSafe(strings.TrimSuffix(filepath.Base(f), ".yaml"))
			tool := toolName("workflow", "workflow/"+prefix+name, prefix+name)
			if other, dup := out[tool]; dup {
				// The operator's own come first and stay.
				s.log.Warn("mcp: two workflow files would be one tool; the first is kept", "tool", tool, "kept", other, "left out", f)
				continue
			}
			out[tool] = f
		}
	}
	add(filepath.Join(s.st.Home, WorkflowDir), "")
	teams, _ := os.ReadDir(filepath.Join(s.st.Home, "teams"))
	for _, t := range teams {
		if t.IsDir() {
			add(hubsync.WorkflowDir(s.st.Home, t.Name()), toolSafe(t.Name())+"__")
		}
	}
	return out
}

var unsafeTool = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// toolSafe replaces what a tool name may not hold.
func toolSafe(s string) string { return unsafeTool.ReplaceAllString(s, "_") }

// workflowTools makes the tools of the workflow files that load and whose
// modules are all exposed.
func (s *Server) workflowTools(ctx context.Context) []moduleTool {
	if s.opts.Workflows == nil {
		return nil
	}
	var out []moduleTool
	for name, file := range s.workflowFiles() {
		wf, ok := s.loadWorkflow(file)
		if !ok {
			continue
		}
		perms, ok := s.workflowPermissions(ctx, wf)
		if !ok {
			continue
		}
		out = append(out, newWorkflowTool(name, wf, perms))
	}
	return out
}

// workflowPermissions is the union of what the modules wf uses may do, or
// false when one of them is not exposed or not installed.
func (s *Server) workflowPermissions(ctx context.Context, wf *workflow.Workflow) (station.Permissions, bool) {
	var all station.Permissions
	seen := map[string]bool{}
	for _, st := range wf.Steps {
		if st.Builtin == workflow.BuiltinLLM {
			all.LLM = &station.LLMPermission{} // its inputs go to the provider
		}
		if st.Module == "" || seen[st.Module] {
			continue
		}
		seen[st.Module] = true
		if !s.exposed(st.Module) {
			return all, false
		}
		m, err := s.st.Store.Module(ctx, st.Module)
		if err != nil {
			return all, false
		}
		var p station.Permissions
		json.Unmarshal(m.Approved, &p)
		all.Network = append(all.Network, p.Network...)
		all.FilesystemWrites = append(all.FilesystemWrites, p.FilesystemWrites...)
		all.FilesystemReads = append(all.FilesystemReads, p.FilesystemReads...)
		all.Programs = append(all.Programs, p.Programs...)
		if p.StartsPrograms() {
			all.Subprocess = p.Subprocess
		}
		if p.LLM != nil {
			all.LLM = p.LLM
		}
	}
	return all, true
}

func newWorkflowTool(name string, wf *workflow.Workflow, p station.Permissions) moduleTool {
	props := map[string]any{}
	required := []string{}
	for _, in := range wf.Inputs {
		prop := map[string]any{}
		if in.Type != workflow.TypeAny {
			prop["type"] = in.Type
		}
		if in.Description != "" {
			prop["description"] = in.Description
		}
		if in.HasDefault {
			prop["default"] = in.Default
		}
		props[in.Name] = prop
		if in.Required && !in.HasDefault {
			required = append(required, in.Name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	if p.Subprocess == nil {
		p.Subprocess = false
	}
	desc := fmt.Sprintf("Station workflow %q (%s), %d steps", wf.Name, filepath.Base(wf.File), len(wf.Steps))
	if wf.Description != "" {
		desc = strings.TrimSuffix(wf.Description, ".") + ". " + desc
	}
	tool := &mcp.Tool{
		Name:        name,
		Title:       "workflow " + wf.Name,
		Description: desc + ". " + reach(p),
		InputSchema: schema,
		Annotations: annotations("workflow", wf.Name, p),
	}
	tool.Annotations.Title = "workflow " + wf.Name
	def, _ := json.Marshal(tool)
	return moduleTool{name: name, tool: tool, workflow: wf,
		key: toolKey{module: "workflow:" + wf.File, version: wf.Digest, command: wf.Name, def: string(def)}}
}

// callWorkflow returns the handler of a workflow tool: one run to its end.
func (s *Server) callWorkflow(t moduleTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		inputs := map[string]any{}
		if len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
			if err := json.Unmarshal(req.Params.Arguments, &inputs); err != nil {
				return errorResult("invalid arguments: want an object of the workflow's inputs: " + err.Error()), nil
			}
		}
		res, err := s.opts.Workflows.Start(ctx, t.workflow, inputs, nil)
		if err != nil {
			r := failure(t, err)
			if res != nil {
				r.Content = append(r.Content, &mcp.TextContent{Text: fmt.Sprintf("(run %d: station workflow show %d)", res.RunID, res.RunID)})
			}
			return r, nil
		}
		b, _ := json.Marshal(res)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
}

// loadWorkflow loads a workflow file, once per version of it (its size and
// time): Sync runs every second.
func (s *Server) loadWorkflow(file string) (*workflow.Workflow, bool) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, false
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", file, fi.Size(), fi.ModTime().UnixNano())
	s.parsedMu.Lock()
	defer s.parsedMu.Unlock()
	if wf, ok := s.workflows[key]; ok {
		return wf, wf != nil
	}
	wf, err := workflow.LoadFile(file)
	if err != nil {
		s.log.Warn("mcp: a workflow file does not load; it is no tool", "file", file, "err", err)
		wf = nil
	}
	if len(s.workflows) > 4*maxWorkflows {
		clear(s.workflows) // files that changed many times: start again
	}
	s.workflows[key] = wf
	return wf, wf != nil
}
