package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/ui"
)

// auditRows is the size of the log BenchmarkAuditPage reads from.
const auditRows = 100_000

// fillAudit stores n decisions of four modules, one in 50 a denial.
func fillAudit(b testing.TB, u *testUI, n int) {
	b.Helper()
	ctx := context.Background()
	at := time.Now().Add(-time.Duration(n) * time.Millisecond)
	batch := make([]sandbox.Decision, 0, 10_000)
	for i := range n {
		d := sandbox.Decision{Time: at.Add(time.Duration(i) * time.Millisecond), Module: fmt.Sprintf("bench/m%d", i%4), Command: "run",
			Capability: sandbox.Network, Target: fmt.Sprintf("api%d.example.com:443", i%97), Allowed: i%50 != 0, Trace: fmt.Sprintf("run/%d/step/s/attempt/1", i/100)}
		if !d.Allowed {
			d.Reason = "is not in its allowlist"
		}
		batch = append(batch, d)
		if len(batch) == cap(batch) || i == n-1 {
			if err := u.st.Store.AppendAudit(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkAuditPage is the server time of the audit page's first page
// (100 decisions) over a log of 100,000, as the daemon answers it to a
// signed-in browser: the query, the page and its rendering, no network.
// The bar is 200 ms; ns/op is it (BENCHMARKS.md, "The dashboard").
func BenchmarkAuditPage(b *testing.B) {
	u := newUI(b, nil)
	fillAudit(b, u, auditRows)
	c, _ := u.signedIn(b)
	var cookie string
	for _, ck := range c.Jar.Cookies(mustURL(b, u.base+"/ui/")) {
		cookie = ui.CookieName + "=" + ck.Value
	}
	host := strings.TrimPrefix(u.base, "http://")
	// The baseline: the store's query for the same first page, alone.
	b.Run("query-only", func(b *testing.B) {
		for b.Loop() {
			recs, err := u.st.Store.Audit(context.Background(), store.AuditFilter{Limit: ui.AuditPageSize + 1})
			if err != nil || len(recs) != ui.AuditPageSize+1 {
				b.Fatal(len(recs), err)
			}
		}
	})
	for _, bc := range []struct{ name, query string }{
		{"all", ""},
		{"denied", "?result=denied"},
		{"module", "?module=bench/m3"},
		{"module+denied", "?module=bench/m2&result=denied"},
		{"deep-cursor", fmt.Sprintf("?before=%d", auditRows/2)},
		{"trace", "?trace=run/500/step/s/attempt/1"},
		// No index serves a capability: a filter that matches nothing
		// reads the whole log.
		{"capability-none", "?capability=subprocess"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "http://"+host+"/ui/audit"+bc.query, nil)
				req.Header.Set("Cookie", cookie)
				rec := httptest.NewRecorder()
				u.daemon.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d\n%s", bc.query, rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "page-bytes")
		})
	}
}
