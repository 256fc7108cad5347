package hubserver

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The hub's metrics, in the Prometheus text exposition format 0.0.4
// (docs/hub-operations.md lists them; RATIONALE.md, "Why hand-written
// Prometheus exposition?", says why there is no client library).
//
// Every label value comes from a small fixed set — a route pattern of
// routes.go, an HTTP method of seven or "other", a status code the hub
// itself chose — never from the request: a client can add no series, so
// the number of series is bounded whatever it sends. Nothing is per
// account. Gauges are read when scraped; counters and histograms are kept
// in a few maps under one mutex each, which is cheap next to what a
// request does (a database transaction).

// MetricsContentType is the content type of GET /metrics.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// routeUnmatched is the route label of a request no endpoint matched (a
// 404 or 405 of any path): one series, whatever the paths.
const routeUnmatched = "unmatched"

// durationBuckets are the upper bounds, in seconds, of the request
// duration histogram: Prometheus's defaults, and 30 s and 120 s for
// uploads of large bundles (requests are cut off at 2 minutes).
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120}

// delayBuckets bound the delay from an event's time to its fan-out.
var delayBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30}

// labels are the values of a series' labels, in the order of its family's
// label names; unused ones are empty. A fixed-size array is a map key
// without an allocation.
type labels [3]string

// counterVec is a family of counters.
type counterVec struct {
	name, help string
	names      []string

	mu   sync.Mutex
	vals map[labels]uint64
}

func newCounter(name, help string, names ...string) *counterVec {
	return &counterVec{name: name, help: help, names: names, vals: map[labels]uint64{}}
}

func (c *counterVec) add(l labels, n uint64) {
	c.mu.Lock()
	c.vals[l] += n
	c.mu.Unlock()
}

func (c *counterVec) inc(l labels) { c.add(l, 1) }

// histogramVec is a family of histograms with the same buckets.
type histogramVec struct {
	name, help string
	names      []string
	buckets    []float64 // upper bounds, increasing; +Inf is implied

	mu   sync.Mutex
	vals map[labels]*histogram
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

func newHistogram(name, help string, buckets []float64, names ...string) *histogramVec {
	return &histogramVec{name: name, help: help, names: names, buckets: buckets, vals: map[labels]*histogram{}}
}

func (h *histogramVec) observe(l labels, v float64) {
	i, _ := slices.BinarySearch(h.buckets, v) // the first bound >= v
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.vals[l]
	if x == nil {
		x = &histogram{counts: make([]uint64, len(h.buckets)+1)}
		h.vals[l] = x
	}
	x.counts[i]++
	x.sum += v
	x.count++
}

// metrics are a Server's counters and histograms.
type metrics struct {
	start    time.Time
	inFlight atomic.Int64

	requests    *counterVec
	duration    *histogramVec
	aborted     *counterVec
	internal    *counterVec
	rateLimited *counterVec
	reconnected *counterVec
	// nodeStreamsRefused: streams refused at Options.NodeStreams.
	nodeStreamsRefused *counterVec
	// rateFallbacks: requests the rate limit decided alone because the
	// shared buckets failed.
	rateFallbacks *counterVec
	relayEvents   *counterVec
	relayDelivers *counterVec
	relayDropped  *counterVec
	relayErrors   *counterVec
	relayDelay    *histogramVec
	checkFailures *counterVec
}

func newMetrics() *metrics {
	return &metrics{
		start: time.Now(),
		requests: newCounter("station_hub_http_requests_total",
			"HTTP requests answered, by route pattern, method and status code.", "route", "method", "code"),
		duration: newHistogram("station_hub_http_request_duration_seconds",
			"Time to answer an HTTP request, by route pattern and method (event streams are left out: they last for hours).", durationBuckets, "route", "method"),
		aborted: newCounter("station_hub_http_responses_aborted_total",
			"Answers the hub broke off after it began them (a download whose blob could not be read or did not match its digest).", "route"),
		internal: newCounter("station_hub_internal_errors_total",
			"Requests that failed with internal (1500: a bug, or a Store or Blobs failure) or unavailable (1501: the database or blob storage did not answer); the log has each under its request id.", "route"),
		rateLimited: newCounter("station_hub_rate_limited_total",
			"Requests refused by the rate limit, by what was limited: an account, or a client address (requests without a valid token).", "key"),
		reconnected: newCounter("station_hub_event_streams_reconnected_total",
			"Event streams told to reconnect (elsewhere) because this hub was draining."),
		nodeStreamsRefused: newCounter("station_hub_event_streams_refused_total",
			"Event streams refused 503 because this hub process held the most it takes (station hub serve --max-node-streams); their stations retry, behind a load balancer likely on another process."),
		rateFallbacks: newCounter("station_hub_rate_limit_fallbacks_total",
			"Requests the rate limit decided with this process's own buckets alone because the shared buckets (PostgreSQL) failed: while it lasts, limits hold per process, not across them."),
		relayEvents: newCounter("station_hub_relay_events_total",
			"Events of the log this hub's relay fanned out to its streams (each event once)."),
		relayDelivers: newCounter("station_hub_relay_deliveries_total",
			"Events the relay handed to a stream (an event counts once per stream that may see it)."),
		relayDropped: newCounter("station_hub_relay_dropped_subscribers_total",
			"Event streams ended because they did not keep up (256 events waiting); their stations reconnect and catch up."),
		relayErrors: newCounter("station_hub_relay_errors_total",
			"Failed reads of the event log by the relay (retried after a second)."),
		relayDelay: newHistogram("station_hub_relay_fanout_delay_seconds",
			"Time from an event's time (stamped when the change began, before its blobs and its commit, by the clock of the hub that made it) to its fan-out by this hub.", delayBuckets),
		checkFailures: newCounter("station_hub_readiness_check_failures_total",
			"Readiness checks that failed, by check.", "check"),
	}
}

// requestMethod is the method label: one of the methods the hub serves, or
// "other" (a client may send any token as a method).
func requestMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions:
		return m
	}
	return "other"
}

