package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// Lockfile is a team's shared state: the modules its members run, pinned to
// a version and its digests with the permissions the team approved, and the
// team's workflows. The hub stores it with a revision number; a push names
// the revision it was based on and is refused if the team has moved on.
type Lockfile struct {
	Modules   []LockedModule `json:"modules"`
	Workflows []Workflow     `json:"workflows"`
}

// LockedModule pins one module.
type LockedModule struct {
	// ID is "owner/slug".
	ID      string `json:"id"`
	Version string `json:"version"`
	// ManifestDigest and WasmDigest must be the digests the hub has for
	// ID@Version; a station installs nothing whose bytes differ.
	ManifestDigest string `json:"manifest_digest"`
	WasmDigest     string `json:"wasm_digest"`
	// Permissions are what the team approved for the module.
	Permissions Permissions `json:"permissions"`
}

// Permissions are the permissions a team approved for a module. The JSON
// shape is the station's own record of approved permissions, less what is
// resolved on each machine (program paths and digests).
type Permissions struct {
	Network          []string   `json:"network"`
	Subprocess       Subprocess `json:"subprocess"`
	FilesystemWrites []string   `json:"filesystem_writes"`
	FilesystemReads  []string   `json:"filesystem_reads,omitempty"`
	Env              []string   `json:"subprocess_env,omitempty"`
	// Secrets are the module's secrets and the hosts each may be sent to:
	// names and bindings, never a value. Each member sets the values on
	// their own station (station secret set).
	Secrets []SecretBinding `json:"secrets,omitempty"`
}

// SecretBinding is an approved requires.secrets entry in a lockfile.
type SecretBinding struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
	// In is where in a request the value may go: "headers", and "query"
	// and "body" where the manifest opted in.
	In []string `json:"in"`
}

// Subprocess is the subprocess grant: JSON false (no programs), true (any
// program, an operator grant) or {"allow": [programs]}.
type Subprocess struct {
	Any   bool
	Allow []string
}

// MarshalJSON encodes s as false, true or {"allow": [...]}.
func (s Subprocess) MarshalJSON() ([]byte, error) {
	switch {
	case s.Any:
		return []byte("true"), nil
	case len(s.Allow) > 0:
		return json.Marshal(struct {
			Allow []string `json:"allow"`
		}{s.Allow})
	}
	return []byte("false"), nil
}

