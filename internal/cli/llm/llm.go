// Package llm is `station llm`: what the station's own LLM spent, for
// modules granted requires.llm and for workflow llm steps.
package llm

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
)

// NewCmdLLM returns `station llm` with its subcommands.
func NewCmdLLM(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "llm",
		Short: "The station's own LLM: what modules and workflows spent",
		Long: `The station makes LLM requests with its own key, for workflow llm steps and
for modules granted requires.llm (docs/llm.md). No module ever sees the key.`,
		Example: "  station llm usage\n  station llm usage --since 168h --json",
	}
	c.AddCommand(NewCmdUsage(f, nil))
	return cmdutil.Group(c)
}
