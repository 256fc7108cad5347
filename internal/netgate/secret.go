package netgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/station-dev/station/sdk/abi"
)

// Secret is one secret of the gate's module (requires.secrets): the hosts
// its value may be sent to and where in a request. The module writes the
// secret's placeholder (abi.SecretPlaceholder); the gate replaces it with
// the value, from Options.Secrets' source, only in a request to one of
// Hosts, after the allowlist allowed the request, and denies a request
// that carries a placeholder anywhere else.
type Secret struct {
	// Name is the secret's name (abi.CheckSecretName).
	Name string
	// Hosts are the allowlist entries the value may be sent to.
	Hosts []string
	// Query and Body allow the value in the URL's path and query and in
	// the body; it is always allowed in header values.
	Query, Body bool
}

// SecretSource gives the value of a module's secret when a request needs
// it, so a value set after the module was loaded is used at once. An unset
// secret is an error that says how to set it (ErrSecretNotSet).
type SecretSource interface {
	SecretValue(ctx context.Context, module, name string) ([]byte, error)
}

// ErrSecretNotSet is wrapped by a SecretSource's error for a secret that
// has no value.
var ErrSecretNotSet = errors.New("secret is not set")

// secrets is the gate's compiled view of its module's secrets.
type secrets struct {
	list   []secret
	source SecretSource
}

type secret struct {
	Secret
	hosts *Allowlist
}

func compileSecrets(module string, in []Secret, src SecretSource) (*secrets, error) {
	s := &secrets{source: src}
	for _, sec := range in {
		if msg := abi.CheckSecretName(sec.Name); msg != "" {
			return nil, fmt.Errorf("netgate: module %s: secret %q: %s", module, sec.Name, msg)
		}
		hosts, err := Compile(sec.Hosts)
		if err != nil {
			return nil, fmt.Errorf("netgate: module %s: secret %s: %w", module, sec.Name, err)
		}
		if len(sec.Hosts) == 0 {
			return nil, fmt.Errorf("netgate: module %s: secret %s is bound to no host", module, sec.Name)
		}
		s.list = append(s.list, secret{sec, hosts})
	}
	if len(s.list) > 0 && src == nil {
		return nil, fmt.Errorf("netgate: module %s declares secrets but the gate has no secret source", module)
	}
	return s, nil
}

func (s *secrets) find(name string) *secret {
	for i := range s.list {
		if s.list[i].Name == name {
			return &s.list[i]
		}
	}
	return nil
}

// use is one placeholder in a request: the secret it names ("" for a
// malformed placeholder) and where it is.
type use struct {
	name  string
	place string // "header" (a value), "header name", "url" or "body"
}

// uses lists the placeholders in o, each name and place once.
func (o *outgoing) uses() []use {
	var out []use
	add := func(s, place string) {
		for from := 0; ; {
			_, end, name, ok := abi.FindSecret(s, from)
			if !ok {
				return
			}
			u := use{name, place}
			found := false
			for _, have := range out {
				if have == u {
					found = true
					break
				}
			}
			if !found {
				out = append(out, u)
			}
			from = end
		}
	}
	if strings.Contains(o.target.url.RawPath+o.target.url.Path+o.target.url.RawQuery, abi.SecretPrefix) {
		add(o.target.url.EscapedPath(), "url")
		add(o.target.url.RawQuery, "url")
	}
	for k, vs := range o.header {
		if strings.Contains(strings.ToLower(k), abi.SecretPrefix) {
			// Canonicalised: the name's case is not the module's.
			out = append(out, use{"", "header name"})
		}
		for _, v := range vs {
			add(v, "header")
		}
	}
	if bytes.Contains(o.body, []byte(abi.SecretPrefix)) {
		add(string(o.body), "body")
	}
	return out
}

// checkSecrets decides whether the placeholders of the current hop may be
// replaced in a request to t: every placeholder names a secret of the
// module, bound to t, in a place the secret allows. It returns the reason
// for a denial, or "".
func (g *Gate) checkSecrets(uses []use, t *target) string {
	for _, u := range uses {
		if u.place == "header name" {
			return "carries a secret placeholder in a header name; a secret goes in a header value"
		}
		if u.name == "" {
			return "carries a malformed secret placeholder (" + u.place + "): write " + abi.SecretPlaceholder("NAME") + " with a name the manifest declares"
		}
		s := g.secrets.find(u.name)
		if s == nil {
			return "carries the placeholder of secret " + u.name + ", which the module does not declare (requires.secrets)"
		}
		if !s.hosts.Allows(t.scheme, t.host, t.port) {
			return "carries the placeholder of secret " + u.name + ", which is bound to " + s.hosts.String() + " only"
		}
		switch {
		case u.place == "url" && !s.Query:
			return "carries the placeholder of secret " + u.name + " in the URL; the manifest allows it in headers only (add query to its in:)"
		case u.place == "body" && !s.Body:
			return "carries the placeholder of secret " + u.name + " in the body; the manifest allows it there only with body in its in:"
		}
	}
	return ""
}

