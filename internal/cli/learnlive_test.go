package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/probe"
)

// TestLearnLiveUsesTheOperatorsNetwork: `module learn --live` sends an
// approved host's requests where the operator's station would (its
// network.resolve, extra_ca and allow_private), and refuses every other
// host without a terminal to ask on.
func TestLearnLiveUsesTheOperatorsNetwork(t *testing.T) {
	home := t.TempDir()
	ca := fixture.NewCA(t)
	var hits atomic.Int64
	api := ca.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "ok")
	}), "api.example.com")
	cfg := fmt.Sprintf("network:\n  resolve: [\"api.example.com:443=%s\"]\n  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n", api.Addr, ca.WriteFile(t, home))
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "module.yaml"), []byte("id: dave/live\nversion: \"1.0.0\"\ndescription: reaches two hosts\nwasm: module.wasm\ncommands:\n  - name: run\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "module.wasm"), probe.Wasm(t), 0o600)
	in := string(probe.Run(probe.Seq(probe.HTTP("GET", "https://api.example.com/v1"), probe.HTTP("GET", "https://other.example/"))))

	r := station(t, home, "", "module", "learn", "--no-build", "--live", "--yes-host", "api.example.com", dir, "--", "run", "--input", in).want(t, 0)
	if hits.Load() == 0 {
		t.Fatalf("the approved host's fixture was never reached:\n%s%s", r.out, r.err)
	}
	for _, want := range []string{"api.example.com", "other.example"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the proposal lacks %s:\n%s", want, r.out)
		}
	}
}
