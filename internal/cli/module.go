package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

func (a *app) moduleCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "module",
		Short: "Build, install, inspect and remove modules",
	}
	c.AddCommand(a.moduleBuildCmd(), a.moduleInstallCmd(), a.moduleListCmd(), a.moduleShowCmd(), a.moduleRemoveCmd(), a.moduleSchemaCmd(),
		a.modulePublishCmd(), a.moduleSearchCmd(), a.moduleUpgradeCmd())
	return c
}

func (a *app) moduleBuildCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "build DIR",
		Short: "Build a Go module directory to WebAssembly",
		Long: `Build compiles the Go main package in DIR with the stock Go toolchain
(GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared) into the wasm file its
module.yaml names (default module.wasm).`,
		Example: "  station module build examples/hello",
		Args:    cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			man, err := manifest.Load(dir)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(dir, man.Wasm)
			}
			start := time.Now()
			fmt.Fprintf(a.IO.Err, "building %s@%s ...\n", cmdutil.TermText(man.ID), cmdutil.TermText(man.Version))
			if err := wasmbuild.Build(cmd.Context(), dir, out); err != nil {
				return fmt.Errorf("build %s: %w", man.ID, err)
			}
			fmt.Fprintf(a.IO.Out, "built %s (%s) in %s\n", out, cmdutil.HumanBytes(cmdutil.FileSize(out)), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "output file (default: the manifest's wasm path)")
	return c
}

func (a *app) moduleInstallCmd() *cobra.Command {
	var yes, asJSON bool
	c := &cobra.Command{
		Use:   "install DIR | OWNER/SLUG[@VERSION]",
		Short: "Install a built module, or one from the hub, after showing what it may do",
		Long: `Install verifies the module's wasm against its manifest (it must compile,
speak the station ABI and import only what the manifest grants), shows the
permissions it asks for in plain words, and asks for approval. Use --yes in
scripts after reviewing the manifest.

An argument that is not a directory and reads OWNER/SLUG[@VERSION] installs
from the hub this station is logged in to (station hub login): the latest
version that is not yanked, or VERSION. With --yes the version must be named,
so that a directory missing from where you run the command never becomes an
approved install from the hub. The bundle's signature (by a key the
hub lists for OWNER) and digests are verified before anything is written, and
the publisher's key is pinned: a later version signed by another key asks you
first.`,
		Example: "  station module install examples/hello\n  station module install --yes examples/stripe-invoicing\n  station module install dave/stripe-invoicing@1.4.0",
		Args:    cmdutil.ExactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if cmdutil.RefMaybe(args[0], cmdutil.IsDir) {
				if yes && !strings.Contains(args[0], "@") {
					// A mistyped or missing directory (examples/hello run
					// from the wrong folder) must not become an approved
					// install of whatever the hub has under that name.
					return cmdutil.Usagef("%s is not a directory here; to install it from the hub without a prompt, name the version (%s@VERSION; station module search lists them)", args[0], args[0])
				}
				return a.installFromHub(ctx, args[0], yes, asJSON)
			}
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			plan, err := s.Install(ctx, args[0], func(p station.Plan) (bool, error) {
				if !asJSON {
					cmdutil.PrintPlan(a.IO.Err, p)
				}
				if yes {
					return true, nil
				}
				if !a.IO.IsTerminal {
					return false, cmdutil.Usagef("install %s needs approval: review the permissions above and rerun with --yes", cmdutil.TermText(p.Manifest.ID))
				}
				return a.Confirm("Install?"), nil
			})
			if err != nil {
				return err
			}
			a.ReloadInDaemon(ctx, plan.Manifest.ID)
			if asJSON {
				return cmdutil.WriteJSON(a.IO.Out, map[string]any{
					"id": plan.Manifest.ID, "version": plan.Manifest.Version, "digest": plan.Digest, "permissions": plan.Permissions,
				})
			}
			fmt.Fprintf(a.IO.Out, "installed %s@%s (%s)\n", cmdutil.TermText(plan.Manifest.ID), cmdutil.TermText(plan.Manifest.Version), plan.Digest)
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "approve without asking")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func (a *app) moduleListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List installed modules",
		Args:  cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			mods, err := s.Store.Modules(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]map[string]any, 0, len(mods))
				for _, m := range mods {
					out = append(out, map[string]any{"id": m.ID, "version": m.Version, "digest": m.Digest, "installed_at": m.InstalledAt, "permissions": json.RawMessage(m.Approved)})
				}
				return cmdutil.WriteJSON(a.IO.Out, out)
			}
			if len(mods) == 0 {
				fmt.Fprintln(a.IO.Err, "no modules installed (station module install DIR)")
				return nil
			}
			tw := tabwriter.NewWriter(a.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVERSION\tDIGEST\tNETWORK")
			for _, m := range mods {
				var p station.Permissions
				_ = json.Unmarshal(m.Approved, &p)
				netw := strings.Join(p.Network, ", ")
				if netw == "" {
					netw = "(none)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cmdutil.TermText(m.ID), cmdutil.TermText(m.Version), cmdutil.TermText(cmdutil.ShortDigest(m.Digest)), cmdutil.TermText(netw))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) moduleShowCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show an installed module: permissions, digest, commands",
		Args:  cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			rec, err := s.Store.Module(ctx, args[0])
			if err != nil {
				return fmt.Errorf("show %s: module is not installed", args[0])
			}
			man, err := s.ParseManifest("module.yaml", rec.Manifest)
			if err != nil {
				return err
			}
			var p station.Permissions
			_ = json.Unmarshal(rec.Approved, &p)
			lim, err := s.LimitsOf(ctx, man)
			if err != nil {
				return fmt.Errorf("show %s: %w", args[0], err)
			}
			if asJSON {
				cmds := make([]map[string]string, len(man.Commands))
				for i, c := range man.Commands {
					cmds[i] = map[string]string{"name": c.Name, "description": c.Description}
				}
				out := map[string]any{
					"id": rec.ID, "version": rec.Version, "description": man.Description, "digest": rec.Digest,
					"installed_at": rec.InstalledAt, "commands": cmds, "permissions": p, "limits": lim,
				}
				if c := s.ChildConfinement(p); c != "" {
					out["program_confinement"] = c
				}
				return cmdutil.WriteJSON(a.IO.Out, out)
			}
			w := a.IO.Out
			fmt.Fprintf(w, "%s %s\n", cmdutil.TermText(rec.ID), cmdutil.TermText(rec.Version))
			if man.Description != "" {
				// The one place a description keeps its lines, each
				// indented under the module's.
				fmt.Fprintf(w, "  %s\n", cmdutil.TermBlock(man.Description, "  "))
			}
			fmt.Fprintf(w, "digest     %s\ninstalled  %s\n", cmdutil.TermText(rec.Digest), rec.InstalledAt.Local().Format(time.RFC3339))
			fmt.Fprintln(w, "commands")
			for _, c := range man.Commands {
				fmt.Fprintf(w, "  %-20s %s\n", cmdutil.TermText(c.Name), cmdutil.TermText(c.Description))
			}
			fmt.Fprintln(w, "permissions (approved)")
			cmdutil.PrintPermissions(w, "  - ", "    ", p.Describe(s.ChildConfinement(p)))
			printLimits(w, lim)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) moduleRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Uninstall a module",
		Args:  cmdutil.ExactArgs(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.Open(ctx)
			if err != nil {
				return err
			}
			if err := s.Remove(ctx, args[0]); err != nil {
				return err
			}
			if err := s.Store.DeleteHubOrigin(ctx, args[0]); err != nil {
				return err
			}
			a.ReloadInDaemon(ctx, args[0])
			fmt.Fprintf(a.IO.Out, "removed %s\n", args[0])
			return nil
		},
	}
}

