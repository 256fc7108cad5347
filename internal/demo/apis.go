package demo

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/sdk/abi"
)

// The names the TLS stand-in answers for: the hosts examples/stripe-invoicing
// may reach.
var apiNames = []string{"api.stripe.com", "api.groq.com"}

// maxBody bounds a request body the stand-ins read.
const maxBody = 1 << 20

// maxReply bounds the content of a canned completion, in characters.
const maxReply = 200

// APIs are the stand-ins the demo routes traffic to, each on 127.0.0.1:
// api.stripe.com and api.groq.com over TLS, with a certificate of a
// throwaway CA (module egress reaches them through the operator settings
// Config writes), and an OpenAI-style LLM provider over plain HTTP for the
// station's own LLM client (which accepts http only for a server on this
// machine).
type APIs struct {
	tls, llm     *http.Server
	tlsLn, llmLn net.Listener
	caPEM        []byte
	requests     atomic.Int64
	invoices     atomic.Int64
}

// quiet drops the servers' own log lines (a client that gave up on a TLS
// handshake): the demo's output is the station's.
var quiet = log.New(io.Discard, "", 0)

// StartAPIs starts the stand-ins. Close stops them.
func StartAPIs() (*APIs, error) {
	cert, caPEM, err := newCertificate(apiNames)
	if err != nil {
		return nil, fmt.Errorf("demo: certificate for the stand-in APIs: %w", err)
	}
	a := &APIs{caPEM: caPEM}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", a.createInvoice)
	mux.HandleFunc("POST /openai/v1/chat/completions", completion)
	a.tlsLn, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	a.tls = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.requests.Add(1)
			if !bearer(r) {
				apiError(w, http.StatusUnauthorized, "You did not provide an API key: send it as Authorization: Bearer sk_test_...")
				return
			}
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          quiet,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go a.tls.ServeTLS(a.tlsLn, "", "")

	llmMux := http.NewServeMux()
	llmMux.HandleFunc("POST /v1/chat/completions", completion)
	a.llmLn, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("demo: %w", err)
	}
	a.llm = &http.Server{Handler: llmMux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: quiet}
	go a.llm.Serve(a.llmLn)
	return a, nil
}

// Addr is the TLS stand-in's address (host:port on 127.0.0.1).
func (a *APIs) Addr() string { return a.tlsLn.Addr().String() }

// LLMAddr is the LLM provider stand-in's address.
func (a *APIs) LLMAddr() string { return a.llmLn.Addr().String() }

// CAPEM is the certificate, in PEM, of the CA that signed the TLS
// stand-in's certificate.
func (a *APIs) CAPEM() []byte { return a.caPEM }

// Requests is how many requests the stand-ins for api.stripe.com and
// api.groq.com have had: module egress that the network gate let through.
func (a *APIs) Requests() int { return int(a.requests.Load()) }

// Close stops the stand-ins.
func (a *APIs) Close() error {
	var err error
	if a.tls != nil {
		err = a.tls.Close()
	} else if a.tlsLn != nil {
		err = a.tlsLn.Close()
	}
	if a.llm != nil {
		err = errors.Join(err, a.llm.Close())
	}
	return err
}

// Config is the station configuration (config.yaml) that routes module
// egress for api.stripe.com and api.groq.com to the stand-in, trusting the
// CA in caFile (relative to the station home), and points the station's own
// LLM client at the LLM stand-in: the settings an operator would use for a
// proxy or a test double of their own.
func (a *APIs) Config(caFile string) string {
	var b strings.Builder
	b.WriteString("# Written by station demo. network: module egress only — the station's own clients ignore it.\n")
	b.WriteString("network:\n  resolve:\n")
	for _, n := range apiNames {
		fmt.Fprintf(&b, "    - %s:443=%s\n", n, a.Addr())
	}
	fmt.Fprintf(&b, "  extra_ca: %s\n  allow_private: [127.0.0.0/8]\n", caFile)
	b.WriteString("# The station's own LLM (workflow llm steps, modules with requires.llm): a stand-in on loopback.\n")
	fmt.Fprintf(&b, "llm:\n  base_url: http://%s/v1\n  model: demo\n", a.LLMAddr())
	return b.String()
}

// bearer reports whether r carries an API key the way Stripe and Groq
// take it. The stand-ins accept any key but a secret's placeholder: the
// station puts the value in before a request leaves it.
func bearer(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && strings.TrimSpace(key) != "" && !strings.Contains(key, abi.SecretPrefix)
}

// createInvoice answers POST /v1/invoices as Stripe does: a draft invoice
// for the form's customer, or Stripe's error for a missing one.
func (a *APIs) createInvoice(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		apiError(w, statusOf(err), "Invalid request body: "+err.Error())
		return
	}
	customer := r.PostForm.Get("customer")
	if customer == "" {
		apiError(w, http.StatusBadRequest, "Missing required param: customer.")
		return
	}
	n := a.invoices.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": fmt.Sprintf("in_demo_%04d", n), "object": "invoice", "status": "draft",
		"amount_due": 4200, "currency": "eur", "customer": customer, "livemode": false,
	})
}

// completion answers a chat completion in the OpenAI format (which Groq
// speaks too) with a canned sentence that quotes the last message, counting
// words as tokens; with response_format json_object, the sentence is a JSON
// object's "content".
func completion(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		apiError(w, statusOf(err), "the body is not a chat completion request: "+err.Error())
		return
	}
	if len(req.Messages) == 0 {
		apiError(w, http.StatusBadRequest, "messages: at least one message is required")
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	content := truncate("Noted: "+strings.Join(strings.Fields(prompt), " "), maxReply)
	if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object" {
		b, _ := json.Marshal(map[string]string{"content": content})
		content = string(b)
	}
	in, out := len(strings.Fields(prompt)), len(strings.Fields(content))
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-demo", "object": "chat.completion", "model": "demo",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]string{"role": "assistant", "content": content}}},
		"usage":   map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// truncate cuts s to at most n characters, never inside one, and makes it
// valid UTF-8.
func truncate(s string, n int) string {
	r := []rune(strings.ToValidUTF8(s, "\uFFFD"))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}

// statusOf is 413 for a body over maxBody, 400 otherwise.
func statusOf(err error) int {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// apiError writes an error in the shape Stripe and OpenAI share.
func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"type": "invalid_request_error", "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// newCertificate returns a serving certificate for names, signed by a new
// CA that lives a day, and that CA's certificate in PEM. The CA's key is
// dropped: nothing else can be signed with it.
func newCertificate(names []string) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "station demo CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
