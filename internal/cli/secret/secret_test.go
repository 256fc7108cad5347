package secret

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/secrets"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/manifest"
)

// fake is a Service that records what was set.
type fake struct {
	set map[string]string
}

func (f *fake) CheckSecretTarget(_ context.Context, module, name string) (manifest.Secret, error) {
	return manifest.Secret{Name: name, Description: "a \x1b[31mkey\x1b[0m", Hosts: []string{"api.stripe.com"}}, nil
}

func (f *fake) SetSecret(_ context.Context, module, name string, value []byte) error {
	f.set[module+"/"+name] = string(value)
	return nil
}
func (f *fake) RemoveSecret(context.Context, string, string) error { return nil }
func (f *fake) SecretStatuses(context.Context) ([]station.SecretStatus, error) {
	return nil, nil
}
func (f *fake) SecretUsers(context.Context, string) (map[string]manifest.Secret, error) {
	return map[string]manifest.Secret{"dave/stripe": {Hosts: []string{"api.stripe.com"}}}, nil
}

func run(t *testing.T, terminal bool, stdin string, hidden func() ([]byte, error)) (*fake, string, string, error) {
	t.Helper()
	f := &fake{set: map[string]string{}}
	var out, errb bytes.Buffer
	opts := &SetOptions{IO: &cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, Err: &errb, IsTerminal: terminal},
		Service: func(context.Context) (Service, error) { return f, nil }, Name: "STRIPE_KEY", Module: "dave/stripe", readHidden: hidden}
	err := setRun(context.Background(), opts)
	return f, out.String(), errb.String(), err
}

func TestSetFromTerminal(t *testing.T) {
	f, out, prompt, err := run(t, true, "", func() ([]byte, error) { return []byte("sk_live_typed"), nil })
	if err != nil || f.set["dave/stripe/STRIPE_KEY"] != "sk_live_typed" {
		t.Fatalf("set = %v, %v", f.set, err)
	}
	if !strings.Contains(prompt, "Value of STRIPE_KEY") || !strings.Contains(prompt, "sent only to api.stripe.com") || strings.Contains(prompt, "\x1b") {
		t.Errorf("prompt %q", prompt)
	}
	if strings.Contains(out+prompt, "sk_live_typed") {
		t.Error("the value was printed")
	}
}

func TestSetFromStdin(t *testing.T) {
	f, _, _, err := run(t, false, "sk_live_piped\r\n", nil)
	if err != nil || f.set["dave/stripe/STRIPE_KEY"] != "sk_live_piped" {
		t.Fatalf("set = %v, %v", f.set, err)
	}
	for _, bad := range []string{"", "\n", "two\nlines", strings.Repeat("k", secrets.MaxValue+1), "nul\x00"} {
		f, _, _, err := run(t, false, bad, nil)
		if err == nil || len(f.set) != 0 {
			t.Errorf("stdin %.20q: set %v, err %v; want a refusal", bad, f.set, err)
		}
		if err != nil && strings.Contains(err.Error(), "two\nlines") {
			t.Errorf("the error quotes the value: %v", err)
		}
	}
}
