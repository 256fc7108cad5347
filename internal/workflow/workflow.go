package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// MaxFileSize bounds a workflow file.
const MaxFileSize = 1 << 20

// Bounds and defaults of a workflow's settings.
const (
	MaxSteps           = 256
	MaxInputs          = 64
	DefaultMaxParallel = 4
	MaxParallelLimit   = 64
	DefaultTimeout     = 10 * time.Minute
	MaxTimeout         = time.Hour
	MaxAttempts        = 10
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 30 * time.Second
)

// Workflow is a parsed and validated workflow file.
type Workflow struct {
	// Name names the workflow (default: the file name without extension).
	Name        string
	Description string
	// File is the path the workflow was read from; Digest is the sha256 of
	// its contents ("sha256:<hex>").
	File   string
	Digest string
	// Inputs are the declared inputs, in file order.
	Inputs []Input
	// Steps are the steps, in file order.
	Steps []*Step
	// Output renders the run's output; nil means an object of every
	// step's output keyed by step id.
	Output *Template
	// MaxParallel bounds how many steps run at once.
	MaxParallel int

	// secrets are the names of the stored secrets the steps reference.
	secrets []string
}

// Input types.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeObject  = "object"
	TypeArray   = "array"
	TypeAny     = "any"
)

// Input is a declared input.
type Input struct {
	Name        string
	Type        string // one of the Type constants; default string
	Required    bool
	Default     any // the decoded default; nil with HasDefault false when none
	HasDefault  bool
	Description string
	// Secret marks an input whose value is redacted wherever the run is
	// recorded or shown (Redacted), and not stored: a resume is given it
	// again. A secret input is a string without a default.
	Secret bool
}

// The built-in steps.
const (
	BuiltinLLM = "llm"
)

// Step is one step.
type Step struct {
	ID          string
	Description string
	// Uses is as written: "owner/slug command" or a built-in ("llm").
	Uses string
	// Module and Command are set for a module step; Builtin for a built-in.
	Module, Command string
	Builtin         string
	// With renders the step's input; nil means {}.
	With *Template
	// Needs are the explicit dependencies; Deps are those plus the steps
	// With and If reference, in file order.
	Needs []string
	Deps  []string
	// If, if set, is the condition under which the step runs.
	If              *Expr
	Timeout         time.Duration
	Retry           Retry
	ContinueOnError bool

	line, col int
	// secrets are the stored secrets the step's with references
	// (secrets.NAME), where each is written.
	secrets []SecretRef
}

// SecretRef is one reference to a stored secret (secrets.NAME) in a
// step's with, and where it is written.
type SecretRef struct {
	Name         string
	Line, Column int
}

// Secrets returns the stored secrets the step passes by reference, one
// per name, first reference first.
func (s *Step) Secrets() []SecretRef { return s.secrets }

// Retry says how often a failed step is tried and how long to wait between
// tries: Backoff after the first failure, doubling up to MaxBackoff.
type Retry struct {
	Attempts   int // total tries, at least 1
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Delay returns the wait before try n+1 after n failed tries (n >= 1).
func (r Retry) Delay(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// Load reads and parses the workflow file path.
func Load(path string) (*Workflow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load workflow: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load workflow %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse parses and validates a workflow file's contents: strict YAML
// (unknown fields, wrong types and duplicate keys are errors), every
// expression compiled, every reference to a step or an input known, and the
// steps' dependencies free of cycles. filename is used in errors. The
// errors are *Error values joined with errors.Join, sorted by position.
func Parse(filename string, data []byte) (*Workflow, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: filename, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxFileSize)}
	}
	d := &decoder{file: filename}
	wf := d.decode(data)
	if wf != nil {
		d.graph(wf)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	wf.File = filename
	wf.Digest = "sha256:" + hex.EncodeToString(sum[:])
	if wf.Name == "" {
		base := filepath.Base(filename)
		wf.Name = base[:len(base)-len(filepath.Ext(base))]
	}
	return wf, nil
}

// Step returns the step with id, or nil.
func (w *Workflow) Step(id string) *Step {
	for _, s := range w.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// hasSecretInputs reports whether w declares a secret input.
func (w *Workflow) hasSecretInputs() bool {
	for _, in := range w.Inputs {
		if in.Secret {
			return true
		}
	}
	return false
}
