package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/yamlx"
)

// decoder walks a yaml.Node tree, building a Workflow and collecting every
// problem.
type decoder struct {
	*yamlx.Decoder
	file string
	// where each expression and each needs entry was written, for the
	// errors of the graph check.
	exprAt  map[*Expr]*yaml.Node
	needsAt map[*Step][]*yaml.Node
	outAt   *yaml.Node
}

// err returns the collected errors sorted by position, joined.
func (d *decoder) err() error {
	if d.Len() == 0 {
		return nil
	}
	d.Sort()
	var errs []error
	for _, p := range d.Problems() {
		errs = append(errs, &Error{File: p.File, Line: p.Line, Column: p.Column, Field: p.Field, Msg: p.Msg})
	}
	return errors.Join(errs...)
}

// document parses data as exactly one YAML document and returns its value.
func (d *decoder) document(data []byte) *yaml.Node {
	doc, ok := d.Document(data)
	if !ok {
		return nil
	}
	root := yamlx.Root(doc)
	if root == nil || isNull(root) {
		d.Add(doc, "", "the workflow file is empty")
		return nil
	}
	return root
}

// field is one known key of a mapping and the function that decodes its
// value (yamlx.Field, under a name whose literals may be unkeyed).
type field yamlx.Field

// mapping decodes the mapping n at path (yamlx.Decoder.Mapping).
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) map[string]*yaml.Node {
	return d.Mapping(n, path, yamlx.Fields(fields))
}

var isNull = yamlx.IsNull

// duration decodes a duration of more than 0 and at most limit.
func (d *decoder) duration(n *yaml.Node, path string, limit time.Duration) time.Duration {
	t, _ := d.Duration(n, path, limit)
	return t
}

