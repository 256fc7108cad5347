package daemon

import (
	"bytes"
	"context"
	"crypto/subtle"
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

// Client talks to a running daemon.
type Client struct {
	base  string // http://127.0.0.1:PORT
	token string
	hc    *http.Client
}

// Dial finds the daemon serving home through its state file and checks that
// it answers. It returns ErrNotRunning (wrapped) when there is no state file
// or the daemon it names does not answer with its token and instance id — a
// daemon that died without cleaning up, and maybe another user's program on
// its port.
func Dial(ctx context.Context, home string) (*Client, error) {
	st, err := readState(filepath.Join(home, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	c := NewClient(st.Addr, st.Token)
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	h, err := c.Health(hctx)
	if err != nil {
		return nil, fmt.Errorf("%w (the state file names %s, which does not answer: %v)", ErrNotRunning, st.Addr, err)
	}
	if st.Instance == "" || subtle.ConstantTimeCompare([]byte(h.Instance), []byte(st.Instance)) != 1 {
		c.Close()
		return nil, fmt.Errorf("%w (the program on %s is not the daemon that wrote the state file; a stale file, or another user's program)", ErrNotRunning, st.Addr)
	}
	return c, nil
}

// NewClient returns a client for the daemon at addr (host:port) with token.
func NewClient(addr, token string) *Client {
	// The daemon is on loopback: no proxy, whatever the environment says.
	tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, MaxIdleConnsPerHost: 16}
	return &Client{base: "http://" + addr, token: token, hc: &http.Client{Transport: tr}}
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
