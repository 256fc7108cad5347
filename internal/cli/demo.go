package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/station-dev/station/internal/cli/cmdutil"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
)

func (a *app) demoCmd() *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Build the example modules, install them in a throwaway station and run them",
		Long: `Demo shows the station end to end on embedded defaults, without touching your
own station or the internet:

  1. builds examples/hello and examples/stripe-invoicing from source,
  2. starts a stand-in for api.stripe.com on 127.0.0.1 and points the station
     at it through operator configuration (a resolve override, an extra CA and a
     grant of the loopback range — the same settings an operator would use),
  3. installs both modules into a temporary STATION_HOME,
  4. runs a command that succeeds and one that the sandbox denies,
  5. prints the audit log.

Run it from a checkout of the station repository (it builds the examples).`,
		Args: cmdutil.ExactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.demo(cmd.Context(), keep)
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the demo station home instead of deleting it")
	return c
}

func (a *app) demo(ctx context.Context, keep bool) (err error) {
	w := a.IO.Out
	step := func(format string, args ...any) { fmt.Fprintf(w, "\n==> "+format+"\n", args...) }

	root, err := wasmbuild.RepoRoot()
	if err != nil {
		return fmt.Errorf("demo: %w (run it from a checkout of the station repository)", err)
	}
	home := a.Home
	if home == "" {
		home, err = os.MkdirTemp("", "station-demo-")
		if err != nil {
			return err
		}
		if !keep {
			defer os.RemoveAll(home)
		}
	}
	fmt.Fprintf(w, "station demo — throwaway STATION_HOME=%s\n", home)

	s, fake, err := a.demoStation(ctx, root, home, step)
	if err != nil {
		return err
	}
	defer fake.Close()
	defer s.Close(context.WithoutCancel(ctx))

	run := func(id, command, input string) error {
		step("station run %s %s --input '%s'", id, command, input)
		out, err := s.Run(ctx, id, command, []byte(input))
		if err != nil {
			fmt.Fprintf(w, "    error (exit code %d): %s\n", cmdutil.ExitCode(err), cmdutil.TermText(err.Error()))
			return err
		}
		fmt.Fprintf(w, "    %s\n", cmdutil.TermText(string(out)))
		return nil
	}
	if err := run("station/hello", "greet", `{"name":"Ada"}`); err != nil {
		return err
	}
	if err := run("dave/stripe-invoicing", "create-invoice", `{"api_key":"sk_test_demo","customer":"cus_demo"}`); err != nil {
		return err
	}
	denied := run("dave/stripe-invoicing", "fetch", `{"url":"https://evil.example/steal"}`)
	if denied == nil || cmdutil.ExitCode(denied) != ExitViolation {
		return fmt.Errorf("demo: expected the sandbox to deny evil.example, got %v", denied)
	}
	fmt.Fprintln(w, "    ^ denied by the network gate, as the manifest declares: no connection was attempted")

	step("station audit")
	if err := s.Audit.Flush(ctx); err != nil {
		return err
	}
	recs, err := s.Store.Audit(ctx, store.AuditFilter{})
	if err != nil {
		return err
	}
	for _, r := range recs {
		d := "allow"
		if !r.Allowed {
			d = "DENY "
		}
		if r.Folded > 0 {
			d += fmt.Sprintf(" (folded %d)", r.Folded)
		}
		fmt.Fprintf(w, "    %s  %-22s %-15s %-8s %s  %s %s\n", r.Time.Local().Format("15:04:05.000"), cmdutil.TermText(r.Module), cmdutil.TermText(r.Command), cmdutil.TermText(string(r.Capability)), d, cmdutil.TermText(r.Target), cmdutil.TermText(r.Reason))
	}
	fmt.Fprintf(w, "\ndemo finished: one call allowed, one denied; fake API saw %d request(s), all from allowed calls.\n", fake.requests())
	return nil
}

