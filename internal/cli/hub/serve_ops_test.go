package hub

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli/clitest"
	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubserver"
)

// TestServeOperatorSurfaces runs `station hub serve --metrics-addr`: the
// public address answers /healthz and /readyz but never /metrics, which
// only the operator's listener serves; on stop the hub drains and says so.
func TestServeOperatorSurfaces(t *testing.T) {
	var errb fixture.SyncBuffer
	ios, _, _ := streams("", nil)
	ios.Err = &errb
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveRun(ctx, &ServeOptions{IO: ios, Addr: "127.0.0.1:0", Data: t.TempDir(), Metrics: "127.0.0.1:0", DrainTimeout: 5 * time.Second})
	}()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	public := regexp.MustCompile(`hub listening on (http://\S+) `)
	metrics := regexp.MustCompile(`metrics on (http://\S+/metrics)`)
	var pub, met []string
	for deadline := time.Now().Add(20 * time.Second); pub == nil || met == nil; time.Sleep(10 * time.Millisecond) {
		pub, met = public.FindStringSubmatch(errb.String()), metrics.FindStringSubmatch(errb.String())
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", errb.String())
		}
	}
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(pub[1] + "/readyz"); code != 200 || !strings.Contains(body, `"ready"`) {
		t.Errorf("/readyz = %d %s", code, body)
	}
	if code, body := get(pub[1] + "/metrics"); code == 200 || strings.Contains(body, "station_hub_") {
		t.Errorf("the public address served /metrics: %d %s", code, body)
	}
	if code, body := get(met[1]); code != 200 || !strings.Contains(body, "station_hub_http_requests_total") {
		t.Errorf("the metrics address = %d %.200s", code, body)
	}
	cancel()
	stopped = true
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if !strings.Contains(errb.String(), "hub stopped") {
		t.Errorf("serve's output after the stop: %s", errb.String())
	}
}

// TestServeRefusesBadDrainFlags: a negative drain delay is a usage error.
func TestServeRefusesBadDrainFlags(t *testing.T) {
	err := clitest.Parse(NewCmdServe(clitest.Factory(), func(*ServeOptions) error { return nil }), "--drain-delay", "-1s")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--drain-delay") {
		t.Errorf("serve --drain-delay -1s = %v, want a usage error", err)
	}
}

// TestServeMaxNodeStreams: --max-node-streams reaches the options; a
// negative one is a usage error; without it the bound comes from the
// descriptor limit.
func TestServeMaxNodeStreams(t *testing.T) {
	var got *ServeOptions
	if err := clitest.Parse(NewCmdServe(clitest.Factory(), func(o *ServeOptions) error { got = o; return nil }), "--max-node-streams", "5000"); err != nil || got.NodeStreams != 5000 {
		t.Fatalf("serve --max-node-streams 5000: %v, %+v", err, got)
	}
	err := clitest.Parse(NewCmdServe(clitest.Factory(), func(*ServeOptions) error { return nil }), "--max-node-streams", "-1")
	if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--max-node-streams") {
		t.Errorf("serve --max-node-streams -1 = %v, want a usage error", err)
	}
	if n := hubserver.DefaultNodeStreams(); n < 64 {
		t.Errorf("DefaultNodeStreams() = %d on a unix machine, want a bound of at least 64", n)
	}
}
