package workflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/yamlx"
)

// ModuleInfo is what Check needs to know about an installed module.
type ModuleInfo struct {
	ID, Version string
	// Commands are the commands its manifest declares.
	Commands []string
	// Permissions are the approved permissions, in plain words, one line
	// each (station.Permissions.Describe).
	Permissions []string
	// Problem, if set, is why the station would refuse to run it (for
	// example: its manifest asks for permissions that were not approved).
	Problem string
	// Secrets are the secrets its manifest declares (requires.secrets).
	Secrets []SecretInfo
}

// SecretInfo is one secret a module declares, and whether it has a value
// (never the value).
type SecretInfo struct {
	Name  string
	Hosts []string
	Set   bool
}

// Modules looks up installed modules. The error of a module that is not
// installed wraps store.ErrNotFound.
type Modules interface {
	Module(ctx context.Context, id string) (*ModuleInfo, error)
}

// Report is what a workflow will use, found before anything runs.
type Report struct {
	Workflow string         `json:"workflow"`
	File     string         `json:"file"`
	Digest   string         `json:"digest"`
	Steps    []StepReport   `json:"steps"`
	Modules  []ModuleReport `json:"modules"`
	// LLM is set when a step uses the llm built-in.
	LLM *LLMReport `json:"llm,omitempty"`
	// Problems are what makes the workflow unrunnable; empty when it can
	// run.
	Problems []string `json:"problems"`
	// Warnings are what may make a step fail although the workflow can
	// run: a secret a module declares, that no step passes, without a
	// value.
	Warnings []string `json:"warnings"`
}

// StepReport is one step of a Report.
type StepReport struct {
	ID    string   `json:"id"`
	Uses  string   `json:"uses"`
	Needs []string `json:"needs,omitempty"` // all dependencies, explicit and implied
}

// ModuleReport is one module a workflow uses.
type ModuleReport struct {
	ID          string   `json:"id"`
	Version     string   `json:"version,omitempty"`
	Commands    []string `json:"commands"` // the commands the workflow calls
	Steps       []string `json:"steps"`
	Permissions []string `json:"permissions"`
	Installed   bool     `json:"installed"`
	// Secrets are the secrets the module declares, whether they have a
	// value, and the steps that pass each by reference (secrets.NAME).
	Secrets []SecretReport `json:"secrets,omitempty"`
}

// SecretReport is one secret of a ModuleReport.
type SecretReport struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
	Set   bool     `json:"set"`
	// Steps pass it by reference (secrets.NAME); the module may also use
	// it without being passed it.
	Steps []string `json:"steps,omitempty"`
}

// LLMReport says which steps call the station's LLM provider.
type LLMReport struct {
	Steps []string `json:"steps"`
	// Provider describes the configured provider; "" when there is none.
	Provider string `json:"provider"`
}

// ErrCheck is wrapped by Check's error when the workflow cannot run.
var ErrCheck = errors.New("the workflow cannot run")

