package attack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/probe"
)

// icase is a module directory that must be refused at install, with an
// error containing every string in want.
type icase struct {
	name      string
	allow     string // the flow list under requires.network.allow (line 8)
	writes    string // the flow list under requires.filesystem_writes (line 10)
	extra     string // lines from line 11 on
	tag       string // probe build ("" full, or a probe.*Tag)
	want      []string
	knownHole string
}

// manifest: line 8 is requires.network.allow, line 10 filesystem_writes.
func (c icase) manifest() string {
	return fmt.Sprintf(`id: atk/man
version: "1.0.0"
wasm: module.wasm
commands:
  - name: run
requires:
  network:
    allow: [%s]
  subprocess: false
  filesystem_writes: [%s]
%s`, c.allow, c.writes, c.extra)
}

func allowCase(entry string) icase {
	return icase{name: "allow " + entry, allow: fmt.Sprintf("%q", entry), want: []string{"module.yaml:8:", "requires.network.allow", fmt.Sprintf("entry %q", entry)}}
}

func writesCase(entry string) icase {
	return icase{name: "writes " + entry, writes: fmt.Sprintf("%q", entry), want: []string{"module.yaml:10:", "requires.filesystem_writes", fmt.Sprintf("%q", entry)}}
}

func installCases() map[string][]icase {
	var I []icase
	for _, e := range []string{"*", "*.com", "*.co.uk", "*.*.stripe.com", "", "api..stripe.com", "münchen.de", "api.stripe.com/v1", "https://api.stripe.com/v1",
		"ftp://api.stripe.com", "user@api.stripe.com", "api.stripe.com:99999", "*stripe.com", "api.*.com", "http://*"} {
		c := allowCase(e)
		if e == "" {
			c.want[2] = "empty entry"
		}
		I = append(I, c)
	}
	for _, e := range []string{"**", "/**", "/etc/**", "../**", "relative/out/**", "/", "/home/../etc/x", "~/../../etc/**"} {
		I = append(I, writesCase(e))
	}
	I = append(I,
		icase{name: "unknown top-level key", extra: "permissions: all\n", want: []string{"module.yaml:11:", "permissions"}},
		icase{name: "unknown key under requires", extra: "  filesystem_write: [\"/tmp/**\"]\n", want: []string{"module.yaml:11:", "filesystem_write"}},
		icase{name: "unknown key under requires with a string", extra: "  secrets: yes please\n", want: []string{"module.yaml:11:", "secrets"}},
		icase{name: "duplicate key", extra: "  subprocess: true\n", want: []string{"module.yaml:11:", "subprocess"}},
		icase{name: "memory over the operator maximum", extra: "limits:\n  memory: 64GiB\n", want: []string{"module.yaml:12:", "memory"}},
		icase{name: "negative timeout", extra: "limits:\n  timeout: -1s\n", want: []string{"module.yaml:12:", "timeout"}},
	)
	G := []icase{
		{name: "import the station does not offer", tag: probe.ExtraImportTag, want: []string{"exec", "does not offer"}},
		{name: "process_run without the grant", tag: probe.ExecTag, want: []string{"process_run", "does not offer"}},
	}
	return map[string][]icase{"I": I, "G": G}
}

func runInstallCase(t *testing.T, w *world, c icase) {
	if c.knownHole != "" {
		t.Skip("known hole: " + c.knownHole)
	}
	if c.allow == "" {
		c.allow = `"api.stripe.com"`
	}
	before := w.accepted()
	err := w.tryInstall(c.manifest(), probe.Wasm(t, tagsOf(c.tag)...))
	if err == nil {
		t.Fatalf("install succeeded, want a refusal containing %q", c.want)
	}
	for _, s := range c.want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("install error %q does not contain %q", err, s)
		}
	}
	if _, err := w.st.Run(context.Background(), "atk/man", probe.Command, probe.Run(probe.Env())); err == nil {
		t.Errorf("the refused module runs")
	}
	for k, v := range w.accepted() {
		if v != before[k] {
			t.Errorf("fixture %s accepted a connection during install", k)
		}
	}
}

func tagsOf(tag string) []string {
	if tag == "" {
		return nil
	}
	return []string{tag}
}
