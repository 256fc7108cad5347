package netgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

const stripeKey = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"

// values is a SecretSource over a table, counting lookups.
type values struct {
	mu   sync.Mutex
	vals map[string]string // "module/NAME" -> value
	n    int
}

func (v *values) SecretValue(_ context.Context, module, name string) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	s, ok := v.vals[module+"/"+name]
	if !ok {
		return nil, fmt.Errorf("%w: %s for %s", ErrSecretNotSet, name, module)
	}
	return []byte(s), nil
}

// seen records every request a fixture received, whole.
type seen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seen) handler(reply func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL.RequestURI())
		r.Header.Write(&b)
		b.Write(body)
		s.mu.Lock()
		s.reqs = append(s.reqs, b.String())
		s.mu.Unlock()
		if reply != nil {
			reply(w, r, body)
		}
	}
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n---\n")
}

func (w *world) secretGate(module string, allow []string, secrets []Secret, src SecretSource) *Gate {
	w.t.Helper()
	return w.gateWith(Options{Module: module, Secrets: secrets, SecretSource: src}, allow...)
}

var placeholder = abi.SecretPlaceholder("STRIPE_KEY")

// TestSecretSentOnlyToItsHost is the must-hold at the gate: the
// bound host receives the value, an allowed but unbound host receives
// nothing (the request is denied and recorded), and the value is in no
// decision and no response the module reads.
func TestSecretSentOnlyToItsHost(t *testing.T) {
	w := newWorld(t)
	var stripe, other seen
	w.https("api.stripe.com", stripe.handler(func(rw http.ResponseWriter, r *http.Request, body []byte) {
		// A server that echoes what it was sent, in a header and the body.
		rw.Header().Set("X-Echo", r.Header.Get("Authorization"))
		fmt.Fprintf(rw, "you sent %s", r.Header.Get("Authorization"))
	}))
	w.https("api.groq.com", other.handler(nil))
	src := &values{vals: map[string]string{"dave/stripe/STRIPE_KEY": stripeKey}}
	g := w.secretGate("dave/stripe", []string{"api.stripe.com", "api.groq.com"},
		[]Secret{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}}}, src)

	resp, err := g.Do(callCtx(t), &abi.HTTPRequest{
		Method: "POST", URL: "https://api.stripe.com/v1/charges",
		Headers: map[string][]string{"Authorization": {"Bearer " + placeholder}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := stripe.all(); !strings.Contains(got, "Authorization: Bearer "+stripeKey) {
		t.Fatalf("api.stripe.com did not receive the key:\n%s", got)
	}
	// The echo comes back as the placeholder.
	if strings.Contains(string(resp.Body), stripeKey) || strings.Contains(fmt.Sprint(resp.Headers), stripeKey) {
		t.Fatalf("the response the module reads carries the key: %q %v", resp.Body, resp.Headers)
	}
	if got, want := string(resp.Body), "you sent Bearer "+placeholder; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	if got := resp.Headers["X-Echo"]; len(got) != 1 || got[0] != "Bearer "+placeholder {
		t.Errorf("X-Echo = %q", got)
	}

	// Allowed by the allowlist, but not a host the secret is bound to.
	_, err = g.Do(callCtx(t), &abi.HTTPRequest{
		URL: "https://api.groq.com/v1/models", Headers: map[string][]string{"Authorization": {"Bearer " + placeholder}},
	})
	var v *sandbox.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Reason, "secret STRIPE_KEY, which is bound to api.stripe.com only") {
		t.Fatalf("err = %v, want a violation naming the binding", err)
	}
	if got := other.all(); got != "" {
		t.Fatalf("api.groq.com received a request:\n%s", got)
	}
	last := w.rec.All()[len(w.rec.All())-1]
	if last.Allowed || last.Target != "api.groq.com:443" {
		t.Errorf("last decision = %+v, want the denial of api.groq.com:443", last)
	}
	for _, d := range w.rec.All() {
		if strings.Contains(fmt.Sprintf("%+v", d), stripeKey) {
			t.Errorf("a decision carries the key: %+v", d)
		}
	}
}

func TestSecretPlaces(t *testing.T) {
	w := newWorld(t)
	var got seen
	w.https("api.stripe.com", got.handler(func(rw http.ResponseWriter, r *http.Request, body []byte) {
		fmt.Fprintf(rw, "%s %s", r.URL.RequestURI(), body)
	}))
	src := &values{vals: map[string]string{"m/o/STRIPE_KEY": "a b&c/d", "m/o/OTHER": "zzz-other"}}
	headersOnly := w.secretGate("m/o", []string{"api.stripe.com"}, []Secret{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}}}, src)
	everywhere := w.secretGate("m/o", []string{"api.stripe.com"}, []Secret{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}, Query: true, Body: true}}, src)

	deny := []struct {
		name string
		g    *Gate
		req  abi.HTTPRequest
		want string
	}{
		{"query without opt-in", headersOnly, abi.HTTPRequest{URL: "https://api.stripe.com/v1?key=" + placeholder}, "in the URL"},
		{"path without opt-in", headersOnly, abi.HTTPRequest{URL: "https://api.stripe.com/" + placeholder}, "in the URL"},
		{"body without opt-in", headersOnly, abi.HTTPRequest{Method: "POST", URL: "https://api.stripe.com/v1", Body: []byte(`{"k":"` + placeholder + `"}`)}, "in the body"},
		{"header name", everywhere, abi.HTTPRequest{URL: "https://api.stripe.com/v1", Headers: map[string][]string{placeholder: {"x"}}}, "header name"},
		{"undeclared secret", everywhere, abi.HTTPRequest{URL: "https://api.stripe.com/v1", Headers: map[string][]string{"X-K": {abi.SecretPlaceholder("OTHER")}}}, "does not declare"},
		{"malformed placeholder", everywhere, abi.HTTPRequest{URL: "https://api.stripe.com/v1", Headers: map[string][]string{"X-K": {abi.SecretPrefix + "stripe_key~"}}}, "malformed"},
	}
	for _, tt := range deny {
		_, err := tt.g.Do(callCtx(t), &tt.req)
		var v *sandbox.Violation
		if !errors.As(err, &v) || !strings.Contains(v.Reason, tt.want) {
			t.Errorf("%s: err = %v, want a violation with %q", tt.name, err, tt.want)
		}
	}
	if s := got.all(); s != "" {
		t.Fatalf("denied requests reached the server:\n%s", s)
	}

	resp, err := everywhere.Do(callCtx(t), &abi.HTTPRequest{
		Method: "POST", URL: "https://api.stripe.com/k/" + placeholder + "?key=" + placeholder,
		Body: []byte(`key=` + placeholder),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := got.all(); !strings.Contains(s, "POST /k/a%20b&c%2Fd?key=a+b%26c%2Fd\n") || !strings.HasSuffix(s, "key=a b&c/d") {
		t.Errorf("the server saw:\n%s", s)
	}
	if strings.Contains(string(resp.Body), "a b&c/d") || strings.Contains(string(resp.Body), "a+b%26c%2Fd") || strings.Contains(resp.URL, "a+b") {
		t.Errorf("the module reads the value back: %q (URL %s)", resp.Body, resp.URL)
	}
}

// TestSecretRedirect: a bound host that redirects elsewhere does not carry
// the secret along; the next hop is checked like the first.
func TestSecretRedirect(t *testing.T) {
	w := newWorld(t)
	var files, stripe seen
	w.https("files.stripe.com", files.handler(nil))
	w.https("api.stripe.com", stripe.handler(func(rw http.ResponseWriter, r *http.Request, _ []byte) {
		rw.Header().Set("Location", "https://files.stripe.com/upload")
		rw.WriteHeader(http.StatusTemporaryRedirect)
	}))
	src := &values{vals: map[string]string{"m/o/STRIPE_KEY": stripeKey}}
	g := w.secretGate("m/o", []string{"api.stripe.com", "files.stripe.com"},
		[]Secret{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}, Body: true}}, src)
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{Method: "POST", URL: "https://api.stripe.com/v1/files", Body: []byte("key=" + placeholder)})
	var v *sandbox.Violation
	if !errors.As(err, &v) || v.Target != "files.stripe.com:443" {
		t.Fatalf("err = %v, want the redirect's hop denied", err)
	}
	if s := files.all(); s != "" {
		t.Fatalf("files.stripe.com received:\n%s", s)
	}
	if s := stripe.all(); !strings.Contains(s, stripeKey) {
		t.Fatalf("api.stripe.com did not receive the key:\n%s", s)
	}
}