// Check finds every module and permission wf will use, before anything
// runs: each module must be installed, declare the commands the workflow
// calls and be runnable as approved; llm steps need a provider (provider
// describes it, "" for none; llmErr, if set, is why the configured one
// cannot be used). The Report is complete even when the error
// (which wraps ErrCheck) lists problems.
func Check(ctx context.Context, wf *Workflow, mods Modules, provider string, llmErr error) (*Report, error) {
	r := &Report{Workflow: wf.Name, File: wf.File, Digest: wf.Digest, Problems: []string{}, Warnings: []string{}}
	index := map[string]int{}
	declared := map[string][]string{}
	secrets := map[string][]SecretInfo{}
	for _, s := range wf.Steps {
		r.Steps = append(r.Steps, StepReport{ID: s.ID, Uses: s.Uses, Needs: s.Deps})
		if s.Builtin == BuiltinLLM {
			if r.LLM == nil {
				r.LLM = &LLMReport{Provider: provider}
			}
			r.LLM.Steps = append(r.LLM.Steps, s.ID)
			continue
		}
		i, seen := index[s.Module]
		if !seen {
			i = len(r.Modules)
			index[s.Module] = i
			r.Modules = append(r.Modules, ModuleReport{ID: s.Module, Permissions: []string{}})
			info, err := mods.Module(ctx, s.Module)
			switch {
			case errors.Is(err, store.ErrNotFound):
				r.Problems = append(r.Problems, fmt.Sprintf("module %s is not installed (install it with: station module install DIR)", s.Module))
			case err != nil:
				return nil, fmt.Errorf("check workflow %s: %w", wf.Name, err)
			default:
				m := &r.Modules[i]
				m.Installed, m.Version, m.Permissions = true, info.Version, info.Permissions
				if info.Problem != "" {
					r.Problems = append(r.Problems, fmt.Sprintf("module %s: %s", s.Module, info.Problem))
				}
				declared[s.Module] = info.Commands
				secrets[s.Module] = info.Secrets
				for _, sec := range info.Secrets {
					m.Secrets = append(m.Secrets, SecretReport{Name: sec.Name, Hosts: sec.Hosts, Set: sec.Set})
				}
			}
		}
		m := &r.Modules[i]
		m.Steps = append(m.Steps, s.ID)
		if !slices.Contains(m.Commands, s.Command) {
			m.Commands = append(m.Commands, s.Command)
		}
		if m.Installed {
			checkSecrets(r, wf, s, m, secrets[s.Module])
		}
	}
	for i := range r.Modules {
		if m := &r.Modules[i]; m.Installed {
			checkCommands(r, m, declared[m.ID])
			for _, sec := range m.Secrets {
				if !sec.Set && len(sec.Steps) == 0 {
					r.Warnings = append(r.Warnings, fmt.Sprintf("module %s declares secret %s, which has no value: a call that needs it will fail (set it with: station secret set %s --module %s)", m.ID, sec.Name, sec.Name, m.ID))
				}
			}
		}
	}
	switch {
	case r.LLM == nil:
	case llmErr != nil:
		r.Problems = append(r.Problems, fmt.Sprintf("steps %v use the llm built-in, but %v", r.LLM.Steps, llmErr))
	case provider == "":
		r.Problems = append(r.Problems, fmt.Sprintf("steps %v use the llm built-in, but %v", r.LLM.Steps, ErrNoLLM))
	}
	return r, r.err()
}

// checkSecrets reports each secret step s passes by reference
// (secrets.NAME) that its module does not declare, or that has no value: a
// placeholder the module may not send is refused by its network gate, and
// one without a value fails the request, after the steps before it ran.
func checkSecrets(r *Report, wf *Workflow, s *Step, m *ModuleReport, declared []SecretInfo) {
	for _, ref := range s.secrets {
		at := fmt.Sprintf("%s:%d:%d: step %s: ", wf.File, ref.Line, ref.Column, s.ID)
		i := slices.IndexFunc(m.Secrets, func(sec SecretReport) bool { return sec.Name == ref.Name })
		if i < 0 {
			var names []string
			for _, d := range declared {
				names = append(names, d.Name)
			}
			slices.Sort(names)
			has := "it declares no secrets"
			if len(names) > 0 {
				has = "it declares " + strings.Join(names, ", ")
			}
			r.Problems = append(r.Problems, fmt.Sprintf("%smodule %s does not declare secret %s (%s); a step can pass only the secrets its module declares in requires.secrets", at, m.ID, ref.Name, has))
			continue
		}
		sec := &m.Secrets[i]
		if !slices.Contains(sec.Steps, s.ID) {
			sec.Steps = append(sec.Steps, s.ID)
		}
		if !sec.Set {
			r.Problems = append(r.Problems, fmt.Sprintf("%ssecret %s of module %s has no value (set it with: station secret set %s --module %s)", at, ref.Name, m.ID, ref.Name, m.ID))
		}
	}
}

// checkCommands reports each command the workflow calls that the module
// does not declare, with the closest declared one when one is close.
func checkCommands(r *Report, m *ModuleReport, declared []string) {
	for _, c := range m.Commands {
		if slices.Contains(declared, c) {
			continue
		}
		msg := fmt.Sprintf("module %s has no command %q", m.ID, c)
		if best := yamlx.Closest(c, declared); best != "" {
			msg += fmt.Sprintf("; did you mean %q?", best)
		} else {
			msg += fmt.Sprintf(" (its commands: %v)", declared)
		}
		r.Problems = append(r.Problems, msg)
	}
}

func (r *Report) err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	errs := []error{fmt.Errorf("workflow %s: %w", r.Workflow, ErrCheck)}
	for _, p := range r.Problems {
		errs = append(errs, errors.New("  "+p))
	}
	return errors.Join(errs...)
}
