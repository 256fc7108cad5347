package demo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/station-dev/station/internal/config"
	"github.com/station-dev/station/internal/llm"
)

func startAPIs(t *testing.T) *APIs {
	t.Helper()
	a, err := StartAPIs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// client reaches the TLS stand-in under name, trusting the demo's CA (and
// only it), as the station's network gate would with the demo's config.
func client(t *testing.T, a *APIs) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.CAPEM()) {
		t.Fatal("CAPEM holds no certificate")
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, a.Addr())
		},
	}}
}

type reply struct {
	status int
	body   map[string]any
}

func send(t *testing.T, c *http.Client, method, u, contentType, auth string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode}
	if json.Unmarshal(raw, &r.body) != nil && resp.StatusCode < 300 {
		t.Fatalf("%s %s: %d, not JSON: %q", method, u, resp.StatusCode, raw)
	}
	return r
}

func (r reply) errorMessage() string {
	e, _ := r.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func TestAPIsListenOnLoopbackOnly(t *testing.T) {
	a := startAPIs(t)
	for name, addr := range map[string]string{"TLS stand-in": a.Addr(), "LLM stand-in": a.LLMAddr()} {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Errorf("%s listens on %q (%v), want 127.0.0.1 and a port of its own", name, addr, err)
		}
	}
	// The configuration routes module egress to the stand-in and nowhere
	// else, trusts the CA only through extra_ca, and grants only loopback.
	cfg := a.Config(CAFile)
	for _, want := range []string{
		"api.stripe.com:443=" + a.Addr(), "api.groq.com:443=" + a.Addr(), "extra_ca: " + CAFile,
		"allow_private: [127.0.0.0/8]", "base_url: http://" + a.LLMAddr() + "/v1",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if !strings.HasPrefix(cfg, configHeader) {
		t.Errorf("config does not start with %q, so a rerun would refuse its own home:\n%s", configHeader, cfg)
	}
	// The station accepts it as it is.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	os.WriteFile(filepath.Join(home, CAFile), a.CAPEM(), 0o600)
	c, err := config.Load(home)
	if err != nil {
		t.Fatalf("the station refuses the demo's config: %v", err)
	}
	if _, err := c.RootCAs(home); err != nil {
		t.Fatalf("the station refuses the demo's CA: %v", err)
	}
}

func TestStripeStandIn(t *testing.T) {
	a := startAPIs(t)
	c := client(t, a)
	const u, form, key = "https://api.stripe.com/v1/invoices", "application/x-www-form-urlencoded", "Bearer sk_test_demo"
	invoice := func(customer string) reply {
		return send(t, c, "POST", u, form, key, strings.NewReader(url.Values{"customer": {customer}}.Encode()))
	}

	for i, id := range []string{"in_demo_0001", "in_demo_0002"} {
		r := invoice("cus_" + id)
		if r.status != 200 || r.body["id"] != id || r.body["customer"] != "cus_"+id || r.body["status"] != "draft" || r.body["amount_due"] != 4200.0 || r.body["currency"] != "eur" {
			t.Errorf("invoice %d: %d %v", i, r.status, r.body)
		}
	}

	// Bad input gets Stripe's status and an error in Stripe's shape (the
	// example module shows its message).
	for _, tc := range []struct {
		name, method, path, contentType, auth string
		body                                  string
		status                                int
		message                               string
	}{
		{"no customer", "POST", "/v1/invoices", form, key, "currency=eur", 400, "Missing required param: customer."},
		{"no key", "POST", "/v1/invoices", form, "", "customer=cus_x", 401, "You did not provide an API key"},
		{"not a bearer key", "POST", "/v1/invoices", form, "Basic c2s6", "customer=cus_x", 401, "You did not provide an API key"},
		{"empty key", "POST", "/v1/invoices", form, "Bearer  ", "customer=cus_x", 401, "You did not provide an API key"},
		{"bad form", "POST", "/v1/invoices", form, key, "customer=%zz", 400, "Invalid request body"},
		{"body over 1 MiB", "POST", "/v1/invoices", form, key, "customer=" + strings.Repeat("x", maxBody+1), 413, "Invalid request body"},
		{"wrong method", "GET", "/v1/invoices", "", key, "", 405, ""},
		{"unknown path", "POST", "/v1/charges", form, key, "customer=cus_x", 404, ""},
	} {
		r := send(t, c, tc.method, "https://api.stripe.com"+tc.path, tc.contentType, tc.auth, strings.NewReader(tc.body))
		if r.status != tc.status || !strings.Contains(r.errorMessage(), tc.message) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.status, r.errorMessage(), tc.status, tc.message)
		}
	}
	// The refusals created nothing.
	if r := invoice("cus_after"); r.body["id"] != "in_demo_0003" {
		t.Errorf("after the refusals, invoice %v, want in_demo_0003", r.body["id"])
	}
	if n := a.Requests(); n != 11 {
		t.Errorf("Requests() = %d, want 11 (every request that reached the stand-in)", n)
	}
}

