// Package ocitest finds an OCI registry for tests and gives each test a
// repository of its own in it, so that tests run in parallel.
//
// The registry is the one STATION_TEST_OCI names (oci://host[:port] or
// oci+http://host[:port], with a path prefix for the repositories if the
// registry wants one, e.g. a Harbor project), or else Debian's
// docker-registry (the distribution project's reference registry; package
// docker-registry) started on a free 127.0.0.1 port with in-memory storage:
// it writes nothing to disk, so it runs as any user. One process serves
// every test of a test binary that runs while it is up; when the last of
// them ends it is stopped (on Linux after a short grace, so that tests
// that run one after another share it, and killed with the test binary if
// that exits first). With neither, a test that asks is skipped saying why,
// unless STATION_REQUIRE_OCI=1 (as .ci/run sets): then it fails.
package ocitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Env names the variables ocitest reads.
const (
	EnvURL     = "STATION_TEST_OCI"
	EnvRequire = "STATION_REQUIRE_OCI"
)

var (
	mu    sync.Mutex
	reg   *registry   // the running docker-registry, if any
	users int         // tests using reg
	stop  *time.Timer // stops reg after the grace, once unused
)

// URL returns the URL of a new, empty repository of t's own
// (oci+http://127.0.0.1:PORT/station-test/NAME-RANDOM, or under
// STATION_TEST_OCI), in a registry that runs at least until t ends. It
// skips t when there is no registry (fails with STATION_REQUIRE_OCI=1).
func URL(t testing.TB) string {
	t.Helper()
	base, err := acquire(t)
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("an OCI registry is required (%s=1) but none is available: %v", EnvRequire, err)
		}
		t.Skipf("no OCI registry for this test (%v); install docker-registry, or set %s to oci+http://host:port", err, EnvURL)
	}
	return strings.TrimSuffix(base, "/") + "/" + repository(t.Name())
}

// repository returns a repository name for a test: "station-test/" and
// the test's name, lower-cased to the characters a name may hold, and a
// random suffix (a test may ask twice; -count runs it again).
func repository(test string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(test) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) > 48 {
		name = strings.TrimRight(name[:48], "-")
	}
	if name == "" {
		name = "test"
	}
	var r [4]byte
	rand.Read(r[:])
	return "station-test/" + name + "-" + hex.EncodeToString(r[:])
}

// acquire returns the registry's base URL for t, starting docker-registry
// if none runs, and releases it when t ends.
func acquire(t testing.TB) (string, error) {
	if env := os.Getenv(EnvURL); env != "" {
		if err := ping(env); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvURL, redact(env), err)
		}
		return env, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if stop != nil {
		stop.Stop()
		stop = nil
	}
	if reg == nil || reg.dead() {
		r, err := start()
		if err != nil {
			return "", err
		}
		reg = r
	}
	users++
	r := reg
	t.Cleanup(func() { release(r) })
	return r.url, nil
}

// release ends one test's use of r, stopping it when no test uses it (on
// Linux after the grace, which the next acquire cancels).
func release(r *registry) {
	mu.Lock()
	defer mu.Unlock()
	if r != reg {
		return
	}
	if users--; users > 0 {
		return
	}
	if grace == 0 {
		reg.stop()
		reg = nil
		return
	}
	stop = time.AfterFunc(grace, func() {
		mu.Lock()
		defer mu.Unlock()
		if users == 0 && reg == r {
			r.stop()
			reg = nil
			stop = nil
		}
	})
}

// ping checks that a registry answers /v2/ (401 is an answer: it asks for
// credentials, which the URL carries).
func ping(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	scheme := "https"
	switch u.Scheme {
	case "oci":
	case "oci+http":
		scheme = "http"
	default:
		return fmt.Errorf("want oci://host[:port] or oci+http://host[:port]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+u.Host+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("GET /v2/: %s", resp.Status)
	}
	return nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(a URL that does not parse)"
}

// registry is a docker-registry process.
type registry struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{}
	out    *syncBuffer
}

func (r *registry) dead() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

func (r *registry) stop() {
	r.cmd.Process.Kill()
	<-r.exited
}

// binary finds docker-registry.
func binary() (string, error) {
	if p, err := exec.LookPath("docker-registry"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/docker-registry"); err == nil {
		return "/usr/bin/docker-registry", nil
	}
	return "", errors.New("docker-registry is not installed (apt-get install docker-registry)")
}

// start starts docker-registry on a free loopback port and waits until it
// answers. The port is found by listening on :0 and closing; if another
// process takes it meanwhile the registry exits and start tries again.
func start() (*registry, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	var errs []error
	for range 3 {
		r, err := startOn(bin)
		if err == nil {
			return r, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func startOn(bin string) (*registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	var secret [16]byte
	rand.Read(secret[:])
	// The configuration arrives on stdin: nothing is written to disk.
	config := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  inmemory: {}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: %s
`, addr, hex.EncodeToString(secret[:]))
	cmd := exec.Command(bin, "serve", "/dev/stdin")
	cmd.Stdin = strings.NewReader(config)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Only what it needs: a REGISTRY_* variable of the caller's would
	// change its configuration.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	r := &registry{cmd: cmd, url: "oci+http://" + addr, exited: make(chan struct{}), out: out}
	go func() { cmd.Wait(); close(r.exited) }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		select {
		case <-r.exited:
			return nil, fmt.Errorf("%s exited: %s", bin, clip(out.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("%s did not answer on %s within 15s: %s", bin, addr, clip(out.String()))
		}
	}
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// syncBuffer keeps the first 64 KiB of the registry's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if room := 64<<10 - s.b.Len(); room > 0 {
		s.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
