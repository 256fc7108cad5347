package station

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/execgate"
)

func TestEscalations(t *testing.T) {
	base := Permissions{
		Network:          []string{"api.stripe.com", "*.groq.com", "http://plain.example:8080"},
		Subprocess:       map[string][]string{"allow": {"git"}},
		Programs:         []execgate.Program{{Name: "git", Path: "/usr/bin/git", Digest: "sha256:aaaa"}},
		Env:              []string{"GIT_AUTHOR_NAME"},
		FilesystemWrites: []string{"~/out/**"},
		FilesystemReads:  []string{"/data/*.csv"},
		LLM:              &LLMPermission{MaxTokensPerCall: 500, BudgetTokensPerDay: 10000},
		Secrets:          []SecretPermission{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}, In: []string{"headers"}}},
	}
	with := func(f func(p *Permissions)) Permissions {
		p := base
		p.Network = slices.Clone(base.Network)
		llm := *base.LLM
		p.LLM = &llm
		f(&p)
		return p
	}
	cases := []struct {
		name string
		next Permissions
		want []string
	}{
		{"same", base, nil},
		{"fewer", Permissions{Network: []string{"api.stripe.com"}, Subprocess: false}, nil},
		{"subdomain under an approved wildcard", with(func(p *Permissions) { p.Network = []string{"api.groq.com", "*.eu.groq.com"} }), nil},
		{"write glob inside an approved tree", with(func(p *Permissions) { p.FilesystemWrites = []string{"~/out/reports/*.pdf"} }), nil},
		{"read glob inside a writable tree", with(func(p *Permissions) { p.FilesystemReads = []string{"~/out/x.txt"} }), nil},
		{"smaller LLM allowance", with(func(p *Permissions) { p.LLM = &LLMPermission{MaxTokensPerCall: 100, BudgetTokensPerDay: 10} }), nil},
		{"no LLM any more", with(func(p *Permissions) { p.LLM = nil }), nil},

		{"secret dropped", with(func(p *Permissions) { p.Secrets = nil }), nil},
		{"new secret", with(func(p *Permissions) {
			p.Secrets = append(slices.Clone(p.Secrets), SecretPermission{Name: "GROQ_KEY", Hosts: []string{"api.groq.com"}, In: []string{"headers"}})
		}), []string{"may now have secret GROQ_KEY sent to api.groq.com"}},
		{"secret to another host", with(func(p *Permissions) {
			p.Secrets = []SecretPermission{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com", "x.groq.com"}, In: []string{"headers"}}}
		}), []string{"may now have secret STRIPE_KEY sent to x.groq.com"}},
		{"secret in the body", with(func(p *Permissions) {
			p.Secrets = []SecretPermission{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}, In: []string{"headers", "query", "body"}}}
		}), []string{"may now put secret STRIPE_KEY in a request's URL", "may now put secret STRIPE_KEY in a request's body"}},
		{"new host", with(func(p *Permissions) { p.Network = append(p.Network, "evil.example") }), []string{"may now connect to evil.example"}},
		{"apex of a wildcard", with(func(p *Permissions) { p.Network = []string{"groq.com"} }), []string{"may now connect to groq.com"}},
		{"wider wildcard", with(func(p *Permissions) { p.Network = []string{"*.stripe.com"} }), []string{"may now connect to *.stripe.com"}},
		{"other port", with(func(p *Permissions) { p.Network = []string{"api.stripe.com:8443"} }), []string{"may now connect to api.stripe.com:8443"}},
		{"plain http", with(func(p *Permissions) { p.Network = []string{"http://api.stripe.com"} }), []string{"may now connect to http://api.stripe.com"}},
		{"another program", with(func(p *Permissions) {
			p.Subprocess = map[string][]string{"allow": {"git", "curl"}}
		}), []string{"MAY NOW START curl"}},
		{"the program changed", with(func(p *Permissions) {
			p.Programs = []execgate.Program{{Name: "git", Path: "/opt/git/bin/git", Digest: "sha256:bbbb"}}
		}), []string{"MAY NOW START git as /opt/git/bin/git (sha256:bbbb), not the approved /usr/bin/git (sha256:aaaa)"}},
		{"any program", with(func(p *Permissions) { p.Subprocess = true }), []string{"MAY NOW START ANY PROGRAM on the station's search path"}},
		{"new variable", with(func(p *Permissions) { p.Env = []string{"GIT_AUTHOR_NAME", "GIT_DIR"} }), []string{"may now pass the environment variable GIT_DIR to programs"}},
		{"wider write glob", with(func(p *Permissions) { p.FilesystemWrites = []string{"~/**"} }), []string{"may now create, change and delete ~/**"}},
		{"sibling write glob", with(func(p *Permissions) { p.FilesystemWrites = []string{"~/out2/**"} }), []string{"may now create, change and delete ~/out2/**"}},
		{"escape by dotdot", with(func(p *Permissions) { p.FilesystemWrites = []string{"~/out/../.ssh/**"} }), []string{"may now create, change and delete ~/out/../.ssh/**"}},
		{"new read glob", with(func(p *Permissions) { p.FilesystemReads = []string{"/data/**"} }), []string{"may now read /data/**"}},
		{"larger per-call cap", with(func(p *Permissions) { p.LLM.MaxTokensPerCall = 0 }), []string{"may now ask for unlimited tokens per call (approved: 500)"}},
		{"larger budget", with(func(p *Permissions) { p.LLM.BudgetTokensPerDay = 20000 }), []string{"may now spend 20000 tokens a day (approved: 10000)"}},
	}
	for _, c := range cases {
		if got := Escalations(base, c.next); !slices.Equal(got, c.want) {
			t.Errorf("%s: Escalations = %q, want %q", c.name, got, c.want)
		}
	}

	// A subprocess form Escalations does not read fails closed.
	if got := Escalations(base, with(func(p *Permissions) { p.Subprocess = []string{"sh"} })); len(got) != 1 || !strings.HasPrefix(got[0], "MAY NOW START PROGRAMS") {
		t.Errorf("unknown subprocess form: %q, want an escalation", got)
	}
	// Approvals come back from the store as JSON: the same comparison holds.
	var stored Permissions
	raw, _ := json.Marshal(base)
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	if got := Escalations(stored, base); len(got) != 0 {
		t.Errorf("base against its own JSON round trip: %q", got)
	}
	if got := Escalations(stored, with(func(p *Permissions) { p.Subprocess = map[string][]string{"allow": {"git", "curl"}} })); !slices.Equal(got, []string{"MAY NOW START curl"}) {
		t.Errorf("after a JSON round trip: %q", got)
	}

	// From nothing, everything is an escalation.
	none := Permissions{Subprocess: false}
	if got := Escalations(none, base); len(got) != 9 {
		t.Errorf("from no permissions: %q, want 9 escalations", got)
	}
	if got := Escalations(none, Permissions{Subprocess: false, LLM: &LLMPermission{}}); !slices.Equal(got, []string{"may now ask the station's LLM for completions"}) {
		t.Errorf("llm from nothing: %q", got)
	}
}
