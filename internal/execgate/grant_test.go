package execgate

import (
	"os"
	"strings"
	"testing"
)

// The refusals an operator's grant would lift name the key of config.yaml
// and the file it goes in: at install (an interpreter or a shell by name, a
// copy of one under another name), at load (a program no longer granted),
// and for subprocess: true.
func TestRefusalsNameTheGrant(t *testing.T) {
	const conf = "/home/ada/.station/config.yaml"
	f := newResolveFixture(t)
	op := f.op
	op.ConfigFile = conf
	entries := []struct{ entry, want string }{
		{"sh", `allow entry "sh": /usr/bin/sh is a shell; refused unless the operator grants it by name: add "sh" to subprocess.grant_programs in ` + conf},
		{"notashell", `, a shell; refused unless the operator grants it by name: add "notashell" to subprocess.grant_programs in ` + conf},
		{"env", `is a program that runs other programs; refused unless the operator grants it by name: add "env" to subprocess.grant_programs in ` + conf},
	}
	if _, err := os.Stat("/usr/bin/perl"); err == nil {
		entries = append(entries, struct{ entry, want string }{"perl", `allow entry "perl": /usr/bin/perl is an interpreter; refused unless the operator grants it by name: add "perl" to subprocess.grant_programs in ` + conf})
	}
	for _, c := range entries {
		_, err := Resolve([]string{c.entry}, op)
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("Resolve(%q) = %v\nwant an error ending %q", c.entry, err, c.want)
		}
	}
	// Without the file's name, the message still says which file.
	if _, err := Resolve([]string{"sh"}, f.op); err == nil || !strings.HasSuffix(err.Error(), `: add "sh" to subprocess.grant_programs in the station's config.yaml`) {
		t.Errorf("Resolve(sh) without ConfigFile = %v", err)
	}

	trueProg := must(Resolve([]string{"true"}, Operator{}))[0]
	sh := Program{Name: "sh", Path: realPath(t, "/bin/sh"), Digest: trueProg.Digest}
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"any", Options{Module: "test/mod", Any: true, Operator: Operator{ConfigFile: conf}},
			"execgate: module test/mod: subprocess: true needs the operator's grant: subprocess.grant_any: true in " + conf},
		{"shell no longer granted", Options{Module: "test/mod", Programs: []Program{sh}, Operator: Operator{ConfigFile: conf}},
			`execgate: module test/mod: program "sh": sh is a shell and the operator does not grant it (to grant it: add "sh" to subprocess.grant_programs in ` + conf + ")"},
	} {
		g, err := New(c.o)
		if err == nil {
			g.Close()
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: New = %v\nwant %s", c.name, err, c.want)
		}
	}
}
