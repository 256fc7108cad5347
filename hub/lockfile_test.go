package hub

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/station-dev/station/manifest"
)

func validLockfile() Lockfile {
	src := "name: invoice-month\nsteps: []\n"
	return Lockfile{
		Modules: []LockedModule{{
			ID: "dave/stripe-invoicing", Version: "1.4.0",
			ManifestDigest: Digest([]byte("m")), WasmDigest: Digest([]byte("w")),
			Permissions: Permissions{Network: []string{"api.stripe.com"}, FilesystemWrites: []string{}},
		}},
		Workflows: []Workflow{{Name: "invoice-month", Digest: Digest([]byte(src)), Source: src}},
	}
}

func TestLockfileValidate(t *testing.T) {
	if err := (&Lockfile{}).Validate(); err != nil {
		t.Errorf("empty lockfile: %v", err)
	}
	good := validLockfile()
	if err := good.Validate(); err != nil {
		t.Fatalf("valid lockfile: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(l *Lockfile)
		want   string
	}{
		{"bad id", func(l *Lockfile) { l.Modules[0].ID = "Dave/x" }, `modules[0]: id "Dave/x": owner may contain only`},
		{"no slug", func(l *Lockfile) { l.Modules[0].ID = "dave" }, `must be "owner/slug"`},
		{"duplicate", func(l *Lockfile) { l.Modules = append(l.Modules, l.Modules[0]) }, "modules[1] (dave/stripe-invoicing): the module is listed twice"},
		{"bad version", func(l *Lockfile) { l.Modules[0].Version = "1.4" }, "not a semantic version"},
		{"v-prefixed version", func(l *Lockfile) { l.Modules[0].Version = "v1.4.0" }, `must not start with "v"`},
		{"bad digest", func(l *Lockfile) { l.Modules[0].WasmDigest = "sha256:XYZ" }, "wasm_digest"},
		{"control in grant", func(l *Lockfile) { l.Modules[0].Permissions.Network = []string{"api.stripe.com\x1b[2J"} }, "permissions.network: entry"},
		{"empty grant", func(l *Lockfile) { l.Modules[0].Permissions.FilesystemWrites = []string{""} }, "permissions.filesystem_writes: an entry is empty"},
		{"workflow digest", func(l *Lockfile) { l.Workflows[0].Source += "# changed\n" }, "is not the digest of its source"},
		{"workflow name", func(l *Lockfile) { l.Workflows[0].Name = "../x" }, `workflows[0]: name "../x"`},
		{"workflow twice", func(l *Lockfile) { l.Workflows = append(l.Workflows, l.Workflows[0]) }, "listed twice"},
		{"huge workflow", func(l *Lockfile) {
			l.Workflows[0].Source = strings.Repeat("a", MaxWorkflowSource+1)
			l.Workflows[0].Digest = Digest([]byte(l.Workflows[0].Source))
		}, "larger than"},
		{"too many modules", func(l *Lockfile) { l.Modules = make([]LockedModule, MaxLockedModules+1) }, "at most 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := validLockfile()
			tt.mutate(&l)
			err := l.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) || CodeOf(err) != CodeLockfileInvalid {
				t.Errorf("Validate = %v, want lockfile_invalid containing %q", err, tt.want)
			}
		})
	}
}

func TestSubprocessJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Subprocess
	}{
		{`false`, Subprocess{}},
		{`true`, Subprocess{Any: true}},
		{`{"allow":["git"]}`, Subprocess{Allow: []string{"git"}}},
	}
	for _, tt := range tests {
		var got Subprocess
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tt.in, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Unmarshal(%s) = %+v, want %+v", tt.in, got, tt.want)
		}
		b, _ := json.Marshal(got)
		if string(b) != tt.in {
			t.Errorf("Marshal = %s, want %s", b, tt.in)
		}
	}
	for _, bad := range []string{`"yes"`, `{"allow":["git"],"any":true}`, `1`, `[]`} {
		var s Subprocess
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

// TestGrammarMatchesManifest checks that the hub's module id and version
// checks agree with the manifest's, so the hub never accepts in a lockfile
// what a manifest could not declare (or the reverse).
func TestGrammarMatchesManifest(t *testing.T) {
	ids := []string{"dave/stripe-invoicing", "a/b", "dave", "Dave/x", "dave/-x", "dave/x--y", "dave/x_y", "d/" + strings.Repeat("a", 64), "d/" + strings.Repeat("a", 65), strings.Repeat("a", 39) + "/x", strings.Repeat("a", 40) + "/x", "dave/x/y", "/x", "dave/"}
	versions := []string{"1.4.0", "0.0.1", "v1.4.0", "1.4", "01.4.0", "2.0.0-rc.1", "1.0.0+build.5", "1.0.0-", "1.0.0-01", strings.Repeat("1", 126) + ".0.0"}
	parses := func(id, version string) bool {
		doc := fmt.Sprintf("id: %q\nversion: %q\nwasm: module.wasm\ncommands:\n  - name: run\n", id, version)
		_, err := manifest.Parse("module.yaml", []byte(doc))
		return err == nil
	}
	for _, id := range ids {
		if got, want := CheckModuleID(id) == "", parses(id, "1.0.0"); got != want {
			t.Errorf("CheckModuleID(%q) valid = %v, manifest.Parse valid = %v", id, got, want)
		}
	}
	for _, v := range versions {
		if got, want := CheckVersion(v) == "", parses("a/b", v); got != want {
			t.Errorf("CheckVersion(%q) valid = %v, manifest.Parse valid = %v", v, got, want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	// semver.org's precedence example, in increasing order.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0", "10.0.0", "18446744073709551616.0.0"}
	for i := range order {
		for j := range order {
			want := cmp.Compare(i, j)
			if got := CompareVersions(order[i], order[j]); got != want {
				t.Errorf("CompareVersions(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	if got := CompareVersions("1.0.0+a", "1.0.0+b"); got != 0 {
		t.Errorf("build metadata: got %d, want 0", got)
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"dave", true}, {"acme-1", true}, {"", false}, {"-a", false}, {"a-", false}, {"a--b", false},
		{"Acme", false}, {"a_b", false}, {strings.Repeat("a", 39), true}, {strings.Repeat("a", 40), false},
	}
	for _, tt := range tests {
		if got := CheckName(tt.in) == ""; got != tt.want {
			t.Errorf("CheckName(%q) valid = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzLockfile: Validate never panics, and a lockfile it accepts survives a
// JSON round trip unchanged and still valid (what the hub stores is what a
// station reads back).
func FuzzLockfile(f *testing.F) {
	good, _ := json.Marshal(validLockfile())
	f.Add(good)
	f.Add([]byte(`{"modules":[{"id":"a/b","version":"1.0.0","permissions":{"subprocess":{"allow":["git"]}}}]}`))
	f.Add([]byte(`{"workflows":[{"name":"w","digest":"","source":"\u0000"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Lockfile
		if json.Unmarshal(data, &l) != nil || l.Validate() != nil {
			return
		}
		once, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var again Lockfile
		if err := json.Unmarshal(once, &again); err != nil {
			t.Fatalf("re-decode %s: %v", once, err)
		}
		if err := again.Validate(); err != nil {
			t.Fatalf("a valid lockfile is invalid after a round trip: %v", err)
		}
		twice, _ := json.Marshal(again)
		if string(once) != string(twice) {
			t.Fatalf("round trip changed the lockfile:\n%s\n%s", once, twice)
		}
	})
}
