package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/station-dev/station/internal/yamlx"
)

// checkType checks a decoded JSON value (as fromJSON returns it) against an
// input type.
func checkType(typ string, v any) error {
	ok := false
	switch typ {
	case TypeAny:
		ok = true
	case TypeString:
		_, ok = v.(string)
	case TypeBoolean:
		_, ok = v.(bool)
	case TypeNumber:
		switch v.(type) {
		case int, float64:
			ok = true
		}
	case TypeInteger:
		switch n := v.(type) {
		case int:
			ok = true
		case float64:
			ok = n == math.Trunc(n) && math.Abs(n) < 1<<53
		}
	case TypeObject:
		_, ok = v.(map[string]any)
	case TypeArray:
		_, ok = v.([]any)
	}
	if !ok {
		return fmt.Errorf("must be %s, not %s", typeArticle(typ), typeName(v))
	}
	return nil
}

func typeArticle(typ string) string {
	switch typ {
	case TypeString, TypeNumber, TypeBoolean, TypeArray:
		return "a " + typ
	case TypeInteger, TypeObject:
		return "an " + typ
	}
	return typ
}

// ParseValue converts a command-line value (--input name=value) for in: a
// string input takes the text as it is; any other type reads it as JSON
// (an "any" input falls back to the text when it is not JSON).
func (in Input) ParseValue(s string) (any, error) {
	if in.Type == TypeString {
		return s, nil
	}
	v, err := fromJSON([]byte(s))
	if err != nil || !json.Valid([]byte(s)) {
		if in.Type == TypeAny {
			return s, nil
		}
		return nil, fmt.Errorf("input %s: %q is not %s", in.Name, s, typeArticle(in.Type))
	}
	if err := checkType(in.Type, v); err != nil {
		return nil, fmt.Errorf("input %s: %w", in.Name, err)
	}
	return v, nil
}

// Input returns the declared input name, or nil.
func (w *Workflow) Input(name string) *Input {
	for i := range w.Inputs {
		if w.Inputs[i].Name == name {
			return &w.Inputs[i]
		}
	}
	return nil
}

// ResolveInputs checks given values against the declared inputs and fills
// in defaults: an undeclared or mistyped input, or a missing required one,
// is an error (all of them are reported).
func (w *Workflow) ResolveInputs(given map[string]any) (map[string]any, error) {
	var errs []error
	out := make(map[string]any, len(w.Inputs))
	names := make([]string, 0, len(given))
	for name := range given {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		in := w.Input(name)
		if in == nil {
			var known []string
			for _, in := range w.Inputs {
				known = append(known, in.Name)
			}
			hint := yamlx.Suggest(name, known, "inputs")
			if len(known) == 0 {
				hint = " (it declares none)"
			}
			errs = append(errs, fmt.Errorf("workflow %s has no input %s%s", w.Name, yamlx.Quote(name), hint))
			continue
		}
		v := numbers(given[name])
		if err := checkType(in.Type, v); err != nil {
			errs = append(errs, fmt.Errorf("input %s: %w", name, err))
			continue
		}
		if in.Secret {
			if err := checkSecretInput(in, v); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		out[name] = v
	}
	for _, in := range w.Inputs {
		if _, ok := out[in.Name]; ok {
			continue
		}
		switch {
		case in.HasDefault:
			out[in.Name] = in.Default
		case in.Required:
			errs = append(errs, fmt.Errorf("input %s is required (--input %s=VALUE)", in.Name, in.Name))
		default:
			out[in.Name] = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