// secretValues are a request's secret values: each of the module's secrets
// that has one, and why the others have none. They are read once per
// request, for the substitution of every hop and for the redaction of the
// response.
type secretValues struct {
	vals    map[string][]byte
	missing map[string]error
}

func (g *Gate) values(ctx context.Context) *secretValues {
	v := &secretValues{vals: map[string][]byte{}, missing: map[string]error{}}
	for _, s := range g.secrets.list {
		b, err := g.secrets.source.SecretValue(ctx, g.module, s.Name)
		if err != nil {
			v.missing[s.Name] = err
			continue
		}
		v.vals[s.Name] = b
	}
	return v
}

// need returns an error for the first secret the uses name that has no
// usable value (the source's error says how to set it).
func (v *secretValues) need(module string, uses []use) error {
	for _, u := range uses {
		if err := v.missing[u.name]; err != nil {
			return err
		}
		if !validHeaderValue(string(v.vals[u.name])) {
			return fmt.Errorf("secret %s of module %s has a control character (CR, LF, NUL, ...) in its value, which no header may carry: set it again", u.name, module)
		}
	}
	return nil
}

// substituted returns a copy of o with every placeholder replaced by its
// value: in header values as is, in the URL escaped for its part, in the
// body as is. o itself, which a redirect's next hop is built from, keeps
// the placeholders.
func (o *outgoing) substituted(vals map[string][]byte) *outgoing {
	c := *o
	c.header = make(http.Header, len(o.header))
	for k, vs := range o.header {
		nv := make([]string, len(vs))
		for i, v := range vs {
			nv[i] = replace(v, vals, same)
		}
		c.header[k] = nv
	}
	u := &c.target.url
	if strings.Contains(u.RawQuery, abi.SecretPrefix) {
		u.RawQuery = replace(u.RawQuery, vals, url.QueryEscape)
	}
	if strings.Contains(u.Path, abi.SecretPrefix) {
		// In the escaped path, so that a value with "/" stays one segment.
		raw := replace(u.EscapedPath(), vals, url.PathEscape)
		if p, err := url.PathUnescape(raw); err == nil {
			u.Path, u.RawPath = p, raw
		}
	}
	if bytes.Contains(o.body, []byte(abi.SecretPrefix)) {
		c.body = []byte(replace(string(o.body), vals, same))
	}
	return &c
}

func same(s string) string { return s }

// replace replaces each placeholder in s whose secret has a value in vals
// with escape(value).
func replace(s string, vals map[string][]byte, escape func(string) string) string {
	if !strings.Contains(s, abi.SecretPrefix) {
		return s
	}
	var b strings.Builder
	from := 0
	for {
		start, end, name, ok := abi.FindSecret(s, from)
		if !ok {
			break
		}
		v, have := vals[name]
		if !have {
			b.WriteString(s[from:end])
			from = end
			continue
		}
		b.WriteString(s[from:start])
		b.WriteString(escape(string(v)))
		from = end
	}
	b.WriteString(s[from:])
	return b.String()
}

// redactor replaces secret values, in the forms the gate may have sent
// them, with their placeholders.
type redactor struct {
	olds [][]byte
	news [][]byte
}

func newRedactor(vals map[string][]byte) *redactor {
	r := &redactor{}
	for name, v := range vals {
		if len(v) == 0 {
			continue
		}
		p := []byte(abi.SecretPlaceholder(name))
		for _, form := range []string{string(v), url.QueryEscape(string(v)), url.PathEscape(string(v))} {
			r.olds = append(r.olds, []byte(form))
			r.news = append(r.news, p)
		}
	}
	return r
}

func (r *redactor) bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for i, old := range r.olds {
		if bytes.Contains(b, old) {
			b = bytes.ReplaceAll(b, old, r.news[i])
		}
	}
	return b
}

func (r *redactor) string(s string) string {
	if r == nil {
		return s
	}
	for i, old := range r.olds {
		if strings.Contains(s, string(old)) {
			s = strings.ReplaceAll(s, string(old), string(r.news[i]))
		}
	}
	return s
}

// header redacts every value of h in place.
func (r *redactor) header(h http.Header) {
	if r == nil {
		return
	}
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = r.string(v)
		}
		if rk := r.string(k); rk != k {
			delete(h, k)
			h[rk] = vs
		}
	}
}

// err returns err with every secret value in its text replaced by its
// placeholder (the error keeps what it wraps, for errors.Is).
func (r *redactor) err(err error) error {
	if r == nil || err == nil {
		return err
	}
	msg := err.Error()
	if red := r.string(msg); red != msg {
		return &redactedError{red, err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
