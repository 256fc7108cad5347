// Package mcp is `station mcp`: the station's MCP server over stdio, for AI
// clients that launch it (Claude Desktop, VS Code, Cursor, Goose), and
// `station mcp config`, the snippet to paste into such a client's settings.
// The server itself is internal/mcpserver; the daemon serves it too, at
// /mcp.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/mcpserver"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/workflow"
	"github.com/station-dev/station/manifest"
)

// MCPOptions are what `station mcp` was asked to do.
type MCPOptions struct {
	IO *cmdutil.IOStreams
	// Open opens the station home (Factory.Open); Logger is the server's
	// log (Factory.Logger: warnings to stderr, which clients keep in their
	// logs, and station.log; standard output is the protocol's).
	Open   func(context.Context) (*station.Station, error)
	Logger func(home string) *slog.Logger
	// Modules is --module: expose only these (instead of config mcp.expose).
	Modules []string
}

// NewCmdMCP returns `station mcp` and its config subcommand.
func NewCmdMCP(f *cmdutil.Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{IO: &f.IO, Open: f.Open, Logger: f.Logger}
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve installed module commands as sandboxed tools to AI clients (MCP over stdio)",
		Long: `Mcp is a Model Context Protocol server on standard input and output: the way
desktop AI clients (Claude Desktop, VS Code, Cursor, Goose) start a tool
server. Every command of every installed module is a tool, named
SLUG__COMMAND (stripe-invoicing__create_invoice), whose input schema is the
command's input_schema and whose annotations say what the module may reach.
A call runs exactly as 'station run' would: confined to what the operator
approved, under the module's limits, audited with the client's name and
session as its trace ('station audit' shows them). A denial comes back as a
tool result with isError, naming the module, the capability, the target and
the reason, so the model can explain it.

Which modules a client sees: all installed ones, or the list under
mcp.expose in STATION_HOME/config.yaml, or those given with --module.
Modules installed, upgraded or removed while a client is connected reach it
as a changed tool list. The station's own read-only tools: station_modules
(what is installed and may do what) and station_audit (recent decisions).

You do not run this by hand: print the snippet for your client's settings
with 'station mcp config --client claude' (or vscode, cursor) and paste it.
The daemon (station serve) serves the same tools over streamable HTTP at
/mcp. docs/mcp.md has a worked example.`,
		Example: "  station mcp config --client claude\n  station mcp --module dave/stripe-invoicing",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range opts.Modules {
				if msg := manifest.CheckID(id); msg != "" {
					return cmdutil.Usagef("--module %q: %s", id, msg)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return mcpRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Modules, "module", nil, "expose only this module's commands (owner/slug; repeat for more); default: config mcp.expose, else every installed module")
	cmdutil.HomeFlag(c, f) // always in this process: a client starts it, and the tools run here
	c.AddCommand(NewCmdConfig(f, nil))
	return c
}

func mcpRun(ctx context.Context, opts *MCPOptions) error {
	s, err := opts.Open(ctx)
	if err != nil {
		return err
	}
	expose := s.Config.MCP.Expose
	if len(opts.Modules) > 0 {
		expose = opts.Modules
	}
	wfs, err := workflow.NewService(ctx, s, opts.IO.Getenv)
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(ctx, s, mcpserver.Options{Expose: expose, Version: cmdutil.Version(), Logger: opts.Logger(s.Home), Workflows: wfs})
	if err != nil {
		return err
	}
	in, _ := opts.IO.In.(io.ReadCloser)
	if in == nil {
		in = io.NopCloser(opts.IO.In)
	}
	t := &mcp.IOTransport{Reader: in, Writer: nopCloser{opts.IO.Out}, MaxLineLength: mcpserver.MaxRequestBytes}
	err = srv.Serve(ctx, t)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ConfigOptions are what `station mcp config` was asked to do.
type ConfigOptions struct {
	IO      *cmdutil.IOStreams
	Client  string   // --client
	Modules []string // --module
	Home    func() (string, error)
	// Executable is the station binary's path (os.Executable).
	Executable func() (string, error)
}

// Clients are the clients `station mcp config` knows, in --help order.
var Clients = []string{"claude", "vscode", "cursor"}

// NewCmdConfig returns `station mcp config`.
func NewCmdConfig(f *cmdutil.Factory, runF func(*ConfigOptions) error) *cobra.Command {
	opts := &ConfigOptions{IO: &f.IO, Home: f.HomeDir, Executable: os.Executable}
	c := &cobra.Command{
		Use:   "config --client claude|vscode|cursor",
		Short: "Print the settings that make an AI client start this station's MCP server",
		Long: `Config prints, on standard output, the JSON to paste into an MCP client's
settings so that it starts 'station mcp' for this station home, and says on
standard error which file that is. The command is this binary's absolute
path and STATION_HOME is set, so the client finds the same station whatever
its working directory.

  claude   Claude Desktop: claude_desktop_config.json, under "mcpServers"
  vscode   VS Code: .vscode/mcp.json in a workspace (or the user
           configuration's mcp.json), under "servers"
  cursor   Cursor: ~/.cursor/mcp.json (or .cursor/mcp.json in a project),
           under "mcpServers"

Merge the "station" entry into what the file already holds.`,
		Example: "  station mcp config --client claude\n  station mcp config --client vscode --module dave/stripe-invoicing > .vscode/mcp.json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(Clients, opts.Client) {
				return cmdutil.Usagef("--client: want one of claude, vscode, cursor (got %q)", opts.Client)
			}
			for _, id := range opts.Modules {
				if msg := manifest.CheckID(id); msg != "" {
					return cmdutil.Usagef("--module %q: %s", id, msg)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return configRun(opts)
		},
	}
	c.Flags().StringVar(&opts.Client, "client", "", "the client: claude, vscode or cursor")
	c.Flags().StringArrayVar(&opts.Modules, "module", nil, "expose only this module (repeat for more)")
	return c
}

// stdioServer is a client's entry for a server it starts.
type stdioServer struct {
	Type    string            `json:"type,omitempty"` // VS Code's "stdio"
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func configRun(opts *ConfigOptions) error {
	home, err := opts.Home()
	if err != nil {
		return err
	}
	if home, err = filepath.Abs(home); err != nil {
		return err
	}
	exe, err := opts.Executable()
	if err != nil {
		return fmt.Errorf("find this program's path: %w", err)
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	args := []string{"mcp"}
	for _, id := range opts.Modules {
		args = append(args, "--module", id)
	}
	entry := stdioServer{Command: exe, Args: args, Env: map[string]string{"STATION_HOME": home}}
	var doc any
	var where string
	switch opts.Client {
	case "claude":
		doc = map[string]any{"mcpServers": map[string]any{"station": entry}}
		where = "Claude Desktop's claude_desktop_config.json (Settings > Developer > Edit Config): ~/Library/Application Support/Claude/ on macOS, %APPDATA%\\Claude\\ on Windows, ~/.config/Claude/ on Linux"
	case "vscode":
		entry.Type = "stdio"
		doc = map[string]any{"servers": map[string]any{"station": entry}}
		where = "VS Code's .vscode/mcp.json in your workspace (or run 'MCP: Open User Configuration')"
	case "cursor":
		doc = map[string]any{"mcpServers": map[string]any{"station": entry}}
		where = "Cursor's ~/.cursor/mcp.json (or .cursor/mcp.json in a project)"
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Err, "Merge this into %s, then restart the client:\n", where)
	_, err = fmt.Fprintf(opts.IO.Out, "%s\n", b)
	return err
}
