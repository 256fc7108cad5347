// Package secret is `station secret`: the values of the secrets modules
// declare (requires.secrets), which the station sends for them only to
// the hosts each secret is bound to.
package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/secrets"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/manifest"
)

// Service is what the commands use: *station.Station.
type Service interface {
	CheckSecretTarget(ctx context.Context, module, name string) (manifest.Secret, error)
	SetSecret(ctx context.Context, module, name string, value []byte) error
	RemoveSecret(ctx context.Context, module, name string) error
	SecretStatuses(ctx context.Context) ([]station.SecretStatus, error)
	SecretUsers(ctx context.Context, name string) (map[string]manifest.Secret, error)
}

// NewCmdSecret returns `station secret` with its subcommands.
func NewCmdSecret(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "secret",
		Short: "Store the secrets modules need; each is sent only to the hosts it is bound to",
		Long: `A module that needs an API key declares it in its manifest, bound to the hosts
that may receive it:

  requires:
    network:
      allow: [api.stripe.com]
    secrets:
      STRIPE_KEY: {hosts: [api.stripe.com]}

You store the value here. The module never sees it: it writes a placeholder
where the key goes, and the station's network gate puts the value in only in
requests to api.stripe.com, after the allowlist allowed them, and denies (and
records) any request that carries the placeholder elsewhere. What the server
sends back has the value replaced by the placeholder again.

Values are kept in STATION_HOME/secrets.json, encrypted with a key kept apart
in STATION_HOME/secrets.key (mode 0600). A value set with --module is that
module's; one set without it is the station's, used by every installed
module that declares the name (a module's own value wins).`,
		Example: `  station secret set STRIPE_KEY --module dave/stripe-invoicing
  printf %s "$KEY" | station secret set STRIPE_KEY --module dave/stripe-invoicing
  station secret list
  station secret rm STRIPE_KEY --module dave/stripe-invoicing`,
	}
	svc := func(ctx context.Context) (Service, error) { return f.Open(ctx) }
	for _, sub := range []*cobra.Command{newCmdSet(f, svc, nil), newCmdList(f, svc, nil), newCmdRemove(f, svc, nil)} {
		cmdutil.StationFlags(sub, f)
		c.AddCommand(sub)
	}
	return cmdutil.Group(c)
}

// SetOptions are what `station secret set` was asked to do.
type SetOptions struct {
	IO      *cmdutil.IOStreams
	Service func(context.Context) (Service, error)
	Name    string
	Module  string
	JSON    bool
	// readHidden reads a line from the terminal without echo; nil is
	// x/term's.
	readHidden func() ([]byte, error)
}

