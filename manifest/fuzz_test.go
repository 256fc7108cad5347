package manifest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// marshal renders m back to module.yaml text. It lives in the tests: the
// station never writes manifests, it only checks that what it decoded is
// what it would write.
func marshal(t testing.TB, m *Manifest) []byte {
	t.Helper()
	type command struct {
		Name        string     `yaml:"name"`
		Description *yaml.Node `yaml:"description,omitempty"`
	}
	type network struct {
		Allow []string `yaml:"allow,omitempty"`
	}
	type requires struct {
		Network          *network   `yaml:"network,omitempty"`
		Subprocess       any        `yaml:"subprocess,omitempty"`
		FilesystemWrites []string   `yaml:"filesystem_writes,omitempty"`
		LLM              any        `yaml:"llm,omitempty"`
		Secrets          *yaml.Node `yaml:"secrets,omitempty"`
	}
	type limits struct {
		Memory      string `yaml:"memory,omitempty"`
		Timeout     string `yaml:"timeout,omitempty"`
		Concurrency int    `yaml:"concurrency,omitempty"`
		Instances   string `yaml:"instances,omitempty"`
	}
	type doc struct {
		ID          string     `yaml:"id"`
		Version     string     `yaml:"version"`
		Description *yaml.Node `yaml:"description,omitempty"`
		Wasm        string     `yaml:"wasm"`
		Commands    []command  `yaml:"commands"`
		Requires    requires   `yaml:"requires,omitempty"`
		Limits      limits     `yaml:"limits,omitempty"`
	}
	d := doc{ID: m.ID, Version: m.Version, Description: quoted(m.Description), Wasm: m.Wasm}
	for _, c := range m.Commands {
		d.Commands = append(d.Commands, command{Name: c.Name, Description: quoted(c.Description)})
	}
	if len(m.Requires.Network.Allow) > 0 {
		d.Requires.Network = &network{Allow: m.Requires.Network.Allow}
	}
	switch sp := m.Requires.Subprocess; {
	case sp.Any:
		d.Requires.Subprocess = true
	case len(sp.Allow) > 0:
		d.Requires.Subprocess = map[string][]string{"allow": sp.Allow}
	}
	d.Requires.FilesystemWrites = m.Requires.FilesystemWrites
	if l := m.Requires.LLM; l.Enabled {
		lm := map[string]int64{}
		if l.MaxTokensPerCall > 0 {
			lm["max_tokens_per_call"] = int64(l.MaxTokensPerCall)
		}
		if l.BudgetTokensPerDay > 0 {
			lm["budget_tokens_per_day"] = l.BudgetTokensPerDay
		}
		d.Requires.LLM = lm
	}
	if len(m.Requires.Secrets) > 0 {
		// A node, not a map: the order of the secrets is the manifest's.
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, sec := range m.Requires.Secrets {
			type secret struct {
				Description *yaml.Node `yaml:"description,omitempty"`
				Hosts       []string   `yaml:"hosts"`
				In          []string   `yaml:"in,omitempty"`
			}
			v := secret{Description: quoted(sec.Description), Hosts: sec.Hosts}
			if sec.Query {
				v.In = append(v.In, "query")
			}
			if sec.Body {
				v.In = append(v.In, "body")
			}
			var vn yaml.Node
			if err := vn.Encode(v); err != nil {
				t.Fatal(err)
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: sec.Name}, &vn)
		}
		d.Requires.Secrets = n
	}
	if m.Limits.MemoryBytes > 0 {
		d.Limits.Memory = FormatSize(m.Limits.MemoryBytes)
	}
	if m.Limits.Timeout > 0 {
		d.Limits.Timeout = m.Limits.Timeout.String()
	}
	d.Limits.Concurrency = m.Limits.Concurrency
	if m.Limits.Fresh {
		d.Limits.Instances = "fresh"
	}
	out, err := yaml.Marshal(d)
	if err != nil {
		t.Fatalf("marshal %+v: %v", m, err)
	}
	return out
}

// quoted renders free text double-quoted: the YAML library drops a leading newline
// when it picks the literal block style by itself.
func quoted(s string) *yaml.Node {
	if s == "" {
		return nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Tag: "!!str", Value: s}
}

// normalize makes empty and nil lists equal, for comparing a manifest with
// its re-parsed form.
func normalize(m *Manifest) *Manifest {
	c := *m
	if len(c.Requires.Network.Allow) == 0 {
		c.Requires.Network.Allow = nil
	}
	if len(c.Requires.Subprocess.Allow) == 0 {
		c.Requires.Subprocess.Allow = nil
	}
	if len(c.Requires.FilesystemWrites) == 0 {
		c.Requires.FilesystemWrites = nil
	}
	return &c
}

func TestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		m, err := Load2(t, file)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(m.File, marshal(t, m))
		if err != nil {
			t.Fatalf("%s: re-parse: %v\n%s", file, err, marshal(t, m))
		}
		if got, want := normalize(again), normalize(m); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip:\ngot  %+v\nwant %+v", file, got, want)
		}
	}
}

// FuzzParse checks that Parse never panics, that every error it returns is
// positioned, and that a manifest it accepts survives marshaling and
// re-parsing unchanged.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "testdata/bad/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(head + "requires: {filesystem_writes: [\"~/{a,b}/**\"]}\n"))
	f.Add([]byte(head + "limits: {memory: 4GiB, timeout: 1h, concurrency: 1024}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(FileName, data)
		if err != nil {
			for _, e := range errorsOf(t, err) {
				if e.File != FileName || e.Msg == "" || strings.Contains(e.Msg, "\n") {
					t.Fatalf("malformed error %#v", e)
				}
			}
			return
		}
		again, err := Parse(FileName, marshal(t, m))
		if err != nil {
			t.Fatalf("re-parse of %q: %v\nmarshaled:\n%s", data, err, marshal(t, m))
		}
		if got, want := normalize(again), normalize(m); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %q:\ngot  %+v\nwant %+v", data, got, want)
		}
	})
}