// observe serves r with h and counts it under the route h's handler names
// (routeUnmatched if none does: the mux's own 404, 405 and redirects).
func (s *Server) observe(h http.Handler, w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, route: routeUnmatched}
	m := s.metrics
	m.inFlight.Add(1)
	start := time.Now()
	defer func() {
		m.inFlight.Add(-1)
		p := recover()
		code := sw.status
		if code == 0 {
			code = http.StatusOK // what net/http sends for a handler that wrote nothing
		}
		method := requestMethod(r.Method)
		m.requests.inc(labels{sw.route, method, strconv.Itoa(code)})
		if !sw.stream {
			m.duration.observe(labels{sw.route, method}, time.Since(start).Seconds())
		}
		if p != nil {
			if p == http.ErrAbortHandler {
				m.aborted.inc(labels{sw.route})
			}
			panic(p)
		}
	}()
	h.ServeHTTP(sw, r)
}

// MetricsHandler serves GET /metrics, GET /healthz and GET /readyz, for a
// listener of the operator's (Options.MetricsListener, `station hub serve
// --metrics-addr`) that is not the hub's public one: metrics are per hub
// process, so they are scraped from each process's own address, never
// through the URL a load balancer spreads over several.
func (s *Server) MetricsHandler() http.Handler { return s.opsMux }

func (s *Server) opsRoutes() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", routed("/metrics", s.serveMetrics))
	mux.HandleFunc("GET /healthz", routed("/healthz", s.healthz))
	mux.HandleFunc("GET /readyz", routed("/readyz", s.readyz))
	s.opsMux = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.observe(mux, w, r) })
}

// routed names the route of h's requests for observe.
func routed(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := w.(*statusWriter); ok {
			sw.route = route
		}
		h(w, r)
	}
}

// buildVersion is the hub's module version, "(devel)" in a checkout (as
// `station version` says).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// scrapeTimeout bounds the one Store read of a scrape (the end of the log).
const scrapeTimeout = time.Second

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	s.writeMetrics(r.Context(), &b)
	h := w.Header()
	h.Set("Content-Type", MetricsContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}