func newCmdSet(f *cmdutil.Factory, svc func(context.Context) (Service, error), runF func(*SetOptions) error) *cobra.Command {
	opts := &SetOptions{IO: &f.IO, Service: svc}
	c := &cobra.Command{
		Use:   "set NAME",
		Short: "Store a secret's value, read from the terminal (not echoed) or from standard input",
		Long: `Set stores the value of secret NAME: for one module with --module, or for the
whole station without it. The value is read from the terminal without
echoing it, or, when standard input is not a terminal, from standard input
(one trailing newline is dropped). It is never taken from a flag or an
argument, which would leave it in your shell history and in the process
list.

With --module, the module must be installed and declare NAME; set then
says which hosts will receive it.`,
		Example: `  station secret set STRIPE_KEY --module dave/stripe-invoicing
  station secret set STRIPE_KEY < ~/keys/stripe.txt`,
		Args: cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return setRun(cmd.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Module, "module", "", "set the value for this module only (owner/slug)")
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// SetResult is what set prints: the secret set, never its value.
type SetResult struct {
	Name   string `json:"name"`
	Module string `json:"module,omitempty"`
	// Receivers are the installed modules that will use this value, with
	// the hosts each sends it to.
	Receivers []Receiver `json:"receivers"`
}

// Receiver is a module that uses a secret's value and where it sends it.
type Receiver struct {
	Module string   `json:"module"`
	Hosts  []string `json:"hosts"`
}

// Text implements cmdutil.Texter.
func (r SetResult) Text(w io.Writer) error {
	where := "for the station"
	if r.Module != "" {
		where = "for " + cmdutil.TermText(r.Module)
	}
	fmt.Fprintf(w, "set secret %s %s\n", r.Name, where)
	if len(r.Receivers) == 0 {
		_, err := fmt.Fprintln(w, "  no installed module declares it yet")
		return err
	}
	for _, rc := range r.Receivers {
		fmt.Fprintf(w, "  %s sends it only to %s\n", cmdutil.TermText(rc.Module), cmdutil.TermText(strings.Join(rc.Hosts, ", ")))
	}
	return nil
}

func setRun(ctx context.Context, opts *SetOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	// Everything that can be wrong with the target is said before the
	// value is asked for.
	decl, err := svc.CheckSecretTarget(ctx, opts.Module, opts.Name)
	if err != nil {
		return err
	}
	value, err := readValue(opts, decl)
	if err != nil {
		return err
	}
	if err := svc.SetSecret(ctx, opts.Module, opts.Name, value); err != nil {
		return err
	}
	users, err := svc.SecretUsers(ctx, opts.Name)
	if err != nil {
		return err
	}
	res := SetResult{Name: opts.Name, Module: opts.Module, Receivers: []Receiver{}}
	for _, id := range slices.Sorted(mapKeys(users)) {
		if opts.Module != "" && id != opts.Module {
			continue
		}
		res.Receivers = append(res.Receivers, Receiver{Module: id, Hosts: users[id].Hosts})
	}
	return cmdutil.Print(opts.IO.Out, opts.JSON, res)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// readValue reads the value: from the terminal without echo, or from
// standard input.
func readValue(opts *SetOptions, decl manifest.Secret) ([]byte, error) {
	var v []byte
	if opts.IO.IsTerminal {
		about := ""
		if decl.Description != "" {
			about = " — " + cmdutil.TermText(decl.Description)
		}
		if len(decl.Hosts) > 0 {
			about += " (sent only to " + cmdutil.TermText(strings.Join(decl.Hosts, ", ")) + ")"
		}
		fmt.Fprintf(opts.IO.Err, "Value of %s%s: ", opts.Name, about)
		read := opts.readHidden
		if read == nil {
			f, ok := opts.IO.In.(*os.File)
			if !ok {
				return nil, errors.New("cannot read a hidden value from this terminal: pipe the value to standard input")
			}
			read = func() ([]byte, error) { return term.ReadPassword(int(f.Fd())) }
		}
		var err error
		v, err = read()
		fmt.Fprintln(opts.IO.Err)
		if err != nil {
			return nil, fmt.Errorf("read the value: %w", err)
		}
	} else {
		var err error
		v, err = io.ReadAll(io.LimitReader(opts.IO.In, secrets.MaxValue+2))
		if err != nil {
			return nil, fmt.Errorf("read the value from standard input: %w", err)
		}
		if bytes.HasSuffix(v, []byte("\n")) {
			v = bytes.TrimSuffix(bytes.TrimSuffix(v, []byte("\n")), []byte("\r"))
		}
	}
	if len(v) == 0 {
		return nil, cmdutil.Usagef("no value: type it at the prompt, or pipe it to standard input (printf %%s \"$KEY\" | station secret set %s)", opts.Name)
	}
	if msg := secrets.CheckValue(v); msg != "" {
		return nil, fmt.Errorf("secret %s: %s", opts.Name, msg)
	}
	return v, nil
}

// ListOptions are what `station secret list` was asked to do.
type ListOptions struct {
	IO      *cmdutil.IOStreams
	Service func(context.Context) (Service, error)
	JSON    bool
}

func newCmdList(f *cmdutil.Factory, svc func(context.Context) (Service, error), runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: &f.IO, Service: svc}
	c := &cobra.Command{
		Use:   "list",
		Short: "The secrets installed modules declare, where each goes and whether it is set (never a value)",
		Long: `List shows every secret an installed module declares: the module, the hosts
its value is sent to, and where the value comes from (module, station, or
missing: the module's requests that need it fail until it is set). Stored
values no installed module declares are listed as unused. Values are never
shown.`,
		Example: "  station secret list\n  station secret list --json",
		Args:    cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			svc, err := opts.Service(cmd.Context())
			if err != nil {
				return err
			}
			rows, err := svc.SecretStatuses(cmd.Context())
			if err != nil {
				return err
			}
			if len(rows) == 0 && !opts.JSON {
				fmt.Fprintln(opts.IO.Err, "no installed module declares a secret, and none is stored")
				return nil
			}
			return cmdutil.Print(opts.IO.Out, opts.JSON, Statuses(rows))
		},
	}
	cmdutil.AddJSONFlag(c, &opts.JSON)
	return c
}

// Statuses is what list prints; in JSON, an array.
type Statuses []station.SecretStatus

// Text prints the statuses as a table.
func (rs Statuses) Text(w io.Writer) error {
	tw := cmdutil.NewTable(w)
	fmt.Fprintf(tw, "NAME\tMODULE\tSENT TO\tVALUE\tSET\n")
	for _, r := range rs {
		mod, hosts, at := r.Module, strings.Join(r.Hosts, ", "), "-"
		if r.Set == "unused" {
			mod = "(station)"
			if r.Scope != "" {
				mod = r.Scope
			}
			hosts = "(no installed module declares it)"
		}
		if r.SetAt != nil {
			at = r.SetAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, cmdutil.TermText(mod), cmdutil.TermText(hosts), r.Set, at)
	}
	return tw.Flush()
}

// RemoveOptions are what `station secret rm` was asked to do.
type RemoveOptions struct {
	IO      *cmdutil.IOStreams
	Service func(context.Context) (Service, error)
	Name    string
	Module  string
}

func newCmdRemove(f *cmdutil.Factory, svc func(context.Context) (Service, error), runF func(*RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: &f.IO, Service: svc}
	c := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Delete a secret's value",
		Long: `Rm deletes the value of secret NAME for --module, or the station's value
without it. A module's requests that need the secret then fail (or, for a
module's own value, fall back to the station's) until it is set again.`,
		Example: "  station secret rm STRIPE_KEY --module dave/stripe-invoicing",
		Args:    cmdutil.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			svc, err := opts.Service(cmd.Context())
			if err != nil {
				return err
			}
			if err := svc.RemoveSecret(cmd.Context(), opts.Module, opts.Name); err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.Err, "removed secret %s\n", opts.Name)
			return nil
		},
	}
	c.Flags().StringVar(&opts.Module, "module", "", "remove the module's own value (owner/slug)")
	return c
}
