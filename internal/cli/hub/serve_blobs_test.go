package hub

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubserver/ocitest"
)

// TestBlobsOf: --blobs, then $STATION_HUB_BLOBS, then blobs/ in the data
// directory; a URL that is no blob store is a usage error that says what
// is taken, and shows no password.
func TestBlobsOf(t *testing.T) {
	dir := t.TempDir()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "STATION_HUB_BLOBS" {
				return v
			}
			return ""
		}
	}
	wd, _ := os.Getwd()
	for _, tt := range []struct{ flag, env, want string }{
		{"", "", filepath.Join(dir, "blobs")},
		{"", "oci://registry.example.com/station/modules", "oci://registry.example.com/station/modules"},
		{"oci+http://127.0.0.1:5000/m", "oci://registry.example.com/station/modules", "oci+http://127.0.0.1:5000/m"},
		{"relative/blobs", "", filepath.Join(wd, "relative/blobs")},
	} {
		if got, err := blobsOf(tt.flag, dir, env(tt.env)); err != nil || got != tt.want {
			t.Errorf("blobsOf(%q, $STATION_HUB_BLOBS=%q) = %q, %v; want %q", tt.flag, tt.env, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ flag, env, want string }{
		{"s3://bucket/modules", "", "--blobs"},
		{"", "https://registry.example.com/modules", "$STATION_HUB_BLOBS"},
		{"oci://hub:hunter2@registry.example.com", "", "no repository"},
		{"oci://registry.example.com/Modules", "", "not a valid name"},
	} {
		_, err := blobsOf(tt.flag, dir, env(tt.env))
		var ue cmdutil.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("blobsOf(%q, $STATION_HUB_BLOBS=%q) = %v, want a usage error saying %q", tt.flag, tt.env, err, tt.want)
		}
	}
}

// TestServeOnOCI runs `station hub serve --blobs oci+http://...` on a
// real registry: a module published to it is served back, nothing lands
// in the data directory's blobs/, and the startup line names the registry
// without the URL's credentials.
func TestServeOnOCI(t *testing.T) {
	spec := ocitest.URL(t)
	u, _ := url.Parse(spec)
	u.User = url.UserPassword("hub", "hunter2") // the test registry asks for none
	dir := t.TempDir()
	var errb fixture.SyncBuffer
	io, out, _ := streams("", map[string]string{"STATION_HUB_BLOBS": u.String()})
	io.Err = &errb
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveRun(ctx, &ServeOptions{IO: io, Addr: "127.0.0.1:0", Data: dir, Bootstrap: "dave"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	listening := regexp.MustCompile(`hub listening on (http://\S+) \(database (\S+), blobs (\S+),`)
	var m []string
	for deadline := time.Now().Add(20 * time.Second); m == nil; time.Sleep(10 * time.Millisecond) {
		m = listening.FindStringSubmatch(errb.String())
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", errb.String())
		}
	}
	if strings.Contains(errb.String(), "hunter2") {
		t.Errorf("serve printed the registry's password: %s", errb.String())
	}
	if m[3] != spec {
		t.Errorf("serve names the blobs %s, want %s", m[3], spec)
	}
	token := strings.TrimSpace(out.String())
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := hubclient.New(m[1], hc, hubclient.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	s, err := hubclient.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddKey(ctx, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	b, err := hubclient.NewBundle(hubtest.Manifest("dave/x", "1.0.0"), hubtest.Wasm("x"), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, b); err != nil {
		t.Fatal(err)
	}
	pkg, err := c.Fetch(ctx, "dave/x", "1.0.0", hubclient.FetchOptions{})
	if err != nil || string(pkg.Wasm) != string(b.Wasm) {
		t.Fatalf("fetch: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve --blobs oci+http:// made blobs/ in the data directory (%v)", err)
	}
}

// TestServeRefusesAnUnreachableRegistry: the hub does not start on blobs
// it cannot reach, and says what to check.
func TestServeRefusesAnUnreachableRegistry(t *testing.T) {
	io, _, errb := streams("", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := serveRun(ctx, &ServeOptions{IO: io, Addr: "127.0.0.1:0", Data: t.TempDir(), Blobs: "oci+http://127.0.0.1:1/station/modules"})
	if err == nil || !strings.Contains(err.Error(), "unreachable") || strings.Contains(errb.String(), "listening") {
		t.Errorf("serve on an unreachable registry = %v (%s)", err, errb)
	}
}
