package station_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/probe"
)

// An install refused for want of the operator's grant says which key of
// config.yaml grants it and where that file is: a shell by name, and
// subprocess: true.
func TestInstallRefusalsNameTheGrantAndTheConfigFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	home, err := filepath.Abs(e.home)
	if err != nil {
		t.Fatal(err)
	}
	conf := config.Path(home)
	for _, c := range []struct{ subp, want string }{
		{"{allow: [sh]}", `is a shell; refused unless the operator grants it by name: add "sh" to subprocess.grant_programs in ` + conf},
		{"true", "subprocess: true needs the operator's grant: subprocess.grant_any: true in " + conf},
	} {
		err := e.tryInstall(e.moduleDir(moduleSpec{id: "test/shell", subp: c.subp}, probe.Wasm(t, probe.ExecTag)))
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("install with subprocess %s: %v\nwant an error ending %q", c.subp, err, c.want)
		}
	}
}
