package module

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/manifest"
)

// Permissions are approved permissions as --json prints them: those of
// station.Permissions, with the programs' fields snake_case too (the
// stored approval keeps its own form).
type Permissions struct {
	Network          []string               `json:"network"`
	Subprocess       any                    `json:"subprocess"`
	FilesystemWrites []string               `json:"filesystem_writes"`
	FilesystemReads  []string               `json:"filesystem_reads,omitempty"`
	Programs         []Program              `json:"programs,omitempty"`
	Env              []string               `json:"subprocess_env,omitempty"`
	LLM              *station.LLMPermission `json:"llm,omitempty"`
}

// Program is a program the module was approved to start.
type Program struct {
	Name   string `json:"name"`   // the allow entry
	Path   string `json:"path"`   // the file that runs
	Digest string `json:"digest"` // of that file at install
}

func newPermissions(p station.Permissions) *Permissions {
	out := &Permissions{Network: nonNil(p.Network), Subprocess: p.Subprocess, FilesystemWrites: nonNil(p.FilesystemWrites),
		FilesystemReads: p.FilesystemReads, Env: p.Env, LLM: p.LLM}
	if out.Subprocess == nil {
		out.Subprocess = false
	}
	for _, prog := range p.Programs {
		out.Programs = append(out.Programs, Program{Name: prog.Name, Path: prog.Path, Digest: prog.Digest})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Source is where an installed module came from.
type Source struct {
	// Kind is "directory", "hub", or "unknown" for a module installed
	// before the station recorded where from.
	Kind string `json:"kind"`
	// Dir is the directory it was installed from, as it was then.
	Dir string `json:"dir,omitempty"`
	// Hub is the hub's URL, KeyID the publisher key that signed it, Team
	// the team whose lockfile installed it.
	Hub   string `json:"hub,omitempty"`
	KeyID string `json:"key_id,omitempty"`
	Team  string `json:"team,omitempty"`
}

func newSource(o hubsync.Origin) Source {
	return Source{Kind: o.Kind, Dir: o.Dir, Hub: o.Hub, KeyID: o.KeyID, Team: o.Team}
}

// String is the source in words, for a terminal: the directory, the hub
// and the key come from the store (a hub, a lockfile supplied them).
func (s Source) String() string {
	switch s.Kind {
	case hubsync.FromDirectory:
		return "directory " + cmdutil.TermText(s.Dir)
	case hubsync.FromHub:
		out := "hub " + cmdutil.TermText(s.Hub)
		if s.Team != "" {
			out += ", for team " + cmdutil.TermText(s.Team)
		}
		return out + ", signed by key " + cmdutil.TermText(s.KeyID)
	}
	return "a directory not recorded (installed before the station recorded where from)"
}

// work is the progress of a command's work, paused while it asks the
// operator: took counts the work, not the wait for an answer.
type work struct {
	start func(label string) *cmdutil.Progress
	p     *cmdutil.Progress
	took  time.Duration
}

func (w *work) begin(format string, args ...any) {
	w.pause()
	w.p = w.start(fmt.Sprintf(format, args...))
}

func (w *work) pause() {
	if w.p != nil {
		w.took += w.p.Stop()
		w.p = nil
	}
}

// done stops the progress and returns how long the work took.
func (w *work) done() time.Duration {
	w.pause()
	return cmdutil.Round(w.took)
}

// refMaybe reports whether arg should be installed from the hub: it is not
// an existing directory and reads as owner/slug[@version].
func refMaybe(arg string, isDir func(string) bool) bool {
	if isDir(arg) {
		return false
	}
	_, _, err := hubclient.ParseRef(arg)
	return err == nil
}

// isDir reports whether p is a directory.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// fileSize is the size of the file at path, or 0 when it cannot be read.
// buildFor builds the module man describes in dir to its wasm file, with
// a progress line, for the commands that build before they run it
// (module test, module learn).
func buildFor(ctx context.Context, dir string, man *manifest.Manifest, build func(ctx context.Context, dir, out string) error, progress func(string) *cmdutil.Progress) (*TestedBuild, error) {
	out := filepath.Join(dir, man.Wasm)
	p := progress("building " + man.ID + "@" + man.Version)
	err := build(ctx, dir, out)
	took := cmdutil.Round(p.Stop())
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", man.ID, err)
	}
	return &TestedBuild{Wasm: out, Size: fileSize(out), Took: took, DurationMS: took.Milliseconds()}, nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// shortDigest is a digest cut to its algorithm and first twelve hex
// digits, for tables.
func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
