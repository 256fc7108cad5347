package hubserver_test

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// TestRateLimit: an account's requests are limited per account, requests
// with bad tokens per client address (so guessing tokens is limited), and
// the refusal says when to retry.
func TestRateLimit(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Limits.RatePerSecond = 0.001 // nothing refills during the test
		o.Limits.Burst = 3
	})
	dave, erin := h.Account(t, "dave"), h.Account(t, "erin")
	for i := range 3 {
		if a := send(t, h, "GET", "/v1/whoami", dave, nil); a.status != 200 {
			t.Fatalf("request %d = %d %s", i, a.status, a.body)
		}
	}
	a := send(t, h, "GET", "/v1/whoami", dave, nil)
	if a.status != 429 || a.code() != hub.CodeRateLimited || a.header.Get("Retry-After") == "" {
		t.Errorf("4th request = %d %s (Retry-After %q)", a.status, a.body, a.header.Get("Retry-After"))
	}
	if a := send(t, h, "GET", "/v1/whoami", erin, nil); a.status != 200 {
		t.Errorf("another account is limited by dave's requests: %d %s", a.status, a.body)
	}

	guess := hub.TokenPrefix + strings.Repeat("A", 43)
	for i := range 3 {
		if a := send(t, h, "GET", "/v1/whoami", guess, nil); a.status != 401 {
			t.Fatalf("guess %d = %d %s", i, a.status, a.body)
		}
	}
	if a := send(t, h, "GET", "/v1/whoami", guess, nil); a.status != 429 {
		t.Errorf("4th guess = %d %s, want 429", a.status, a.body)
	}
	if a := send(t, h, "GET", "/v1/info", "", nil); a.status != 429 {
		t.Errorf("anonymous request from the guessing address = %d, want 429", a.status)
	}
	c := h.Client(t, dave)
	_, err := c.WhoAmI(ctx)
	var he *hub.Error
	if hub.CodeOf(err) != hub.CodeRateLimited || !errors.As(err, &he) || he.RetryAfter < 1 {
		t.Errorf("client error = %v, want rate_limited with RetryAfter", err)
	}
}