// UnmarshalJSON decodes false, true or {"allow": [...]}, strictly.
func (s *Subprocess) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "false", "null":
		*s = Subprocess{}
		return nil
	case "true":
		*s = Subprocess{Any: true}
		return nil
	}
	var v struct {
		Allow []string `json:"allow"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return errors.New(`subprocess must be false, true or {"allow": [programs]}`)
	}
	*s = Subprocess{Allow: v.Allow}
	return nil
}

// Workflow is a team workflow: its definition, opaque to the hub, with its
// digest.
type Workflow struct {
	// Name is the workflow's name, unique in the lockfile.
	Name string `json:"name"`
	// Digest is Digest(Source); the hub checks it.
	Digest string `json:"digest"`
	// Source is the workflow definition as the station reads it.
	Source string `json:"source"`
}

// Bounds on a lockfile.
const (
	MaxLockedModules  = 1000
	MaxWorkflows      = 256
	MaxWorkflowSource = 256 << 10
	maxGrantEntries   = 256
	maxGrantEntry     = 1024
)

// Validate checks the lockfile's shape: well-formed ids, versions, digests
// and names, no duplicates, bounded sizes, and permission entries without
// control characters. Whether the pinned versions exist is the hub's check.
// The error is an *Error with CodeLockfileInvalid naming the entry.
func (l *Lockfile) Validate() error {
	bad := func(format string, args ...any) error {
		return Errorf(CodeLockfileInvalid, "lockfile: "+format, args...)
	}
	if len(l.Modules) > MaxLockedModules {
		return bad("%d modules; at most %d", len(l.Modules), MaxLockedModules)
	}
	if len(l.Workflows) > MaxWorkflows {
		return bad("%d workflows; at most %d", len(l.Workflows), MaxWorkflows)
	}
	seen := map[string]bool{}
	for i, m := range l.Modules {
		at := fmt.Sprintf("modules[%d]", i)
		if msg := CheckModuleID(m.ID); msg != "" {
			return bad("%s: id %q: %s", at, clip(m.ID), msg)
		}
		at += " (" + m.ID + ")"
		if seen[m.ID] {
			return bad("%s: the module is listed twice", at)
		}
		seen[m.ID] = true
		if msg := CheckVersion(m.Version); msg != "" {
			return bad("%s: version %q: %s", at, clip(m.Version), msg)
		}
		if !ValidDigest(m.ManifestDigest) {
			return bad(`%s: manifest_digest %q: want "sha256:" and 64 lower-case hex digits`, at, clip(m.ManifestDigest))
		}
		if !ValidDigest(m.WasmDigest) {
			return bad(`%s: wasm_digest %q: want "sha256:" and 64 lower-case hex digits`, at, clip(m.WasmDigest))
		}
		p := m.Permissions
		for _, g := range []struct {
			field string
			list  []string
		}{
			{"network", p.Network}, {"subprocess.allow", p.Subprocess.Allow},
			{"filesystem_writes", p.FilesystemWrites}, {"filesystem_reads", p.FilesystemReads},
			{"subprocess_env", p.Env},
		} {
			if err := checkGrants(g.list); err != nil {
				return bad("%s: permissions.%s: %v", at, g.field, err)
			}
		}
		if len(p.Secrets) > manifest.MaxSecrets {
			return bad("%s: permissions.secrets: %d secrets; at most %d", at, len(p.Secrets), manifest.MaxSecrets)
		}
		for j, sec := range p.Secrets {
			if msg := abi.CheckSecretName(sec.Name); msg != "" {
				return bad("%s: permissions.secrets[%d]: name %q: %s", at, j, clip(sec.Name), msg)
			}
			if len(sec.Hosts) == 0 {
				return bad("%s: permissions.secrets[%d] (%s): no hosts", at, j, sec.Name)
			}
			if err := checkGrants(sec.Hosts); err != nil {
				return bad("%s: permissions.secrets[%d] (%s).hosts: %v", at, j, sec.Name, err)
			}
			for _, in := range sec.In {
				if in != "headers" && in != "query" && in != "body" {
					return bad("%s: permissions.secrets[%d] (%s).in: %q is not headers, query or body", at, j, sec.Name, clip(in))
				}
			}
		}
	}
	names := map[string]bool{}
	for i, w := range l.Workflows {
		at := fmt.Sprintf("workflows[%d]", i)
		if msg := manifest.CheckName(w.Name, 64); msg != "" {
			return bad("%s: name %q: %s", at, clip(w.Name), msg)
		}
		at += " (" + w.Name + ")"
		if names[w.Name] {
			return bad("%s: the workflow is listed twice", at)
		}
		names[w.Name] = true
		switch {
		case len(w.Source) > MaxWorkflowSource:
			return bad("%s: source is larger than %d bytes", at, MaxWorkflowSource)
		case !utf8.ValidString(w.Source):
			return bad("%s: source is not valid UTF-8", at)
		case w.Digest != Digest([]byte(w.Source)):
			return bad("%s: digest %q is not the digest of its source (%s)", at, clip(w.Digest), Digest([]byte(w.Source)))
		}
	}
	return nil
}

func checkGrants(list []string) error {
	if len(list) > maxGrantEntries {
		return fmt.Errorf("%d entries; at most %d", len(list), maxGrantEntries)
	}
	for _, e := range list {
		switch {
		case e == "":
			return errors.New("an entry is empty")
		case len(e) > maxGrantEntry:
			return fmt.Errorf("entry %q: longer than %d bytes", clip(e), maxGrantEntry)
		case !utf8.ValidString(e):
			return fmt.Errorf("entry %q: not valid UTF-8", clip(e))
		}
		for _, r := range e {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				return fmt.Errorf("entry %q: contains the control character %U", clip(e), r)
			}
		}
	}
	return nil
}

// Names of accounts and teams follow the owner part of a module id:
// lower-case letters, digits and single hyphens, at most 39 characters. The
// grammar lives in package manifest, which defines module ids and versions.

// CheckName returns "" if s is a valid account or team name, or what is
// wrong with it.
func CheckName(s string) string { return manifest.CheckName(s, 39) }

// CheckModuleID returns "" if s is a valid module id, "owner/slug", or what
// is wrong with it (manifest.CheckID).
func CheckModuleID(s string) string { return manifest.CheckID(s) }

// CheckVersion returns "" if s is a semantic version as a manifest may
// declare it, or what is wrong with it (manifest.CheckVersion).
func CheckVersion(s string) string { return manifest.CheckVersion(s) }

// CompareVersions orders two semantic versions by semver precedence
// (manifest.CompareVersions).
func CompareVersions(a, b string) int { return manifest.CompareVersions(a, b) }
