package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/sandbox"
)

// Secret inputs (inputs declared secret: true). Their values reach the
// module steps that use them and nothing else the station keeps or prints:
// the run's recorded inputs hold Redacted in their place, and every
// document and message a run records or shows (a step's input, output and
// errors, the run's output and error, the progress events) has each value
// replaced by Redacted, in the forms it may take there (as it is,
// JSON-escaped, Go-quoted). A step's recorded input is rendered a second
// time from the redacted inputs, so that a value an expression transformed
// (upper, toBase64, ...) is not recorded either. What a module does with a
// value it was given (encode it in its output, send it somewhere its gates
// allow) is the module's: a secret it must not hold is a stored secret
// (secrets.NAME), which it never sees.

// Redacted is what a secret input's value reads as wherever a run is
// recorded or shown.
const Redacted = "[secret]"

// Bounds of a secret input's value.
const (
	// MinSecretInput is the shortest value of a secret input: a shorter one
	// is no secret, and redacting it would take it out of every word it
	// occurs in.
	MinSecretInput = 4
	// MaxSecretInput bounds a secret input's value (an API key, a token, a
	// PEM key); with MaxInputs it bounds the work of redaction.
	MaxSecretInput = 16 << 10
)

// checkSecretInput checks the value given for secret input in, without
// ever quoting it.
func checkSecretInput(in *Input, v any) error {
	s, ok := v.(string)
	switch {
	case v == nil:
		return nil
	case !ok:
		return fmt.Errorf("input %s is secret and must be a string, not %s", in.Name, typeName(v))
	case s == "":
		return nil
	case len(s) < MinSecretInput:
		return fmt.Errorf("input %s is secret, and its value is %d bytes: a secret has at least %d", in.Name, len(s), MinSecretInput)
	case len(s) > MaxSecretInput:
		return fmt.Errorf("input %s is secret, and its value is %d bytes: at most %d", in.Name, len(s), MaxSecretInput)
	}
	return nil
}

// redactor replaces secret values with Redacted. A nil *redactor redacts
// nothing.
type redactor struct {
	forms []form // longest first
}

// form is one spelling of a value, with the smallest shift at which it can
// occur again overlapping itself (its length minus its longest border), so
// that overlapping occurrences are found without trying every offset.
type form struct {
	s     string
	shift int
}

// newRedactor returns the redactor of values ("" is ignored), or nil when
// there is nothing to redact.
func newRedactor(values []string) *redactor {
	var spellings []string
	for _, v := range values {
		if v == "" {
			continue
		}
		spellings = append(spellings, v)
		if j, err := json.Marshal(v); err == nil {
			spellings = append(spellings, string(j[1:len(j)-1]))
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			j := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
			spellings = append(spellings, string(j[1:len(j)-1]))
		}
		q := strconv.Quote(v)
		spellings = append(spellings, q[1:len(q)-1])
		q = strconv.QuoteToASCII(v)
		spellings = append(spellings, q[1:len(q)-1])
	}
	if len(spellings) == 0 {
		return nil
	}
	slices.SortFunc(spellings, func(a, b string) int { return len(b) - len(a) })
	spellings = slices.Compact(spellings)
	r := &redactor{}
	for _, s := range spellings {
		r.forms = append(r.forms, form{s: s, shift: len(s) - border(s)})
	}
	return r
}

// border returns the length of the longest proper prefix of s that is also
// a suffix of s (the KMP failure function at its end).
func border(s string) int {
	f := make([]int, len(s))
	k := 0
	for i := 1; i < len(s); i++ {
		for k > 0 && s[i] != s[k] {
			k = f[k-1]
		}
		if s[i] == s[k] {
			k++
		}
		f[i] = k
	}
	if len(s) == 0 {
		return 0
	}
	return f[len(s)-1]
}

