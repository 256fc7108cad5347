package bench

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// BenchmarkHTTPGet is one GET of a small JSON document from a loopback
// server over a kept-alive connection: by plain Go, and by a module through
// the station's network gate (the guest's net/http client, the request and
// response documents, the allowlist and address checks, the audit record).
// conns is the number of connections the server accepted during the
// benchmark (1 or 0 when the connection is kept alive). The target is
// station ≤ 1.3 × plain-go. internal/netgate's
// BenchmarkGateGET is the gate alone.
func BenchmarkHTTPGet(b *testing.B) {
	b.Run("plain-go", func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{}}
		defer c.CloseIdleConnections()
		b.ReportAllocs()
		c0 := conns.Load()
		for b.Loop() {
			resp, err := c.Get(server.URL + "/v1/invoices/in_1")
			if err != nil {
				b.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || len(got) != len(body) {
				b.Fatalf("got %q, %v", got, err)
			}
		}
		b.ReportMetric(float64(conns.Load()-c0), "conns")
	})
	b.Run("station", func(b *testing.B) {
		st := sharedStation(b)
		ctx := context.Background()
		req := []byte(`{"url":"` + fetchURL + `"}`)
		want := `{"status":200,"bytes":50}`
		b.ReportAllocs()
		c0 := conns.Load()
		for b.Loop() {
			out, err := st.Run(ctx, fetchID, "get", req)
			if err != nil || string(out) != want {
				b.Fatalf("got %s, %v; want %s", out, err, want)
			}
		}
		b.ReportMetric(float64(conns.Load()-c0), "conns")
	})
}
