package module

import (
	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/manifest"
)

// SchemaOptions are what `station module schema` was asked to do.
type SchemaOptions struct {
	IO *cmdutil.IOStreams
}

// NewCmdSchema returns `station module schema`.
func NewCmdSchema(f *cmdutil.Factory, runF func(*SchemaOptions) error) *cobra.Command {
	opts := &SchemaOptions{IO: &f.IO}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of module.yaml, for editors",
		Long: `Schema prints the JSON Schema (draft 2020-12) of the module manifest. Point
your editor's YAML language server at it, e.g. with a first line in
module.yaml:

  # yaml-language-server: $schema=./module.schema.json`,
		Example: "  station module schema > module.schema.json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return schemaRun(opts)
		},
	}
}

func schemaRun(opts *SchemaOptions) error {
	_, err := opts.IO.Out.Write(manifest.Schema())
	return err
}
