package daemon

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/station-dev/station/internal/store"
)

// ErrNotRunning is returned by Dial when no daemon serves the station home.
var ErrNotRunning = errors.New("no station daemon is running")

// ErrUnproven is wrapped by the error of a request the client did not send
// because the program on the daemon's address did not prove it knows the
// token (IdentityProof): a stale state file and another program on its port,
// or a daemon older than the identity endpoint.
var ErrUnproven = errors.New("the program on the daemon's address did not prove it knows the token")

// Client talks to a running daemon. It sends the token only on connections
// whose other end proved it knows it: each connection it opens first asks
// GET /v1/identity with a fresh nonce, without the token, and is used only
// if the answer is IdentityProof(token, nonce).
type Client struct {
	base  string // http://127.0.0.1:PORT
	token string
	hc    *http.Client
}

// Dial finds the daemon serving home through its state file and checks that
// it answers. It returns ErrNotRunning (wrapped) when there is no state file
// or the program on the address it names does not prove it knows the token
// (then the error wraps ErrUnproven too) or does not answer with the
// instance id — a daemon that died without cleaning up, and maybe another
// user's program on its port. That program is sent the identity challenge
// and nothing else.
func Dial(ctx context.Context, home string) (*Client, error) {
	st, err := readState(filepath.Join(home, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	if st.Token == "" || st.Instance == "" {
		return nil, fmt.Errorf("%w (the state file %s has no token or no instance id)", ErrNotRunning, filepath.Join(home, StateFile))
	}
	c := NewClient(st.Addr, st.Token)
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	h, err := c.Health(hctx)
	if err != nil {
		c.Close()
		var ue *unprovenError
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("%w: %w (%s; a stale state file and another user's program on %s, or a daemon older than this station: restart station serve)", ErrNotRunning, ErrUnproven, ue.why, st.Addr)
		}
		return nil, fmt.Errorf("%w (the state file names %s, which does not answer: %v)", ErrNotRunning, st.Addr, err)
	}
	if subtle.ConstantTimeCompare([]byte(h.Instance), []byte(st.Instance)) != 1 {
		c.Close()
		return nil, fmt.Errorf("%w (the program on %s is not the daemon that wrote the state file; a stale file, or another user's program)", ErrNotRunning, st.Addr)
	}
	return c, nil
}

// NewClient returns a client for the daemon at addr (host:port) with token.
func NewClient(addr, token string) *Client {
	c := &Client{base: "http://" + addr, token: token}
	d := &net.Dialer{Timeout: 5 * time.Second}
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, a)
		if err != nil {
			return nil, err
		}
		if err := c.challenge(ctx, conn); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	// The daemon is on loopback: no proxy, whatever the environment says.
	tr := &http.Transport{Proxy: nil, DialContext: dial, MaxIdleConnsPerHost: 16}
	c.hc = &http.Client{Transport: tr}
	return c
}

// unprovenError is why a connection was not used.
type unprovenError struct{ addr, why string }

func (e *unprovenError) Error() string {
	return fmt.Sprintf("%v: the program on %s %s", ErrUnproven, e.addr, e.why)
}

func (e *unprovenError) Unwrap() error { return ErrUnproven }

// maxIdentityAnswer bounds the identity answer the client reads.
const maxIdentityAnswer = 4 << 10

// challenge asks the program at the other end of conn, a connection nothing
// else was sent on, to prove it knows c.token, without sending the token:
// GET /v1/identity?nonce=N must answer IdentityProof(token, N) for a fresh
// random N, and leave nothing else on the connection. The answer's text is
// never shown: the error names only its status.
func (c *Client) challenge(ctx context.Context, conn net.Conn) error {
	addr := conn.RemoteAddr().String()
	fail := func(format string, args ...any) error {
		return &unprovenError{addr: addr, why: fmt.Sprintf(format, args...)}
	}
	var nb [32]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return fmt.Errorf("station daemon: nonce: %w", err)
	}
	nonce := base64.RawURLEncoding.EncodeToString(nb[:])
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+IdentityPath+"?nonce="+nonce, nil)
	if err != nil {
		return err
	}
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("station daemon: identity challenge: %w", err)
	}
	br := bufio.NewReaderSize(conn, maxIdentityAnswer)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fail("gave no HTTP answer to the identity challenge")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIdentityAnswer+1))
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return fail("answered the identity challenge with HTTP %d", resp.StatusCode)
	case err != nil || len(body) > maxIdentityAnswer:
		return fail("gave an unreadable or oversized answer to the identity challenge")
	case resp.Close || br.Buffered() > 0:
		return fail("did not keep the connection as a daemon does after the identity challenge")
	}
	var id Identity
	if json.Unmarshal(body, &id) != nil {
		return fail("gave an answer to the identity challenge that is not JSON")
	}
	if !hmac.Equal([]byte(id.Proof), []byte(IdentityProof(c.token, nonce))) {
		return fail("answered the identity challenge without the proof of the token")
	}
	conn.SetDeadline(time.Time{})
	return nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// do sends a request and decodes a JSON answer into out. An error answer