// TestSecretsNeverLogged: no token or invite code — valid, invalid or
// freshly issued — reaches the hub's log or an error answer.
func TestSecretsNeverLogged(t *testing.T) {
	var logs fixture.SyncBuffer
	h := hubtest.StartWith(t, func(o *hubserver.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	dave := h.Account(t, "dave")
	erin := h.Account(t, "erin")
	secrets := []string{dave, erin}
	c := h.Client(t, dave)
	nt, err := c.CreateToken(ctx, "ci")
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, nt.Secret)
	if _, err := c.CreateTeam(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	inv, err := c.Invite(ctx, "acme", hub.InviteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, inv.Code)
	if _, err := h.Client(t, erin).Join(ctx, inv.Code); err != nil {
		t.Fatal(err)
	}
	guess := hub.TokenPrefix + strings.Repeat("B", 43)
	wrongCode := hub.InvitePrefix + strings.Repeat("C", 43)
	secrets = append(secrets, guess, wrongCode)
	answers := []answer{
		send(t, h, "GET", "/v1/whoami", guess, nil),
		send(t, h, "GET", "/v1/whoami", dave+"x", nil),
		send(t, h, "GET", "/v1/whoami", "", nil),
		send(t, h, "POST", "/v1/invites/accept", erin, hub.AcceptInviteRequest{Code: wrongCode}),
		send(t, h, "POST", "/v1/invites/accept", erin, hub.AcceptInviteRequest{Code: inv.Code}),
		send(t, h, "POST", "/v1/teams", dave, `{"name": "`+dave+`"}`),
	}
	req, _ := http.NewRequest("GET", h.URL+"/v1/whoami", nil)
	req.Header.Set("Authorization", "Token "+dave)
	if resp, err := http.DefaultTransport.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	if err := c.RevokeToken(ctx, nt.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client(t, nt.Secret).WhoAmI(ctx); hub.CodeOf(err) != hub.CodeUnauthenticated {
		t.Errorf("revoked token: %v", err)
	}

	out := logs.String()
	if !strings.Contains(out, `"path":"/v1/whoami"`) || !strings.Contains(out, `"account":"dave"`) {
		t.Fatalf("the log does not record requests; is the test looking at it?\n%s", out)
	}
	for _, s := range secrets {
		for _, part := range []string{s, strings.TrimPrefix(s, hub.TokenPrefix)[:16]} {
			if strings.Contains(out, part) {
				t.Errorf("the log contains a secret (%.8s…)", part)
			}
			for i, a := range answers {
				if strings.Contains(string(a.body), part) {
					t.Errorf("answer %d repeats a secret (%.8s…): %s", i, part, a.body)
				}
			}
		}
	}
	// The token is not in the database either, only its hash. (On
	// PostgreSQL there is no file to read; the stores share the rule and
	// storeContract's token checks.)
	if _, ok := h.Store.(*hubserver.SQLite); !ok {
		return
	}
	db, err := os.ReadFile(h.Dir + "/hub.db")
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(h.Dir + "/hub.db-wal")
	for _, s := range secrets {
		if strings.Contains(string(db)+string(wal), s) {
			t.Errorf("the database holds a secret in clear (%.8s…)", s)
		}
	}
}

// TestBadInput: every malformed request gets a JSON error with a code.
func TestBadInput(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.MaxRequestBytes = 1 << 10 })
	tok := h.Account(t, "dave")
	big := `{"name":"` + strings.Repeat("a", 2<<10) + `"}`
	tests := []struct {
		name, method, path, body string
		header                   [2]string
		status                   int
		code                     hub.Code
	}{
		{"unknown endpoint", "GET", "/v1/nope", "", [2]string{}, 404, hub.CodeNoEndpoint},
		{"wrong method", "DELETE", "/v1/info", "", [2]string{}, 404, hub.CodeNoEndpoint},
		{"newer protocol", "GET", "/v1/info", "", [2]string{hub.HeaderProtocol, "2"}, 400, hub.CodeProtocolUnsupported},
		{"body over the limit", "POST", "/v1/teams", big, [2]string{}, 413, hub.CodeTooLarge},
		{"unknown field", "POST", "/v1/teams", `{"name":"acme","owner":"mallory"}`, [2]string{}, 400, hub.CodeBadRequest},
		{"wrong type", "POST", "/v1/teams", `{"name":1}`, [2]string{}, 400, hub.CodeBadRequest},
		{"bad module id", "GET", "/v1/modules/Dave/x", "", [2]string{}, 400, hub.CodeInvalidName},
		{"bad version", "GET", "/v1/modules/dave/x/versions/v1", "", [2]string{}, 400, hub.CodeInvalidName},
		{"escaped slash", "GET", "/v1/modules/dave%2Fx/y", "", [2]string{}, 400, hub.CodeInvalidName},
		{"missing module", "GET", "/v1/modules/dave/x", "", [2]string{}, 404, hub.CodeModuleNotFound},
		{"missing version", "GET", "/v1/modules/dave/x/versions/1.0.0/bundle", "", [2]string{}, 404, hub.CodeModuleNotFound},
		{"bad team name", "GET", "/v1/teams/ACME", "", [2]string{}, 400, hub.CodeInvalidName},
		{"bad search limit", "GET", "/v1/modules?limit=1000", "", [2]string{}, 400, hub.CodeBadRequest},
		{"bad cursor", "GET", "/v1/sync?cursor=-1", "", [2]string{}, 400, hub.CodeBadRequest},
		{"cursor ahead", "GET", "/v1/sync?cursor=99", "", [2]string{}, 409, hub.CodeCursorAhead},
		{"bad key id", "DELETE", "/v1/keys/xyz", "", [2]string{}, 400, hub.CodeInvalidName},
		{"basic auth", "GET", "/v1/whoami", "", [2]string{"Authorization", "Basic ZGF2ZTpwdw=="}, 401, hub.CodeUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, h.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+tok)
			if tt.header[0] != "" {
				req.Header.Set(tt.header[0], tt.header[1])
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var a answer
			a.status = resp.StatusCode
			buf := make([]byte, 4096)
			n, _ := resp.Body.Read(buf)
			a.body = buf[:n]
			if a.status != tt.status || a.code() != tt.code {
				t.Errorf("%s %s = %d %s, want %d code %d", tt.method, tt.path, a.status, a.body, tt.status, tt.code)
			}
			if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get(hub.HeaderProtocol) != "1" {
				t.Errorf("headers = %v", resp.Header)
			}
		})
	}
	if ts, _ := h.Client(t, tok).Teams(ctx); len(ts) != 0 {
		t.Errorf("a refused request created a team: %+v", ts)
	}
}

// TestClientRefusesInsecureHubs: plain http only to loopback; no client
// without the caller's http.Client.
func TestClientRefusesInsecureHubs(t *testing.T) {
	hc := &http.Client{}
	for _, u := range []string{"http://hub.example.com", "ftp://127.0.0.1", "http://user:pw@127.0.0.1", "127.0.0.1:7777", "https://h.example/?x=1"} {
		if _, err := hubclient.New(u, hc, hubclient.Options{}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:7777", "http://[::1]:7777", "http://localhost", "https://hub.example.com/base/"} {
		if _, err := hubclient.New(u, hc, hubclient.Options{}); err != nil {
			t.Errorf("New(%q) = %v", u, err)
		}
	}
	if _, err := hubclient.New("http://hub.example.com", hc, hubclient.Options{AllowInsecure: true}); err != nil {
		t.Errorf("AllowInsecure: %v", err)
	}
	if _, err := hubclient.New("http://127.0.0.1", nil, hubclient.Options{}); err == nil {
		t.Error("New without an http.Client accepted")
	}
}

// TestProtocolDocumented: docs/hub-protocol.md lists every route the hub
// serves.
func TestProtocolDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/hub-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	route := regexp.MustCompile(`s\.handle\("([A-Z]+) "\+v\+"([^"]+)"`)
	n := 0
	for _, m := range route.FindAllStringSubmatch(string(src), -1) {
		n++
		want := "`" + m[1] + " /v1" + m[2]
		if !strings.Contains(string(doc), want+"`") && !strings.Contains(string(doc), want+"?") {
			t.Errorf("docs/hub-protocol.md does not document %s`", want)
		}
	}
	if n < 25 {
		t.Errorf("found only %d routes in routes.go; is the pattern stale?", n)
	}
}
