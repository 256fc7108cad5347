package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
)

func TestMCPFlags(t *testing.T) {
	clitest.CheckFlags(t, func(runF func(*MCPOptions) error) *cobra.Command { return NewCmdMCP(clitest.Factory(), runF) }, []clitest.FlagCase[MCPOptions]{
		{Args: nil, Want: MCPOptions{}},
		{Args: []string{"--module", "dave/stripe-invoicing", "--module", "erin/x"}, Want: MCPOptions{Modules: []string{"dave/stripe-invoicing", "erin/x"}}},
		{Args: []string{"--module", "Dave/x"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--module", "../etc/passwd"}, Code: cmdutil.ExitUsage},
		{Args: []string{"extra"}, Code: cmdutil.ExitUsage},
	})
	clitest.CheckFlags(t, func(runF func(*ConfigOptions) error) *cobra.Command { return NewCmdConfig(clitest.Factory(), runF) }, []clitest.FlagCase[ConfigOptions]{
		{Args: []string{"--client", "claude"}, Want: ConfigOptions{Client: "claude"}},
		{Args: []string{"--client", "vscode", "--module", "dave/x"}, Want: ConfigOptions{Client: "vscode", Modules: []string{"dave/x"}}},
		{Args: nil, Code: cmdutil.ExitUsage},
		{Args: []string{"--client", "emacs"}, Code: cmdutil.ExitUsage},
		{Args: []string{"--client", "cursor", "--module", "x"}, Code: cmdutil.ExitUsage},
	})
}

// TestConfigSnippets: each client gets its own shape, naming this binary
// by absolute path and the station home, and the file to put it in goes to
// stderr (so stdout can be redirected into that file).
func TestConfigSnippets(t *testing.T) {
	for client, key := range map[string]string{"claude": "mcpServers", "vscode": "servers", "cursor": "mcpServers"} {
		var out, errb bytes.Buffer
		opts := &ConfigOptions{IO: &cmdutil.IOStreams{Out: &out, Err: &errb}, Client: client, Modules: []string{"dave/x"},
			Home:       func() (string, error) { return "/home/ada/.station", nil },
			Executable: func() (string, error) { return "/usr/local/bin/station", nil }}
		if err := configRun(opts); err != nil {
			t.Fatal(err)
		}
		var doc map[string]map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%s: stdout is not JSON: %v\n%s", client, err, out.String())
		}
		e := doc[key]["station"]
		if e.Command != "/usr/local/bin/station" || strings.Join(e.Args, " ") != "mcp --module dave/x" || e.Env["STATION_HOME"] != "/home/ada/.station" {
			t.Errorf("%s: entry %+v", client, e)
		}
		if (client == "vscode") != (e.Type == "stdio") {
			t.Errorf("%s: type %q (VS Code wants \"stdio\", the others nothing)", client, e.Type)
		}
		if !strings.Contains(errb.String(), "Merge this into") {
			t.Errorf("%s: stderr %q", client, errb.String())
		}
	}
}
