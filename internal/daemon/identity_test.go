package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/fixture"
)

// recorder is a listener that keeps every byte any connection sent it.
type recorder struct {
	net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

func (r *recorder) Accept() (net.Conn, error) {
	c, err := r.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordedConn{Conn: c, r: r}, nil
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.got.Bytes())
}

type recordedConn struct {
	net.Conn
	r *recorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.mu.Lock()
	c.r.got.Write(p[:n])
	c.r.mu.Unlock()
	return n, err
}

// serveImpostor serves h on ln, recording everything it is sent, until the
// test ends.
func serveImpostor(t *testing.T, ln net.Listener, h http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{Listener: ln}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(rec)
	t.Cleanup(func() { srv.Close() })
	return rec
}

// TestTheTokenGoesOnlyToTheDaemon is the attack on the client: a daemon
// died without removing its state file, and another program now listens on
// the port the file records. Whatever that program answers — a daemon's
// answers with the right instance id (as if it had learnt it), a proof it
// obtained from the real daemon for another nonce, an old daemon's 401, a
// proof with a wrong key, nonsense — the client never sends it the token,
// nor a run or anything but the identity challenge, and Dial says the
// daemon is not running, so the CLI runs in its own process. A client that
// dialled the daemon while it lived challenges each new connection too, so
// its calls after the daemon died do not reach the impostor either.
func TestTheTokenGoesOnlyToTheDaemon(t *testing.T) {
	// The dead daemon: it ran on addr, and before it died another user
	// asked it (no token needed) for a proof over a nonce of their choice.
	home := t.TempDir()
	st := (&world{home: home}).open(t)
	srv, err := New(Options{Station: st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()
	statePath := filepath.Join(home, StateFile)
	fixture.Eventuallyf(t, 10*time.Second, func() bool { _, err := os.Stat(statePath); return err == nil }, "the state file")
	state, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var rec State
	if err := json.Unmarshal(state, &rec); err != nil {
		t.Fatal(err)
	}
	stolenNonce := strings.Repeat("A", 43)
	resp, err := http.Get("http://" + addr + IdentityPath + "?nonce=" + stolenNonce)
	if err != nil {
		t.Fatal(err)
	}
	var stolen Identity
	json.NewDecoder(resp.Body).Decode(&stolen)
	resp.Body.Close()
	if stolen.Proof != IdentityProof(rec.Token, stolenNonce) {
		t.Fatalf("the daemon's proof %q, want IdentityProof of its token", stolen.Proof)
	}
	// A CLI command that found the daemon alive, and is still running
	// (a long workflow) when it dies.
	running, err := Dial(context.Background(), home)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	if _, err := running.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// It "crashed": its state file is back, naming its port.
	if err := os.WriteFile(statePath, state, 0o600); err != nil {
		t.Fatal(err)
	}

	health := fmt.Sprintf(`{"api_version":1,"version":"test","pid":%d,"instance":%q,"loaded":[],"output":{}}`, rec.PID, rec.Instance)
	answer := func(identity func(w http.ResponseWriter, nonce string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == IdentityPath {
				identity(w, r.URL.Query().Get("nonce"))
				return
			}
			io.WriteString(w, health)
		}
	}
	proof := func(p string) func(http.ResponseWriter, string) {
		return func(w http.ResponseWriter, _ string) { fmt.Fprintf(w, `{"api_version":1,"proof":%q}`, p) }
	}
	impostors := []struct {
		name string
		h    http.HandlerFunc
	}{
		{"a daemon's answers with the instance id, no proof", answer(func(w http.ResponseWriter, _ string) { io.WriteString(w, `{"api_version":1}`) })},
		{"the proof it obtained for another nonce", answer(proof(stolen.Proof))},
		{"a proof keyed with the instance id", answer(func(w http.ResponseWriter, n string) { proof(IdentityProof(rec.Instance, n))(w, n) })},
		{"the nonce echoed", answer(func(w http.ResponseWriter, n string) { proof(n)(w, n) })},
		{"an old daemon's 401", answer(func(w http.ResponseWriter, _ string) {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"unauthorized","message":"missing or wrong token"}}`)
		})},
		{"a 404", answer(func(w http.ResponseWriter, _ string) { w.WriteHeader(http.StatusNotFound) })},
		{"not JSON", answer(func(w http.ResponseWriter, _ string) { io.WriteString(w, "\x1b[2Kok\r") })},
		{"a redirect to itself", answer(func(w http.ResponseWriter, _ string) {
			w.Header().Set("Location", "/v1/health")
			w.WriteHeader(http.StatusFound)
		})},
	}
	for _, imp := range impostors {
		t.Run(imp.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr) // the recorded port, free again
			if err != nil {
				t.Fatal(err)
			}
			r := serveImpostor(t, ln, imp.h)
			c, err := Dial(context.Background(), home)
			if err == nil {
				c.Run(context.Background(), "test/secret", "run", []byte(`{"api_key":"sk_live_secret"}`), "")
				c.Close()
				t.Errorf("Dial accepted the impostor")
			} else if !errors.Is(err, ErrNotRunning) || !errors.Is(err, ErrUnproven) {
				t.Errorf("Dial: %v, want ErrNotRunning and ErrUnproven", err)
			}
			// The command that dialled the live daemon opens a new
			// connection for its next call: the impostor gets the
			// challenge, not the call.
			if _, err := running.Run(context.Background(), "test/secret", "run", []byte(`{"api_key":"sk_live_secret"}`), ""); !errors.Is(err, ErrUnproven) {
				t.Errorf("a call after the daemon died: %v, want ErrUnproven", err)
			}
			got := r.bytes()
			if bytes.Contains(got, []byte(rec.Token)) {
				t.Errorf("the impostor received the token:\n%s", got)
			}
			if bytes.Contains(got, []byte("Authorization")) || bytes.Contains(got, []byte("sk_live_secret")) {
				t.Errorf("the impostor received more than the challenge:\n%s", got)
			}
			for _, line := range strings.Split(string(got), "\r\n") {
				if m, p, ok := strings.Cut(line, " "); ok && (m == "GET" || m == "POST") && !strings.HasPrefix(p, IdentityPath+"?nonce=") {
					t.Errorf("the impostor was sent %s", line)
				}
			}
			if !bytes.Contains(got, []byte("GET "+IdentityPath+"?nonce=")) {
				t.Errorf("the impostor was not challenged: %q", got)
			}
			ln.Close()
		})
	}
}

// TestIdentityEndpoint: the one endpoint that needs no token answers a
// proof over the caller's nonce and nothing a caller without the token could
// use (not the instance id), refuses bad nonces, and is still refused to
// web pages and other Host names.
func TestIdentityEndpoint(t *testing.T) {
	w := newWorld(t)
	st, err := readState(filepath.Join(w.home, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	port := strings.Split(w.addr, ":")[1]
	nonce := "n0nce-of-the-client_0123456789"
	for _, c := range []struct {
		name, query, host string
		hdr               map[string]string
		status            int
	}{
		{"no token needed", "?nonce=" + nonce, "", nil, 200},
		{"no nonce", "", "", nil, 400},
		{"short nonce", "?nonce=abc", "", nil, 400},
		{"long nonce", "?nonce=" + strings.Repeat("a", maxNonce+1), "", nil, 400},
		{"not base64url", "?nonce=" + strings.Repeat("a", 30) + "%1b[2K", "", nil, 400},
		{"web page", "?nonce=" + nonce, "", map[string]string{"Origin": "https://evil.example"}, 403},
		{"fetch metadata", "?nonce=" + nonce, "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"rebinding", "?nonce=" + nonce, "evil.example:" + port, nil, 403},
	} {
		req, _ := http.NewRequest("GET", "http://"+w.addr+IdentityPath+c.query, nil)
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.name, resp.StatusCode, b, c.status)
			continue
		}
		if c.status != 200 {
			continue
		}
		var id map[string]any
		if err := json.Unmarshal(b, &id); err != nil {
			t.Fatal(err)
		}
		if id["proof"] != IdentityProof(st.Token, nonce) || len(id) != 2 || id["api_version"] != float64(APIVersion) {
			t.Errorf("%s: answer %s, want api_version and the proof only", c.name, b)
		}
		if bytes.Contains(b, []byte(st.Instance)) || bytes.Contains(b, []byte(st.Token)) {
			t.Errorf("%s: the answer gives away the instance id or the token: %s", c.name, b)
		}
	}
	// The other endpoints still need the token, whatever the path looks like.
	for _, p := range []string{"/v1/health", "/v1/identity/", "/v1/identity/../health", "/v1/modules?nonce=" + nonce} {
		resp, err := http.Get("http://" + w.addr + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, resp.StatusCode)
		}
	}
	// The real client proves the daemon on every connection it opens, and
	// goes on working after its connections were closed.
	ctx := context.Background()
	for range 3 {
		if _, err := w.client.Health(ctx); err != nil {
			t.Fatal(err)
		}
		w.client.Close()
	}
}

// TestChallengeRefusesWhatFollowsTheProof: a connection with bytes waiting
// after the identity answer (a second answer queued for the request the
// client would send next) is not used, even when the proof is right — the
// client would read the queued bytes as the daemon's answer.
func TestChallengeRefusesWhatFollowsTheProof(t *testing.T) {
	c := NewClient("127.0.0.1:7420", "the-token")
	for _, extra := range []string{"", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"} {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			req, err := http.ReadRequest(bufio.NewReader(server))
			if err != nil {
				return
			}
			body := fmt.Sprintf(`{"api_version":1,"proof":%q}`, IdentityProof("the-token", req.URL.Query().Get("nonce")))
			fmt.Fprintf(server, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s%s", len(body), body, extra)
		}()
		err := c.challenge(context.Background(), client)
		client.Close()
		if extra == "" && err != nil {
			t.Errorf("the proof alone: %v, want it accepted", err)
		}
		if extra != "" && !errors.Is(err, ErrUnproven) {
			t.Errorf("the proof and a queued answer: %v, want ErrUnproven", err)
		}
	}
}