func (a *app) moduleSchemaCmd() *cobra.Command {
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
			_, err := a.IO.Out.Write(manifest.Schema())
			return err
		},
	}
}

// printLimits writes the limits a module runs under, for module show.
func printLimits(w io.Writer, l station.Limits) {
	fmt.Fprintln(w, "limits")
	instance := "warm instances, reused"
	if l.FreshInstance {
		instance = "a fresh instance per call"
	}
	fmt.Fprintf(w, "  memory %s, timeout %s, %d calls at once, %s\n", cmdutil.HumanSize(int64(l.MemoryBytes)), l.Timeout, l.Concurrency, instance)
	fmt.Fprintf(w, "  input %s, output %s, host-call request %s, HTTP response %s\n",
		cmdutil.HumanSize(int64(l.MaxInputBytes)), cmdutil.HumanSize(int64(l.MaxOutputBytes)), cmdutil.HumanSize(int64(l.MaxRequestBytes)), cmdutil.HumanSize(l.MaxResponseBytes))
	if f := l.Files; f != nil {
		fmt.Fprintf(w, "  files: quota %s (%s used), %d files and directories (%d used), %d open at once (%d per instance)\n",
			cmdutil.HumanSize(f.QuotaBytes), cmdutil.HumanSize(f.UsedBytes), f.Entries, f.UsedEntries, f.OpenFiles, f.OpenFilesPerInstance)
	}
	if l.ProgramOutputBytes > 0 {
		fmt.Fprintf(w, "  programs: %s of stdout and of stderr each\n", cmdutil.HumanSize(l.ProgramOutputBytes))
	}
}