func TestStandInCertificate(t *testing.T) {
	a := startAPIs(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(a.CAPEM())
	handshake := func(name string, roots *x509.CertPool) error {
		conn, err := tls.Dial("tcp", a.Addr(), &tls.Config{ServerName: name, RootCAs: roots})
		if err == nil {
			conn.Close()
		}
		return err
	}
	for _, name := range apiNames {
		if err := handshake(name, pool); err != nil {
			t.Errorf("%s with the demo's CA: %v", name, err)
		}
	}
	// Only the names the example may reach, and only for a client that
	// trusts the demo's CA.
	var hostErr x509.HostnameError
	if err := handshake("evil.example", pool); !errors.As(err, &hostErr) {
		t.Errorf("evil.example: %v, want a hostname mismatch", err)
	}
	var authErr x509.UnknownAuthorityError
	if err := handshake("api.stripe.com", x509.NewCertPool()); !errors.As(err, &authErr) {
		t.Errorf("without the demo's CA: %v, want an unknown authority", err)
	}
	block, _ := pem.Decode(a.CAPEM())
	if block == nil {
		t.Fatalf("CAPEM is not PEM: %q", a.CAPEM())
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !ca.IsCA || !ca.MaxPathLenZero || ca.NotAfter.Sub(ca.NotBefore) > 26*time.Hour {
		t.Errorf("CA %+v (%v): want a CA that signs only leaves and lives about a day", ca, err)
	}
}

func TestCompletionStandIns(t *testing.T) {
	a := startAPIs(t)
	llmURL := "http://" + a.LLMAddr() + "/v1/chat/completions"
	groq := client(t, a)
	const groqURL, key = "https://api.groq.com/openai/v1/chat/completions", "Bearer gsk_demo"
	plain := &http.Client{}

	chat := func(c *http.Client, u, auth, body string) reply {
		return send(t, c, "POST", u, "application/json", auth, strings.NewReader(body))
	}
	content := func(r reply) string {
		ch, _ := r.body["choices"].([]any)
		if len(ch) != 1 {
			t.Fatalf("choices %v", r.body)
		}
		m, _ := ch[0].(map[string]any)["message"].(map[string]any)
		s, _ := m["content"].(string)
		return s
	}

	req := `{"model":"demo","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Invoice in_1 is  draft"}]}`
	for name, r := range map[string]reply{"LLM": chat(plain, llmURL, "", req), "groq": chat(groq, groqURL, key, req)} {
		if got := content(r); r.status != 200 || got != "Noted: Invoice in_1 is draft" {
			t.Errorf("%s: %d %q", name, r.status, got)
		}
		if u, _ := r.body["usage"].(map[string]any); u["prompt_tokens"] != 4.0 || u["completion_tokens"] != 5.0 || u["total_tokens"] != 9.0 {
			t.Errorf("%s: usage %v", name, r.body["usage"])
		}
	}

	// JSON mode answers a JSON object.
	r := chat(plain, llmURL, "", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`)
	var obj map[string]string
	if err := json.Unmarshal([]byte(content(r)), &obj); err != nil || obj["content"] != "Noted: x" {
		t.Errorf("JSON mode: %q (%v)", content(r), err)
	}

	// A long prompt of multi-byte characters: bounded, and still UTF-8.
	long, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("é€😀", 500) + "\xff"}}})
	got := content(chat(plain, llmURL, "", string(long)))
	if !utf8.ValidString(got) || utf8.RuneCountInString(got) > maxReply+1 || !strings.HasSuffix(got, "…") {
		t.Errorf("long prompt: %d characters, valid UTF-8 %v: %q", utf8.RuneCountInString(got), utf8.ValidString(got), got)
	}

	for _, tc := range []struct {
		name, body string
		status     int
		message    string
	}{
		{"not JSON", `{"messages":`, 400, "not a chat completion request"},
		{"wrong type", `{"messages":"hi"}`, 400, "not a chat completion request"},
		{"no messages", `{"model":"demo","messages":[]}`, 400, "at least one message"},
		{"body over 1 MiB", `{"messages":[{"content":"` + strings.Repeat("x", maxBody) + `"}]}`, 413, "request body too large"},
	} {
		r := chat(plain, llmURL, "", tc.body)
		if r.status != tc.status || !strings.Contains(r.errorMessage(), tc.message) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.status, r.errorMessage(), tc.status, tc.message)
		}
	}
	if r := chat(groq, groqURL, "", req); r.status != 401 {
		t.Errorf("groq without a key: %d, want 401", r.status)
	}
	if r := send(t, plain, "GET", llmURL, "", "", nil); r.status != 405 {
		t.Errorf("GET on the LLM stand-in: %d, want 405", r.status)
	}

	// The station's own LLM client takes the stand-in's answers.
	res, err := llm.New(llm.Config{BaseURL: "http://" + a.LLMAddr() + "/v1", Model: "demo"}, nil).Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "hello there"}}})
	if err != nil || res.Content != "Noted: hello there" || res.Usage.TotalTokens != 5 {
		t.Errorf("the station's LLM client: %+v, %v", res, err)
	}
}
