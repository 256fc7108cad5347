package netgate

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"testing"

	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// The target is BenchmarkGateGET ≤ 1.3 × BenchmarkPlainGET: both GET a small
// body from the same loopback server over a kept-alive connection.

var benchBody = []byte(`{"id":"in_1","object":"invoice","amount_due":1200}`)

func benchServer(b *testing.B) *fixture.Server {
	return fixture.HTTPServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchBody)
	}))
}

func BenchmarkPlainGET(b *testing.B) {
	s := benchServer(b)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	url := s.URL + "/v1/invoices/in_1"
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	b.ReportMetric(float64(s.Accepted()), "conns")
}

func BenchmarkGateGET(b *testing.B) { benchGateGET(b, nil, nil) }

// BenchmarkGateGETSecret is BenchmarkGateGET with a secret put into the
// Authorization header: the cost of finding, checking and replacing a
// placeholder, and of taking the value out of the response.
func BenchmarkGateGETSecret(b *testing.B) {
	benchGateGET(b, []Secret{{Name: "BENCH_KEY", Hosts: []string{"http://api.bench.test"}}},
		map[string][]string{"Authorization": {"Bearer " + abi.SecretPlaceholder("BENCH_KEY")}})
}

type benchSecrets struct{}

func (benchSecrets) SecretValue(context.Context, string, string) ([]byte, error) {
	return []byte("sk_test_0123456789abcdef"), nil
}

func benchGateGET(b *testing.B, secrets []Secret, header map[string][]string) {
	s := benchServer(b)
	allow, err := Compile([]string{"http://api.bench.test"})
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(Options{
		Module: "bench/get",
		Allow:  allow,
		Operator: &Operator{
			Resolve:      map[string]netip.AddrPort{"api.bench.test:80": s.Addr},
			AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		},
		Recorder:     sandbox.Discard,
		Secrets:      secrets,
		SecretSource: benchSecrets{},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := sandbox.WithCall(context.Background(), &sandbox.Call{Module: "bench/get", Command: "get"})
	req := &abi.HTTPRequest{Method: "GET", URL: "http://api.bench.test/v1/invoices/in_1", Headers: header}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := g.Do(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Body) != len(benchBody) {
			b.Fatalf("body %q", resp.Body)
		}
	}
	b.ReportMetric(float64(s.Accepted()), "conns")
}