func TestSecretNotSet(t *testing.T) {
	w := newWorld(t)
	var stripe seen
	w.https("api.stripe.com", stripe.handler(nil))
	g := w.secretGate("m/o", []string{"api.stripe.com"}, []Secret{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}}}, &values{})
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/", Headers: map[string][]string{"Authorization": {placeholder}}})
	if !errors.Is(err, ErrSecretNotSet) {
		t.Fatalf("err = %v, want ErrSecretNotSet", err)
	}
	if s := stripe.all(); s != "" {
		t.Fatalf("the request went out without its secret:\n%s", s)
	}
	// A request without a placeholder does not need the value.
	if _, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/"}); err != nil {
		t.Fatal(err)
	}
}

func TestSecretOptions(t *testing.T) {
	for _, tt := range []struct {
		secrets []Secret
		src     SecretSource
		want    string
	}{
		{[]Secret{{Name: "K", Hosts: []string{"a.example"}}}, nil, "no secret source"},
		{[]Secret{{Name: "k", Hosts: []string{"a.example"}}}, &values{}, "upper-case"},
		{[]Secret{{Name: "K"}}, &values{}, "bound to no host"},
		{[]Secret{{Name: "K", Hosts: []string{"*"}}}, &values{}, "allow entry"},
	} {
		_, err := New(Options{Module: "m/o", Secrets: tt.secrets, SecretSource: tt.src})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", tt.secrets, err, tt.want)
		}
	}
}

// TestSecretControlCharacters: a value that would split a header is
// refused before anything is sent.
func TestSecretControlCharacters(t *testing.T) {
	w := newWorld(t)
	var stripe seen
	w.https("api.stripe.com", stripe.handler(nil))
	g := w.secretGate("m/o", []string{"api.stripe.com"}, []Secret{{Name: "K", Hosts: []string{"api.stripe.com"}}},
		&values{vals: map[string]string{"m/o/K": "v\r\nX-Injected: 1"}})
	_, err := g.Do(callCtx(t), &abi.HTTPRequest{URL: "https://api.stripe.com/", Headers: map[string][]string{"X-Key": {abi.SecretPlaceholder("K")}}})
	if err == nil || strings.Contains(err.Error(), "Injected") {
		t.Fatalf("err = %v, want a refusal that does not print the value", err)
	}
	if s := stripe.all(); s != "" {
		t.Fatalf("sent:\n%s", s)
	}
}
