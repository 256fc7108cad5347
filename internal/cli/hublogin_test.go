package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/hubsync"
)

// TestHubLoginBadInput: every bad input gets a clear error and changes
// nothing; the token is never echoed.
func TestHubLoginBadInput(t *testing.T) {
	h, hubLog := startHub(t)
	home := t.TempDir()
	tr := &transcript{}
	good := h.Account(t, "dave")
	bogus := hub.TokenPrefix + strings.Repeat("A", 43)
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"no url", good, []string{"hub", "login", "--token-stdin"}, cli.ExitUsage, "--url is required"},
		{"no token", "", []string{"hub", "login", "--url", h.URL}, cli.ExitError, "no token given"},
		{"not a token", "hunter2", []string{"hub", "login", "--url", h.URL, "--token-stdin"}, cli.ExitError, "not a hub token"},
		{"revoked or unknown token", bogus, []string{"hub", "login", "--url", h.URL, "--token-stdin"}, cli.ExitError, "unauthenticated"},
		{"plain http elsewhere", good, []string{"hub", "login", "--url", "http://hub.example.com", "--token-stdin"}, cli.ExitError, "plain http is allowed only to a loopback address"},
		{"not logged in: search", "", []string{"module", "search"}, cli.ExitError, "not logged in to a hub"},
		{"not logged in: install", "", []string{"module", "install", "dave/nothing"}, cli.ExitError, "not logged in to a hub"},
		{"not logged in: team sync", "", []string{"team", "sync"}, cli.ExitError, "not logged in to a hub"},
		{"no team status", "", []string{"team", "status", "acme"}, cli.ExitError, "not a member of team acme"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tr.add(station(t, home, c.stdin, c.args...)).want(t, c.code)
			if !strings.Contains(r.err, c.want) {
				t.Errorf("stderr does not contain %q:\n%s", c.want, r.err)
			}
			if _, err := os.Stat(filepath.Join(home, hubsync.TokenFile)); !os.IsNotExist(err) {
				t.Errorf("a refused login left %s: %v", hubsync.TokenFile, err)
			}
		})
	}

	login(t, tr, h, home, good)
	fi, err := os.Stat(filepath.Join(home, hubsync.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if r := tr.add(station(t, home, "", "hub", "whoami")).want(t, 0); !strings.Contains(r.out, "dave on "+h.URL) {
		t.Errorf("whoami: %s", r.out)
	}
	// Not a module id and not a directory: a clear error, nothing installed.
	for _, ref := range []string{"dave/nothing", "dave/nothing@1.0.0"} {
		args := []string{"module", "install", "--yes", ref}
		if !strings.Contains(ref, "@") {
			args = []string{"module", "install", ref} // --yes needs the version named
		}
		r := tr.add(station(t, home, "", args...)).want(t, cli.ExitError)
		if !strings.Contains(r.err, "module_not_found") && !strings.Contains(r.err, "version_not_found") {
			t.Errorf("install %s: %s", ref, r.err)
		}
	}
	// A token file others may read is refused, not used.
	os.Chmod(filepath.Join(home, hubsync.TokenFile), 0o644)
	if r := tr.add(station(t, home, "", "hub", "whoami")).want(t, cli.ExitError); !strings.Contains(r.err, "may be read by others") {
		t.Errorf("whoami with a 0644 token file: %s", r.err)
	}
	os.Chmod(filepath.Join(home, hubsync.TokenFile), 0o600)
	tr.add(station(t, home, "", "hub", "logout")).want(t, 0)
	if _, err := os.Stat(filepath.Join(home, hubsync.TokenFile)); !os.IsNotExist(err) {
		t.Errorf("logout left the token file: %v", err)
	}
	noSecrets(t, tr, hubLog, []string{home}, good, bogus)
}
