package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/station-dev/station/internal/daemon"
	"github.com/station-dev/station/internal/mcpserver"
	"github.com/station-dev/station/internal/probe"
)

// BenchmarkToolCall measures one call of a module's command as an MCP tool
// against the same call through Station.Run (the baseline in the same run):
// what the protocol adds, in process (the SDK's in-memory transport, as
// stdio without the pipe) and over the daemon's /mcp on loopback.
func BenchmarkToolCall(b *testing.B) {
	w := newWorld(b)
	input := probe.Run(probe.Output(16))
	ctx := context.Background()
	if _, err := w.st.Run(ctx, pureMod, probe.Command, input); err != nil {
		b.Fatal(err)
	}
	b.Run("station-run", func(b *testing.B) {
		for range b.N {
			if _, err := w.st.Run(ctx, pureMod, probe.Command, input); err != nil {
				b.Fatal(err)
			}
		}
	})
	callLoop := func(b *testing.B, cs *mcp.ClientSession) {
		p := &mcp.CallToolParams{Name: "pure__run", Arguments: json.RawMessage(input)}
		for range b.N {
			r, err := cs.CallTool(ctx, p)
			if err != nil || r.IsError {
				b.Fatalf("%v %+v", err, text(r))
			}
		}
	}
	b.Run("mcp-in-memory", func(b *testing.B) {
		srv, err := mcpserver.New(ctx, w.st, mcpserver.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go srv.Serve(sctx, st)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ResetTimer()
		callLoop(b, cs)
	})
	b.Run("mcp-http", func(b *testing.B) {
		addr, token := w.serveHTTP(b, mcpserver.Options{Poll: time.Minute})
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: "http://" + addr + daemon.MCPPath, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ResetTimer()
		callLoop(b, cs)
	})
}
