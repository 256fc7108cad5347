package hubserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

var ctx = context.Background()

// answer is a raw HTTP answer of the hub.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// code returns the wire error code of the answer (0 if it is not an error).
func (a answer) code() hub.Code {
	var er hub.ErrorResponse
	if json.Unmarshal(a.body, &er) != nil || er.Error == nil {
		return 0
	}
	return er.Error.Code
}

// send does a raw request: body is sent as is when it is a string or
// []byte, as JSON otherwise.
func send(t testing.TB, h *hubtest.Hub, method, path, token string, body any) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, data}
}

// wantCode fails the test unless err (from a client call) carries code.
func wantCode(t testing.TB, what string, err error, code hub.Code) {
	t.Helper()
	if got := hub.CodeOf(err); got != code {
		t.Errorf("%s: err = %v (code %d), want code %d %s", what, err, got, code, code)
	}
}

// lastSeq returns the end of the hub's event log.
func lastSeq(t testing.TB, h *hubtest.Hub) int64 {
	t.Helper()
	n, err := h.Store.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blobCount counts the files in the hub's blob directory.
func blobCount(t testing.TB, h *hubtest.Hub) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(h.Dir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// publish signs and publishes a minimal module.
func publish(t testing.TB, c *hubclient.Client, s *hubclient.Signer, id, version string) hub.Version {
	t.Helper()
	b, err := hubclient.NewBundle(hubtest.Manifest(id, version), hubtest.Wasm(id+version), s)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Publish(ctx, b)
	if err != nil {
		t.Fatalf("publish %s@%s: %v", id, version, err)
	}
	return v
}

// clock is a settable clock for Options.Now.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// within waits for an event on ch, failing the test after a generous
// bound (a hang guard, not a timing assertion).
func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func nowUTC() time.Time { return time.Now().UTC() }