// text replaces every occurrence of every form in s, overlapping ones
// included, by Redacted: a run of covered bytes becomes one Redacted.
func (r *redactor) text(s string) string {
	if r == nil || s == "" {
		return s
	}
	var covered []bool // allocated at the first match
	mark := func(from, to int) {
		if covered == nil {
			covered = make([]bool, len(s))
		}
		for j := from; j < to; j++ {
			covered[j] = true
		}
	}
	for _, f := range r.forms {
		m, p := len(f.s), f.shift // p is f's smallest period
		end := 0                  // the end of what this form covered so far
		for from := 0; from+m <= len(s); {
			i := strings.Index(s[from:], f.s)
			if i < 0 {
				break
			}
			i += from
			mark(max(i, end), i+m)
			// Occurrences one period apart: f occurs at i+p when the p
			// bytes after this one are f's last p, which costs p, not m
			// (a long periodic value repeated cannot make this quadratic).
			for p < m && i+p+m <= len(s) && s[i+m:i+p+m] == f.s[m-p:] {
				mark(i+m, i+p+m)
				i += p
			}
			end = i + m
			// Two occurrences are at least a period apart, and the next
			// period was just tried.
			from = i + p
			if p < m {
				from++
			}
		}
	}
	if covered == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !covered[i] {
			j := i
			for j < len(s) && !covered[j] {
				j++
			}
			b.WriteString(s[i:j])
			i = j
			continue
		}
		b.WriteString(Redacted)
		for i < len(s) && covered[i] {
			i++
		}
	}
	return b.String()
}

// value redacts a decoded JSON value (keys, strings, and numbers whose text
// holds a value); changed reports whether anything was.
func (r *redactor) value(v any) (out any, changed bool) {
	switch v := v.(type) {
	case string:
		red := r.text(v)
		return red, red != v
	case json.Number:
		if red := r.text(string(v)); red != string(v) {
			return red, true
		}
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			rk := r.text(k)
			re, c := r.value(e)
			changed = changed || c || rk != k
			m[rk] = re
		}
		if changed {
			return m, true
		}
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			re, c := r.value(e)
			changed = changed || c
			l[i] = re
		}
		if changed {
			return l, true
		}
	}
	return v, false
}

// json redacts a JSON document by walking its decoded value (so that a
// value is found however the document escapes it); b is returned as it is
// when nothing was redacted. A document that is not JSON is redacted as
// text.
func (r *redactor) json(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []byte(r.text(string(b)))
	}
	if _, err := dec.Token(); err != io.EOF {
		return []byte(r.text(string(b)))
	}
	red, changed := r.value(v)
	if !changed {
		return b
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(red); err != nil {
		return []byte(strconv.Quote(Redacted))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// err returns err with its message redacted. The error still answers
// errors.As for the *host.CallError and *sandbox.Violation in it (the exit
// code and the daemon's answer depend on them), as redacted copies; err is
// returned as it is when its message holds no value.
func (r *redactor) err(err error) error {
	if r == nil || err == nil {
		return err
	}
	msg := err.Error()
	red := r.text(msg)
	if red == msg {
		return err
	}
	e := &redactedError{msg: red}
	var ce *host.CallError
	var v *sandbox.Violation
	switch {
	case errors.As(err, &ce):
		c := *ce
		c.Msg = r.text(c.Msg)
		c.Violation = r.violation(c.Violation)
		if c.Limit != nil {
			l := *c.Limit
			l.Target, l.Reason = r.text(l.Target), r.text(l.Reason)
			c.Limit = &l
		}
		e.wrapped = &c
	case errors.As(err, &v):
		e.wrapped = r.violation(v)
	}
	return e
}

func (r *redactor) violation(v *sandbox.Violation) *sandbox.Violation {
	if v == nil {
		return nil
	}
	c := *v
	c.Target, c.Reason = r.text(c.Target), r.text(c.Reason)
	return &c
}

// redactedError is an error whose message had secret values in it: only
// the redacted message and redacted copies of the call's error are kept.
type redactedError struct {
	msg     string
	wrapped error // a *host.CallError, a *sandbox.Violation or nil
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.wrapped }