// demoStation builds the example modules from the repository at root,
// starts the stand-in APIs, writes the configuration that routes module
// egress to them and installs the examples into the station at home. The
// caller closes both.
func (a *app) demoStation(ctx context.Context, root, home string, step func(string, ...any)) (*station.Station, *fakeAPIs, error) {
	step("building the example modules (GOOS=wasip1 GOARCH=wasm)")
	dirs := map[string]string{}
	for _, ex := range []string{"hello", "stripe-invoicing"} {
		src := filepath.Join(root, "examples", ex)
		man, err := manifest.Load(src)
		if err != nil {
			return nil, nil, err
		}
		dst := filepath.Join(home, "build", ex)
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return nil, nil, err
		}
		start := time.Now()
		if err := wasmbuild.Build(ctx, src, filepath.Join(dst, man.Wasm)); err != nil {
			return nil, nil, fmt.Errorf("demo: build %s: %w", ex, err)
		}
		raw, err := os.ReadFile(filepath.Join(src, "module.yaml"))
		if err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(dst, "module.yaml"), raw, 0o600); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(a.IO.Out, "    built %s in %s\n", cmdutil.TermText(man.ID), time.Since(start).Round(time.Millisecond))
		dirs[ex] = dst
	}

	step("starting a stand-in for api.stripe.com and api.groq.com on 127.0.0.1")
	fake, err := startFakeAPIs(home)
	if err != nil {
		return nil, nil, fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(a.IO.Out, "    listening on %s; %s/config.yaml routes both names there for module egress:\n", fake.Addr(), home)
	cfg, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	for _, l := range strings.Split(strings.TrimSpace(string(cfg)), "\n") {
		fmt.Fprintf(a.IO.Out, "      %s\n", l)
	}

	s, err := station.Open(ctx, home, station.Options{Logger: a.Logger(home)})
	if err != nil {
		fake.Close()
		return nil, nil, err
	}

	for _, ex := range []string{"hello", "stripe-invoicing"} {
		step("station module install %s", filepath.Join("examples", ex))
		if _, err := s.Install(ctx, dirs[ex], func(p station.Plan) (bool, error) {
			cmdutil.PrintPlan(a.IO.Out, p)
			fmt.Fprintln(a.IO.Out, "    (approved by the demo; normally you are asked)")
			return true, nil
		}); err != nil {
			s.Close(context.WithoutCancel(ctx))
			fake.Close()
			return nil, nil, err
		}
	}
	return s, fake, nil
}

type fakeAPIs struct {
	srv, llm *http.Server
	ln       net.Listener
	n        chan struct{}
	cnt      int
}

func (f *fakeAPIs) Addr() string { return f.ln.Addr().String() }
func (f *fakeAPIs) Close() {
	f.srv.Close()
	if f.llm != nil {
		f.llm.Close()
	}
}
func (f *fakeAPIs) requests() int {
	for {
		select {
		case <-f.n:
			f.cnt++
		default:
			return f.cnt
		}
	}
}

// startFakeAPIs serves stand-ins for Stripe and Groq over TLS on loopback,
// with a throwaway CA, and writes the station config that routes module
// egress for those names to it.
func startFakeAPIs(home string) (*fakeAPIs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "station demo CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "api.stripe.com"},
		DNSNames:  []string{"api.stripe.com", "api.groq.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caPath := filepath.Join(home, "demo-ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return nil, err
	}

	f := &fakeAPIs{n: make(chan struct{}, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", func(rw http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		json.NewEncoder(rw).Encode(map[string]any{"id": "in_demo_0001", "status": "draft", "amount_due": 4200, "currency": "eur", "customer": r.FormValue("customer")})
	})
	mux.HandleFunc("POST /openai/v1/chat/completions", func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(rw).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": "A demo summary."}}}})
	})
	count := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case f.n <- struct{}{}:
		default:
		}
		mux.ServeHTTP(rw, r)
	})
	f.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.srv = &http.Server{Handler: count, ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}},
	}}
	go f.srv.ServeTLS(f.ln, "", "")

	// The station's own LLM provider: plain HTTP on loopback (the LLM
	// client accepts http only for a server on this machine).
	llmLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, err
	}
	llmMux := http.NewServeMux()
	llmMux.HandleFunc("POST /v1/chat/completions", demoCompletion)
	f.llm = &http.Server{Handler: llmMux, ReadHeaderTimeout: 5 * time.Second}
	go f.llm.Serve(llmLn)

	addr := f.ln.Addr().String()
	cfg := fmt.Sprintf(`# Written by station demo. network: module egress only — the station's own clients ignore it.
network:
  resolve:
    - api.stripe.com:443=%s
    - api.groq.com:443=%s
  extra_ca: demo-ca.pem
  allow_private: [127.0.0.0/8]
# The station's own LLM (workflow llm steps, modules with requires.llm): a stand-in on loopback.
llm:
  base_url: http://%s/v1
  model: demo
`, addr, addr, llmLn.Addr())
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// demoCompletion answers a chat completion with a canned sentence, in the
// OpenAI format, counting words as tokens.
func demoCompletion(rw http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	prompt := ""
	if n := len(req.Messages); n > 0 {
		prompt = req.Messages[n-1].Content
	}
	content := "Noted: " + prompt
	if len(content) > 200 {
		content = content[:200]
	}
	in, out := len(strings.Fields(prompt)), len(strings.Fields(content))
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(map[string]any{
		"id": "chatcmpl-demo", "object": "chat.completion", "model": "demo",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]string{"role": "assistant", "content": content}}},
		"usage":   map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}
