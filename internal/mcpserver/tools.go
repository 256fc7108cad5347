package mcpserver

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/workflow"
	"github.com/station-dev/station/manifest"
)

// MaxToolName is the longest tool name the server gives: what the common
// clients accept (several refuse names over 64 characters).
const MaxToolName = 64

// moduleTool is one command of one installed module, as a tool.
type moduleTool struct {
	name   string
	key    toolKey
	tool   *mcp.Tool
	output *manifest.CommandSchema // the command's output_schema, when it is an object schema
	// workflow is set on a workflow's tool (workflows.go).
	workflow *workflow.Workflow
}

// toolNames makes the tools of mods (whose parsed manifests are mans, nil
// where one did not parse). A tool is named SLUG__COMMAND, the command's
// hyphens as underscores ("stripe-invoicing__create_invoice"); where two
// exposed modules share a slug, and for a module whose slug is "workflow"
// (workflow tools are workflow__NAME), OWNER_SLUG__COMMAND — an underscore,
// which no owner or slug holds, so the prefix names one module only; a
// name longer than
// MaxToolName keeps its first characters and ends in a hash of the module
// and command, so that it stays unique and the same from one run to the
// next. The title and description carry the full module id.
func toolNames(mods []store.Module, mans []*manifest.Manifest) []moduleTool {
	slugs := map[string]int{}
	for _, m := range mods {
		_, slug, _ := strings.Cut(m.ID, "/")
		slugs[slug]++
	}
	var out []moduleTool
	for i, m := range mods {
		man := mans[i]
		if man == nil {
			continue
		}
		owner, slug, _ := strings.Cut(m.ID, "/")
		prefix := slug
		if slugs[slug] > 1 || slug == "workflow" {
			prefix = owner + "_" + slug
		}
		var perms station.Permissions
		json.Unmarshal(m.Approved, &perms)
		for _, c := range man.Commands {
			name := toolName(prefix, m.ID, c.Name)
			t := newModuleTool(name, m, man, c, perms)
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b moduleTool) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.key.module, b.key.module))
	})
	return out
}

// toolName is prefix__command, shortened to MaxToolName with a hash of id
// and command when longer.
func toolName(prefix, id, command string) string {
	name := prefix + "__" + strings.ReplaceAll(command, "-", "_")
	if len(name) <= MaxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(id + "\x00" + command))
	h := hex.EncodeToString(sum[:4])
	return name[:MaxToolName-len(h)-1] + "_" + h
}

// openObject is the input schema of a command that declares none: any
// object, which the module checks itself.
const openObject = `{"type":"object"}`

func newModuleTool(name string, m store.Module, man *manifest.Manifest, c manifest.Command, p station.Permissions) moduleTool {
	in := c.InputSchema
	if in == "" {
		in = openObject
	}
	tool := &mcp.Tool{
		Name:        name,
		Title:       fmt.Sprintf("%s %s", m.ID, c.Name),
		Description: describe(m, man, c, p),
		InputSchema: json.RawMessage(in),
		Annotations: annotations(m.ID, c.Name, p),
	}
	t := moduleTool{name: name, tool: tool}
	if c.OutputSchema != "" {
		// MCP says a tool's output schema describes an object; one that
		// describes something else is left out (the text result still
		// carries the JSON).
		var probe struct {
			Type any `json:"type"`
		}
		if json.Unmarshal([]byte(c.OutputSchema), &probe) == nil && probe.Type == "object" {
			if r, err := manifest.CompileSchema([]byte(c.OutputSchema)); err == nil {
				tool.OutputSchema = json.RawMessage(c.OutputSchema)
				t.output = r
			}
		}
	}
	def, _ := json.Marshal(tool)
	t.key = toolKey{module: m.ID, version: m.Version, digest: m.Digest, command: c.Name, def: string(def)}
	return t
}

// annotations says, from the approved permissions, what a call may do to
// the world: reach the network (openWorldHint), write files or start
// programs (destructiveHint), or neither (readOnlyHint). They are hints for
// the client's prompts; the sandbox is what holds.
func annotations(id, command string, p station.Permissions) *mcp.ToolAnnotations {
	// The station's LLM is a provider outside this machine: what a module
	// sends it leaves, as over the network.
	network := len(p.Network) > 0 || p.LLM != nil
	destructive := len(p.FilesystemWrites) > 0 || p.StartsPrograms()
	return &mcp.ToolAnnotations{
		Title:           id + " " + command,
		ReadOnlyHint:    !network && !destructive,
		DestructiveHint: &destructive,
		OpenWorldHint:   &network,
	}
}

// describe is the tool's description: the command's own, the module it
// belongs to, and in one line what the module may reach.
func describe(m store.Module, man *manifest.Manifest, c manifest.Command, p station.Permissions) string {
	var b strings.Builder
	if c.Description != "" {
		b.WriteString(strings.TrimSuffix(c.Description, "."))
		b.WriteString(". ")
	}
	fmt.Fprintf(&b, "Command %q of the Station module %s@%s", c.Name, m.ID, m.Version)
	if man.Description != "" {
		fmt.Fprintf(&b, " (%s)", strings.TrimSuffix(man.Description, "."))
	}
	b.WriteString(". ")
	b.WriteString(reach(p))
	return b.String()
}

// reach says in one line what permissions p let a module reach.
func reach(p station.Permissions) string {
	list := func(items []string, none string) string {
		if len(items) == 0 {
			return none
		}
		return strings.Join(items, ", ")
	}
	programs := "no programs"
	switch {
	case p.Subprocess == true:
		programs = "any program (granted by the operator)"
	case p.StartsPrograms():
		var names []string
		for _, pr := range p.Programs {
			names = append(names, pr.Name)
		}
		programs = list(names, "the programs it declares")
	}
	s := fmt.Sprintf("Sandboxed: may connect to %s; may write %s; may run %s",
		list(p.Network, "no host"), list(p.FilesystemWrites, "nothing"), programs)
	if len(p.FilesystemReads) > 0 {
		s += "; may read " + strings.Join(p.FilesystemReads, ", ")
	}
	if p.LLM != nil {
		s += "; may send text to the station's LLM provider"
	}
	return s + "."
}