// identifier is a name usable after "steps." and "inputs." in expressions.
var identifier = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// module ids and command names, as manifests spell them.
var (
	moduleID    = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*/[a-z0-9]+(-[a-z0-9]+)*$`)
	commandName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)
)

func (d *decoder) decode(data []byte) *Workflow {
	d.Decoder = yamlx.New(d.file, "a workflow")
	root := d.document(data)
	if root == nil || !d.NoAliases(root) {
		return nil
	}
	d.exprAt = map[*Expr]*yaml.Node{}
	d.needsAt = map[*Step][]*yaml.Node{}
	wf := &Workflow{MaxParallel: DefaultMaxParallel}
	seen := d.mapping(root, "", []field{
		{"name", func(v *yaml.Node) {
			if s, ok := d.Str(v, "name"); ok {
				if strings.TrimSpace(s) == "" || len(s) > 128 || strings.ContainsAny(s, "\x00\r\n") {
					d.Add(v, "name", "must be one line of at most 128 characters")
				}
				wf.Name = s
			}
		}},
		{"description", func(v *yaml.Node) {
			if !isNull(v) {
				wf.Description, _ = d.Str(v, "description")
			}
		}},
		{"inputs", func(v *yaml.Node) { wf.Inputs = d.inputs(v) }},
		{"steps", func(v *yaml.Node) { wf.Steps = d.steps(v) }},
		{"output", func(v *yaml.Node) { d.outAt = v; wf.Output = d.template(v, "output") }},
		{"max_parallel", func(v *yaml.Node) { wf.MaxParallel, _ = d.Int(v, "max_parallel", 1, MaxParallelLimit) }},
	})
	if seen == nil {
		return nil
	}
	if seen["steps"] == nil {
		d.Add(root, "", `missing required field "steps"`)
	}
	return wf
}

func (d *decoder) inputs(n *yaml.Node) []Input {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.TypeError(n, "inputs", "a mapping of input names to their declarations")
		return nil
	}
	if len(n.Content)/2 > MaxInputs {
		d.Addf(n, "inputs", "too many inputs (%d; at most %d)", len(n.Content)/2, MaxInputs)
		return nil
	}
	var out []Input
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if d.MergeKey(k, "inputs") {
			continue
		}
		name, ok := d.Str(k, "inputs")
		if !ok {
			continue
		}
		path := "inputs." + name
		if !identifier.MatchString(name) {
			d.Addf(k, "inputs", "%s is not a valid input name (a letter, then letters, digits or _)", quote(name))
			continue
		}
		if line, dup := seen[name]; dup {
			d.Addf(k, "inputs", "duplicate input %q (first at line %d)", name, line)
			continue
		}
		seen[name] = k.Line
		in := Input{Name: name, Type: TypeString}
		var def, secretAt *yaml.Node
		if !isNull(v) {
			d.mapping(v, path, []field{
				{"type", func(v *yaml.Node) {
					s, ok := d.Str(v, path+".type")
					switch {
					case !ok:
					case s == TypeString || s == TypeNumber || s == TypeInteger || s == TypeBoolean || s == TypeObject || s == TypeArray || s == TypeAny:
						in.Type = s
					default:
						d.Addf(v, path+".type", "%s is not a type (string, number, integer, boolean, object, array or any)", quote(s))
					}
				}},
				{"required", func(v *yaml.Node) { in.Required, _ = d.Bool(v, path+".required") }},
				{"default", func(v *yaml.Node) { def = v }},
				{"description", func(v *yaml.Node) {
					if !isNull(v) {
						in.Description, _ = d.Str(v, path+".description")
					}
				}},
				{"secret", func(v *yaml.Node) {
					if in.Secret, _ = d.Bool(v, path+".secret"); in.Secret {
						secretAt = v
					}
				}},
			})
		}
		if in.Secret && in.Type != TypeString {
			d.Addf(secretAt, path+".secret", "a secret input is a string (this one is declared %s)", in.Type)
		}
		if in.Secret && def != nil {
			d.Add(def, path+".default", "a secret input has no default: a value written in the workflow file is not secret (store it with station secret set and pass ${{ secrets.NAME }}, or give it at run time)")
			def = nil
		}
		if def != nil {
			val, ok := d.plain(def, path+".default")
			if ok {
				if err := checkType(in.Type, val); err != nil {
					d.Add(def, path+".default", err.Error())
				}
				in.Default, in.HasDefault = val, true
			}
			if in.Required {
				d.Add(def, path, "a required input has no default")
			}
		}
		out = append(out, in)
	}
	return out
}

// plain decodes a YAML value without expressions into JSON-like Go values.
func (d *decoder) plain(n *yaml.Node, path string) (any, bool) {
	t := d.node(n, path, false)
	if t == nil {
		return nil, false
	}
	v, err := t.render(nil, newBudget())
	if err != nil {
		d.Add(n, path, err.Error())
		return nil, false
	}
	return v, true
}

func (d *decoder) steps(n *yaml.Node) []*Step {
	if n.Kind != yaml.SequenceNode || n.ShortTag() != "!!seq" {
		d.TypeError(n, "steps", "a list")
		return nil
	}
	if len(n.Content) == 0 {
		d.Add(n, "steps", "at least one step is required")
		return nil
	}
	if len(n.Content) > MaxSteps {
		d.Addf(n, "steps", "too many steps (%d; at most %d)", len(n.Content), MaxSteps)
		return nil
	}
	var out []*Step
	ids := map[string]int{}
	for i, item := range n.Content {
		path := fmt.Sprintf("steps[%d]", i)
		st := &Step{Timeout: DefaultTimeout, Retry: Retry{Attempts: 1, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff}, line: item.Line, col: item.Column}
		var withNode, usesNode *yaml.Node
		seen := d.mapping(item, path, []field{
			{"id", func(v *yaml.Node) {
				s, ok := d.Str(v, path+".id")
				if !ok {
					return
				}
				if !identifier.MatchString(s) {
					d.Addf(v, path+".id", "%s is not a valid step id (a letter, then letters, digits or _; it is used as steps.%s in expressions)", quote(s), "<id>")
					return
				}
				if line, dup := ids[s]; dup {
					d.Addf(v, path+".id", "duplicate step id %q (first at line %d)", s, line)
					return
				}
				ids[s] = v.Line
				st.ID = s
			}},
			{"description", func(v *yaml.Node) {
				if !isNull(v) {
					st.Description, _ = d.Str(v, path+".description")
				}
			}},
			{"uses", func(v *yaml.Node) { usesNode = v; d.uses(v, path, st) }},
			{"with", func(v *yaml.Node) { withNode = v }},
			{"needs", func(v *yaml.Node) { st.Needs = d.needs(v, path, st) }},
			{"if", func(v *yaml.Node) {
				s, ok := d.Str(v, path+".if")
				if !ok {
					return
				}
				x, err := parseCondition(s)
				if err != nil {
					d.Add(v, path+".if", err.Error())
					return
				}
				d.exprAt[x] = v
				st.If = x
			}},
			{"timeout", func(v *yaml.Node) { st.Timeout = d.duration(v, path+".timeout", MaxTimeout) }},
			{"retry", func(v *yaml.Node) { d.retry(v, path+".retry", &st.Retry) }},
			{"continue_on_error", func(v *yaml.Node) { st.ContinueOnError, _ = d.Bool(v, path+".continue_on_error") }},
		})
		if seen == nil {
			continue
		}
		for _, req := range []string{"id", "uses"} {
			if seen[req] == nil {
				d.Addf(item, path, "missing required field %q", req)
			}
		}
		if withNode != nil {
			st.With = d.template(withNode, path+".with")
			if st.Builtin == BuiltinLLM && st.With != nil {
				d.llmWith(withNode, path+".with")
			}
		} else if st.Builtin == BuiltinLLM && usesNode != nil {
			d.Add(item, path, `an llm step needs with: {prompt: ...} or with: {messages: [...]}`)
		}
		out = append(out, st)
	}
	return out
}

func (d *decoder) uses(v *yaml.Node, path string, st *Step) {
	s, ok := d.Str(v, path+".uses")
	if !ok {
		return
	}
	st.Uses = s
	if s == BuiltinLLM {
		st.Builtin = BuiltinLLM
		return
	}
	id, cmd, ok := strings.Cut(s, " ")
	switch {
	case !ok && !strings.Contains(s, "/"):
		d.Addf(v, path+".uses", "%s is not a built-in (llm) or a module command (\"owner/slug command\")", quote(s))
	case !ok:
		d.Addf(v, path+".uses", "%s names no command: write \"%s COMMAND\"", quote(s), s)
	case !moduleID.MatchString(id):
		d.Addf(v, path+".uses", "%s is not a module id (\"owner/slug\", lower-case letters, digits and hyphens)", quote(id))
	case !commandName.MatchString(cmd):
		d.Addf(v, path+".uses", "%s is not a command name (lower-case letters, digits and hyphens)", quote(cmd))
	default:
		st.Module, st.Command = id, cmd
	}
}

func (d *decoder) needs(n *yaml.Node, path string, st *Step) []string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		d.needsAt[st] = []*yaml.Node{n}
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		d.TypeError(n, path+".needs", "a step id or a list of step ids")
		return nil
	}
	var out []string
	for _, e := range n.Content {
		s, ok := d.Str(e, path+".needs")
		if !ok {
			continue
		}
		out = append(out, s)
		d.needsAt[st] = append(d.needsAt[st], e)
	}
	return out
}

func (d *decoder) retry(n *yaml.Node, path string, r *Retry) {
	seen := d.mapping(n, path, []field{
		{"attempts", func(v *yaml.Node) { r.Attempts, _ = d.Int(v, path+".attempts", 1, MaxAttempts) }},
		{"backoff", func(v *yaml.Node) { r.Backoff = d.duration(v, path+".backoff", MaxTimeout) }},
		{"max_backoff", func(v *yaml.Node) { r.MaxBackoff = d.duration(v, path+".max_backoff", MaxTimeout) }},
	})
	if seen != nil && r.MaxBackoff < r.Backoff {
		if seen["max_backoff"] != nil {
			d.Add(seen["max_backoff"], path+".max_backoff", "is shorter than backoff")
		} else {
			r.MaxBackoff = r.Backoff
		}
	}
}

// llmFields are the keys of an llm step's with.
var llmFields = []string{"model", "system", "prompt", "messages", "max_tokens", "temperature", "json"}

func (d *decoder) llmWith(n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		return // one expression: checked when it is rendered
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			continue // template reported it
		}
		known := false
		for _, f := range llmFields {
			known = known || f == k.Value
		}
		if !known {
			d.Add(k, path, "unknown field "+quote(k.Value)+" of an llm step"+yamlx.Suggest(k.Value, llmFields, "fields"))
		}
		seen[k.Value] = true
	}
	if !seen["prompt"] && !seen["messages"] {
		d.Add(n, path, "an llm step needs a prompt or messages")
	}
}

// template decodes a value that may hold expressions.
func (d *decoder) template(n *yaml.Node, path string) *Template {
	t := d.node(n, path, true)
	if t == nil {
		return nil
	}
	return &Template{root: t}
}

// node decodes a YAML value; with exprs, strings may hold ${{ }}.
func (d *decoder) node(n *yaml.Node, path string, exprs bool) tnode {
	switch n.Kind {
	case yaml.MappingNode:
		o := object{}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if d.MergeKey(k, path) {
				continue
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				d.Addf(k, path, "keys must be strings, not %s", d.Describe(k))
				continue
			}
			if line, dup := seen[k.Value]; dup {
				d.Addf(k, path, "duplicate key %q (first at line %d)", k.Value, line)
				continue
			}
			seen[k.Value] = k.Line
			if exprs && strings.Contains(k.Value, "${{") {
				d.Add(k, path, "keys cannot hold ${{ }}; only values can")
				continue
			}
			t := d.node(v, path+"."+k.Value, exprs)
			if t == nil {
				continue
			}
			o.keys = append(o.keys, k.Value)
			o.vals = append(o.vals, t)
		}
		return o
	case yaml.SequenceNode:
		a := array{}
		for i, e := range n.Content {
			if t := d.node(e, fmt.Sprintf("%s[%d]", path, i), exprs); t != nil {
				a = append(a, t)
			}
		}
		return a
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			if !exprs {
				return literal{n.Value}
			}
			t, err := parseString(n.Value)
			if err != nil {
				d.Add(n, path, err.Error())
				return nil
			}
			t.exprs(func(x *Expr) { d.exprAt[x] = n })
			return t
		case "!!null":
			return literal{nil}
		case "!!bool":
			var b bool
			n.Decode(&b)
			return literal{b}
		case "!!int":
			var i int
			if err := n.Decode(&i); err != nil {
				d.Addf(n, path, "%s is out of range for an integer", quote(n.Value))
				return nil
			}
			return literal{i}
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || f != f || f > 1e308 || f < -1e308 {
				d.Addf(n, path, "%s is not a finite number", quote(n.Value))
				return nil
			}
			return literal{f}
		}
	}
	d.Addf(n, path, "%s is not a JSON value; quote it", d.Describe(n))
	return nil
}

// graph checks every reference and the dependency graph, and computes each
// step's Deps.
func (d *decoder) graph(wf *Workflow) {
	index := map[string]int{}
	var ids []string // in file order, for "did you mean"
	for i, s := range wf.Steps {
		if s.ID != "" {
			index[s.ID] = i
			ids = append(ids, s.ID)
		}
	}
	// unknownStep words a reference to a step that does not exist, from
	// step self ("" for the output), which it never suggests. It costs an
	// edit distance per step: the callers use AddFunc.
	unknownStep := func(id, self string) string {
		others := slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == self })
		if len(others) == 0 {
			return "unknown step " + quote(id) + " (there is no other step)"
		}
		return yamlx.Unknown("step", id, others)
	}
	inputs := map[string]bool{}
	secretInput := map[string]bool{}
	var names []string
	for _, in := range wf.Inputs {
		inputs[in.Name] = true
		secretInput[in.Name] = in.Secret
		names = append(names, in.Name)
	}
	// checkExpr checks one expression's references; self is the step it
	// belongs to ("" for the output), where says what the expression is
	// part of (whereWith, whereLLM, whereIf or whereOutput).
	checkExpr := func(x *Expr, path, self string, deps map[string]bool, where int) {
		n := d.exprAt[x]
		d.checkSecrets(x, n, path, where, secretInput)
		for _, in := range x.inputs {
			switch {
			case inputs[in]:
			case len(names) == 0:
				d.Addf(n, path, "${{ %s }}: unknown input %s (the workflow declares no inputs)", x.Source, quote(in))
			default:
				d.AddFunc(n, path, func() string { return "${{ " + x.Source + " }}: " + yamlx.Unknown("input", in, names) })
			}
		}
		for _, id := range x.steps {
			switch _, ok := index[id]; {
			case id == self:
				d.Addf(n, path, "${{ %s }}: a step cannot use its own output", x.Source)
			case !ok:
				d.AddFunc(n, path, func() string { return "${{ " + x.Source + " }}: " + unknownStep(id, self) })
			default:
				deps[id] = true
			}
		}
	}
	for i, s := range wf.Steps {
		path := fmt.Sprintf("steps[%d]", i)
		deps := map[string]bool{}
		for j, id := range s.Needs {
			n := d.needsAt[s][j]
			switch _, ok := index[id]; {
			case id == s.ID:
				d.Add(n, path+".needs", "a step cannot need itself")
			case !ok:
				d.AddFunc(n, path+".needs", func() string { return unknownStep(id, s.ID) })
			default:
				deps[id] = true
			}
		}
		where := whereWith
		if s.Builtin == BuiltinLLM {
			where = whereLLM
		}
		s.With.expressions(func(x *Expr) {
			checkExpr(x, path+".with", s.ID, deps, where)
			if where != whereWith {
				return
			}
			for _, name := range x.secrets {
				if !slices.ContainsFunc(s.secrets, func(r SecretRef) bool { return r.Name == name }) {
					n := d.exprAt[x]
					s.secrets = append(s.secrets, SecretRef{Name: name, Line: n.Line, Column: n.Column})
				}
				if !slices.Contains(wf.secrets, name) {
					wf.secrets = append(wf.secrets, name)
				}
			}
		})
		if s.If != nil {
			checkExpr(s.If, path+".if", s.ID, deps, whereIf)
		}
		for _, o := range wf.Steps {
			if deps[o.ID] {
				s.Deps = append(s.Deps, o.ID)
			}
		}
	}
	wf.Output.expressions(func(x *Expr) { checkExpr(x, "output", "", map[string]bool{}, whereOutput) })
	if d.Len() > 0 {
		return // a cycle through an unknown step says nothing useful
	}
	// Cycles: depth-first, reporting each cycle once at its first step.
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(wf.Steps))
	var stack []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, wf.Steps[i].ID)
		for _, dep := range wf.Steps[i].Deps {
			j := index[dep]
			switch color[j] {
			case grey:
				k := len(stack) - 1
				for stack[k] != dep {
					k--
				}
				cycle := append(append([]string{}, stack[k:]...), dep)
				s := wf.Steps[index[dep]]
				d.Report(yamlx.Problem{Line: s.line, Column: s.col, Field: fmt.Sprintf("steps[%d]", index[dep]),
					Msg: "dependency cycle: " + strings.Join(cycle, " -> ")})
				return false
			case white:
				if !visit(j) {
					return false
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return true
	}
	for i := range wf.Steps {
		if color[i] == white && !visit(i) {
			return
		}
	}
}

// What an expression is part of, for checkSecrets.
const (
	whereWith   = iota // a module step's with
	whereLLM           // an llm step's with
	whereIf            // a step's if
	whereOutput        // the workflow's output
)

// checkSecrets refuses stored secrets (secrets.NAME) anywhere but in a
// module step's with, where the module's network gate substitutes them, and
// secret inputs where their value would leave the station or be printed: in
// an llm step (sent to the LLM provider) and in the output.
func (d *decoder) checkSecrets(x *Expr, n *yaml.Node, path string, where int, secretInput map[string]bool) {
	if len(x.secrets) > 0 {
		ref := "secrets." + x.secrets[0]
		switch where {
		case whereLLM:
			d.Addf(n, path, "${{ %s }}: an llm step cannot use %s: the station's own LLM client would send the placeholder, not the value, to its provider (pass secrets to module steps, whose network gate puts the value only in requests to the secret's hosts)", x.Source, ref)
		case whereIf:
			d.Addf(n, path, "${{ %s }}: a condition cannot use %s (it reads as a placeholder, never as the value; only a module step's with may pass a secret)", x.Source, ref)
		case whereOutput:
			d.Addf(n, path, "${{ %s }}: the output cannot hold %s (only a module step's with may pass a secret)", x.Source, ref)
		}
	}
	if x.dynamicInputs && where != whereIf && len(secretInput) > 0 {
		var names []string
		for name, secret := range secretInput {
			if secret {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			d.Addf(n, path, "${{ %s }}: in a workflow with secret inputs (%s), inputs is read only as inputs.<name>: an expression that reads them otherwise could record a secret one", x.Source, strings.Join(names, ", "))
		}
	}
	for _, in := range x.inputs {
		if !secretInput[in] {
			continue
		}
		switch where {
		case whereWith:
			if x.bare != in {
				d.Addf(n, path, "${{ %s }}: secret input %s can only be passed as it is, ${{ inputs.%s }} (alone or inside a string): what an expression computes from it would be recorded, where it cannot be redacted", x.Source, in, in)
			}
		case whereLLM:
			d.Addf(n, path, "${{ %s }}: inputs.%s is a secret input: an llm step would send its value to the LLM provider", x.Source, in)
		case whereOutput:
			d.Addf(n, path, "${{ %s }}: the output cannot hold secret input %s: the output is recorded and printed (where the value reads %s)", x.Source, in, Redacted)
		}
	}
}
