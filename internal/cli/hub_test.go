package cli_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/cli"
	"github.com/station-dev/station/internal/hubclient"
)

// TestHubServe: `station hub serve` with --bootstrap-user prints the first
// token once, serves the protocol on the address it reports, accepts a token
// made by `station hub user create` while it runs, and stops cleanly when
// its context ends.
func TestHubServe(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"hub", "serve", "--addr", "127.0.0.1:0", "--data", data, "--bootstrap-user", "dave"},
			cli.IO{Cache: testCache, In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	listening := regexp.MustCompile(`hub listening on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	for listening.FindStringSubmatch(errb.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("hub did not report its address; stderr:\n%s", errb.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the output, bounded by the deadline
	}
	url := listening.FindStringSubmatch(errb.String())[1]
	daveToken := strings.TrimSpace(out.String())
	if !strings.HasPrefix(daveToken, hub.TokenPrefix) {
		t.Fatalf("bootstrap token on stdout = %q", daveToken)
	}

	// A second account, created while the hub runs.
	r := station(t, t.TempDir(), "", "hub", "user", "create", "erin", "--data", data).want(t, 0)
	erinToken := strings.TrimSpace(r.out)
	station(t, t.TempDir(), "", "hub", "user", "create", "erin", "--data", data).want(t, 1)
	station(t, t.TempDir(), "", "hub", "user", "create", "Not_A_Name", "--data", data).want(t, 1)

	for name, tok := range map[string]string{"dave": daveToken, "erin": erinToken} {
		c, err := hubclient.New(url, &http.Client{Transport: &http.Transport{}}, hubclient.Options{Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.WhoAmI(ctx)
		if err != nil || a.Name != name {
			t.Errorf("whoami with %s's token = %+v, %v", name, a, err)
		}
	}
	if strings.Contains(errb.String(), daveToken) || strings.Contains(errb.String(), erinToken) {
		t.Error("a token appeared in the hub's log")
	}

	cancel()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Errorf("hub serve exited %d; stderr:\n%s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hub serve did not stop")
	}

	// Restarted with the same data, the account is still there and the
	// bootstrap user is not re-created.
	out2 := station(t, t.TempDir(), "", "hub", "user", "token", "dave", "--data", data).want(t, 0)
	if !strings.HasPrefix(strings.TrimSpace(out2.out), hub.TokenPrefix) {
		t.Errorf("user token: stdout %q", out2.out)
	}
	station(t, t.TempDir(), "", "hub", "user", "token", "nobody", "--data", data).want(t, 1)
}
