package cli_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// transcript collects every output of the CLI runs of a test, so that a
// test can check that no secret ever appeared in any of them.
type transcript struct {
	mu  sync.Mutex
	all strings.Builder
}

func (tr *transcript) add(r result) result {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.all.WriteString(r.out)
	tr.all.WriteString(r.err)
	return r
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.all.String()
}

// noSecrets fails if any secret appears in the transcript, in what the hub
// logged, or in the station logs of homes.
func noSecrets(t *testing.T, tr *transcript, hubLog *lockedBuffer, homes []string, secrets ...string) {
	t.Helper()
	texts := map[string]string{"command output": tr.String()}
	if hubLog != nil {
		texts["hub log"] = hubLog.String()
	}
	for _, h := range homes {
		b, _ := os.ReadFile(filepath.Join(h, "station.log"))
		texts[filepath.Join(h, "station.log")] = string(b)
	}
	for name, text := range texts {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("a secret (%.8s…) appears in the %s", s, name)
			}
		}
	}
}

// startHub runs a hub on 127.0.0.1 whose request log the test can read.
func startHub(t *testing.T) (*hubtest.Hub, *lockedBuffer) {
	var log lockedBuffer
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	return h, &log
}

// login logs home in to the hub with token, read from stdin.
func login(t *testing.T, tr *transcript, h *hubtest.Hub, home, token string) {
	t.Helper()
	r := tr.add(station(t, home, token+"\n", "hub", "login", "--url", h.URL, "--token-stdin")).want(t, 0)
	if !strings.Contains(r.out, "logged in to "+h.URL) {
		t.Fatalf("hub login: %s", r.out)
	}
}

// moduleAs builds examples/name as a module with another id, version and
// network allowlist.
func moduleAs(t *testing.T, name, id, version string, allow ...string) string {
	t.Helper()
	dir := moduleDir(t, name)
	raw, err := os.ReadFile(filepath.Join(dir, "module.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "id: "):
			l = "id: " + id
		case strings.HasPrefix(l, "version: "):
			l = fmt.Sprintf("version: %q", version)
		case strings.HasPrefix(strings.TrimSpace(l), "allow: ") && allow != nil:
			l = "    allow: [" + strings.Join(allow, ", ") + "]"
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