// writeMetrics writes every family, ordered by name, each series of a
// family ordered by its label values: two scrapes list the same series in
// the same order.
func (s *Server) writeMetrics(ctx context.Context, b *bytes.Buffer) {
	m := s.metrics
	type gauge struct {
		name, help string
		value      float64
		names      []string
		labels     labels
	}
	s.streamsMu.Lock()
	streams := len(s.live)
	s.streamsMu.Unlock()
	relayLast := s.relay.fanned.Load()
	gauges := []gauge{
		{name: "station_hub_build_info", help: "The hub's build: its version and the Go release that built it (always 1).", value: 1,
			names: []string{"version", "goversion"}, labels: labels{buildVersion(), runtime.Version()}},
		{name: "station_hub_start_time_seconds", help: "When this hub server started, in seconds since the Unix epoch.", value: float64(m.start.UnixNano()) / 1e9},
		{name: "station_hub_draining", help: "1 while this hub drains (readiness reports draining; streams are told to reconnect elsewhere), else 0.", value: b2f(s.draining.Load())},
		{name: "station_hub_http_requests_in_flight", help: "HTTP requests being answered now. An event stream over HTTP/1.1 is answered once it took its connection (station_hub_event_streams_open counts the open ones); over HTTP/2 it is in flight until it ends.", value: float64(m.inFlight.Load())},
		{name: "station_hub_event_streams_open", help: "Event streams open on this hub.", value: float64(streams)},
		{name: "station_hub_relay_subscribers", help: "Streams subscribed to this hub's relay.", value: float64(s.relay.subscribers())},
		{name: "station_hub_relay_last_seq", help: "The seq of the last event this hub's relay fanned out.", value: float64(relayLast)},
		{name: "go_goroutines", help: "Number of goroutines that currently exist.", value: float64(runtime.NumGoroutine())},
	}
	// The end of the log, as committed by every hub process that shares the
	// Store: the relay's lag is how far this one is behind it. A failed
	// read leaves both out rather than report a wrong lag.
	rctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	logLast, err := s.store.LastSeq(rctx)
	cancel()
	if err == nil {
		gauges = append(gauges,
			gauge{name: "station_hub_event_log_last_seq", help: "The seq of the last event committed to the log (read from the Store when scraped).", value: float64(logLast)},
			gauge{name: "station_hub_relay_lag_events", help: "Events committed to the log but not yet fanned out by this hub's relay.", value: float64(max(logLast-relayLast, 0))})
	}

	type family struct {
		name  string
		write func()
	}
	var fams []family
	for _, g := range gauges {
		fams = append(fams, family{g.name, func() {
			header(b, g.name, "gauge", g.help)
			sample(b, g.name, g.names, g.labels, "", formatFloat(g.value))
		}})
	}
	for _, c := range []*counterVec{m.requests, m.aborted, m.internal, m.rateLimited, m.reconnected, m.nodeStreamsRefused, m.rateFallbacks, m.relayEvents, m.relayDelivers, m.relayDropped, m.relayErrors, m.checkFailures} {
		fams = append(fams, family{c.name, func() { c.write(b) }})
	}
	for _, h := range []*histogramVec{m.duration, m.relayDelay} {
		fams = append(fams, family{h.name, func() { h.write(b) }})
	}
	slices.SortFunc(fams, func(a, b family) int { return strings.Compare(a.name, b.name) })
	for _, f := range fams {
		f.write()
	}
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

func (c *counterVec) write(b *bytes.Buffer) {
	header(b, c.name, "counter", c.help)
	c.mu.Lock()
	keys := sortedKeys(c.vals)
	vals := make([]uint64, len(keys))
	for i, k := range keys {
		vals[i] = c.vals[k]
	}
	c.mu.Unlock()
	if len(c.names) == 0 && len(keys) == 0 {
		// A counter without labels exists from the start, at 0.
		keys, vals = []labels{{}}, []uint64{0}
	}
	for i, k := range keys {
		sample(b, c.name, c.names, k, "", strconv.FormatUint(vals[i], 10))
	}
}

func (h *histogramVec) write(b *bytes.Buffer) {
	header(b, h.name, "histogram", h.help)
	h.mu.Lock()
	keys := sortedKeys(h.vals)
	vals := make([]histogram, len(keys))
	for i, k := range keys {
		x := h.vals[k]
		vals[i] = histogram{counts: slices.Clone(x.counts), sum: x.sum, count: x.count}
	}
	h.mu.Unlock()
	if len(h.names) == 0 && len(keys) == 0 {
		keys, vals = []labels{{}}, []histogram{{counts: make([]uint64, len(h.buckets)+1)}}
	}
	for i, k := range keys {
		x := vals[i]
		var cum uint64
		for j, n := range x.counts {
			cum += n
			le := "+Inf"
			if j < len(h.buckets) {
				le = strconv.FormatFloat(h.buckets[j], 'f', -1, 64)
			}
			sample(b, h.name+"_bucket", h.names, k, le, strconv.FormatUint(cum, 10))
		}
		sample(b, h.name+"_sum", h.names, k, "", formatFloat(x.sum))
		sample(b, h.name+"_count", h.names, k, "", strconv.FormatUint(x.count, 10))
	}
}

func sortedKeys[V any](m map[labels]V) []labels {
	keys := make([]labels, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b labels) int {
		for i := range a {
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return keys
}

// header writes a family's HELP and TYPE lines.
func header(b *bytes.Buffer, name, typ, help string) {
	b.WriteString("# HELP ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(escapeHelp(help))
	b.WriteString("\n# TYPE ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(typ)
	b.WriteByte('\n')
}

// sample writes one sample line: name{label="value",...,le="le"} value.
func sample(b *bytes.Buffer, name string, names []string, l labels, le, value string) {
	b.WriteString(name)
	if len(names) > 0 || le != "" {
		b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n)
			b.WriteString(`="`)
			b.WriteString(escapeLabel(l[i]))
			b.WriteByte('"')
		}
		if le != "" {
			if len(names) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`le="`)
			b.WriteString(le)
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(value)
	b.WriteByte('\n')
}

// The exposition format escapes \ and newline in HELP text, and \, " and
// newline in label values.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