// becomes the error the station would have returned in process (APIError.Err).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("station daemon: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("station daemon: read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error  *APIError       `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(data, &eb) != nil || eb.Error == nil {
			return fmt.Errorf("station daemon: %s: %s", resp.Status, bytes.TrimSpace(data))
		}
		if out != nil && len(eb.Result) > 0 {
			json.Unmarshal(eb.Result, out)
		}
		return eb.Error.Err()
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("station daemon: decode answer: %w", err)
	}
	return nil
}

// Health asks the daemon who it is.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.do(ctx, http.MethodGet, "/v1/health", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Run runs a module command in the daemon; errors are those of Station.Run.
func (c *Client) Run(ctx context.Context, module, command string, input []byte, trace string) ([]byte, error) {
	var out RunResponse
	if err := c.do(ctx, http.MethodPost, "/v1/run", RunRequest{Module: module, Command: command, Input: input, Trace: trace}, &out); err != nil {
		return nil, err
	}
	return out.Output, nil
}

// UISignIn asks the daemon for a one-time sign-in link to its dashboard.
func (c *Client) UISignIn(ctx context.Context) (*UISignIn, error) {
	var out UISignIn
	if err := c.do(ctx, http.MethodPost, "/v1/ui/signin", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Modules lists the installed modules.
func (c *Client) Modules(ctx context.Context) ([]Module, error) {
	var ms []Module
	err := c.do(ctx, http.MethodGet, "/v1/modules", nil, &ms)
	return ms, err
}

// Reload asks the daemon to load module id afresh on its next call.
func (c *Client) Reload(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/v1/modules/"+id+"/reload", nil, nil)
}

// Audit reads the audit log.
func (c *Client) Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditRecord, error) {
	q := url.Values{}
	if f.Module != "" {
		q.Set("module", f.Module)
	}
	if f.Trace != "" {
		q.Set("trace", f.Trace)
	}
	if f.DeniedOnly {
		q.Set("denied", "true")
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var recs []store.AuditRecord
	err := c.do(ctx, http.MethodGet, "/v1/audit?"+q.Encode(), nil, &recs)
	return recs, err
}

// StartWorkflow runs a workflow in the daemon and decodes the run into out.
func (c *Client) StartWorkflow(ctx context.Context, req WorkflowRequest, out any) error {
	return c.do(ctx, http.MethodPost, "/v1/workflows/runs", req, out)
}

// StreamWorkflow runs a workflow in the daemon, calling onEvent with each
// progress event as it happens, and decodes the run into out. A failed run's
// error is what the station would have returned in process.
func (c *Client) StreamWorkflow(ctx context.Context, req WorkflowRequest, onEvent func(json.RawMessage), out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/workflows/runs?stream=true", bytes.NewReader(b))
	if err != nil {
		return err
	}
	hreq.Header.Set("Authorization", "Bearer "+c.token)
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("station daemon: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var eb struct {
			Error *APIError `json:"error"`
		}
		if json.Unmarshal(data, &eb) != nil || eb.Error == nil {
			return fmt.Errorf("station daemon: %s: %s", resp.Status, bytes.TrimSpace(data))
		}
		return eb.Error.Err()
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var l struct {
			Event  json.RawMessage `json:"event"`
			Error  *APIError       `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if err := dec.Decode(&l); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("station daemon: the workflow stream ended early: %w", err)
		}
		switch {
		case len(l.Event) > 0:
			onEvent(l.Event)
			continue
		case len(l.Result) > 0 && out != nil:
			if err := json.Unmarshal(l.Result, out); err != nil {
				return fmt.Errorf("station daemon: decode the run: %w", err)
			}
		}
		if l.Error != nil {
			return l.Error.Err()
		}
		return nil
	}
}

// CheckWorkflow checks a workflow in the daemon and decodes the report into
// out.
func (c *Client) CheckWorkflow(ctx context.Context, req WorkflowRequest, out any) error {
	return c.do(ctx, http.MethodPost, "/v1/workflows/check", req, out)
}

// WorkflowRuns lists runs into out.
func (c *Client) WorkflowRuns(ctx context.Context, limit int, out any) error {
	return c.do(ctx, http.MethodGet, "/v1/workflows/runs?limit="+strconv.Itoa(limit), nil, out)
}

// WorkflowRun reads one run into out.
func (c *Client) WorkflowRun(ctx context.Context, id string, out any) error {
	return c.do(ctx, http.MethodGet, "/v1/workflows/runs/"+url.PathEscape(id), nil, out)
}
