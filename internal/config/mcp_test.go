package config

import (
	"slices"
	"strings"
	"testing"
)

func TestMCPExpose(t *testing.T) {
	c, err := Parse(FileName, []byte("mcp:\n  expose: [dave/stripe-invoicing, erin/x]\n"))
	if err != nil || !slices.Equal(c.MCP.Expose, []string{"dave/stripe-invoicing", "erin/x"}) {
		t.Fatalf("expose = %v, %v", c.MCP.Expose, err)
	}
	if c, err := Parse(FileName, []byte("mcp:\n  expose: []\n")); err != nil || c.MCP.Expose == nil || len(c.MCP.Expose) != 0 {
		t.Errorf("an empty expose = %#v, %v; want an empty, non-nil list (expose nothing)", c.MCP.Expose, err)
	}
	if c, err := Parse(FileName, []byte("mcp:\n")); err != nil || c.MCP.Expose != nil {
		t.Errorf("no expose = %#v, %v; want nil (expose all)", c.MCP.Expose, err)
	}
	for in, want := range map[string]string{
		"mcp:\n  expose: [Dave/x]\n":       `config.yaml:2:12: mcp.expose: entry "Dave/x": not a module id`,
		"mcp:\n  expose: dave/x\n":         "mcp.expose",
		"mcp:\n  exposed: [dave/x]\n":      `did you mean "expose"?`,
		"mcp:\n  expose: [dave/x, 3]\n":    "mcp.expose",
		"mcp:\n  expose: [../../etc]\n":    "not a module id",
		"mcp: {expose: [\"dave/x\\n\"]}\n": "not a module id",
	} {
		if _, err := Parse(FileName, []byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", in, err, want)
		}
	}
}
