package hubserver_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubserver"
	"github.com/station-dev/station/internal/hubserver/hubtest"
)

// series is one sample of an exposition: its name, labels and value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition is a parsed scrape: the families' types and the samples, in
// the order they came.
type exposition struct {
	types   map[string]string
	samples []series
}

// get returns the value of the sample name with exactly labels (nil: no
// labels), and whether there is one.
func (e exposition) get(name string, labels map[string]string) (float64, bool) {
	for _, s := range e.samples {
		if s.name == name && fmt.Sprint(s.labels) == fmt.Sprint(labels) {
			return s.value, true
		}
	}
	return 0, false
}

// value is get, failing the test when there is no such sample.
func (e exposition) value(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := e.get(name, labels)
	if !ok {
		t.Fatalf("no sample %s%v", name, labels)
	}
	return v
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition reads a scrape in the text format 0.0.4 as strictly as
// the hub writes it, failing the test on anything else: every family has
// one HELP line then one TYPE line before its samples, and its samples
// follow together; names and label names are valid, label values are
// escaped, no series comes twice; a sample of a histogram is a _bucket
// (with le), _sum or _count, its buckets cumulative and increasing, ending
// with +Inf, which equals _count; a counter is never negative; the families
// are in the order of their names; the text ends with a newline.
func parseExposition(t testing.TB, text string) exposition {
	t.Helper()
	e := exposition{types: map[string]string{}}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("the exposition does not end with a newline")
	}
	var (
		family, help string
		order        []string
		seen         = map[string]bool{}
		// The histogram being read: its buckets by the other labels.
		buckets = map[string][]float64{}
		les     = map[string][]float64{}
	)
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, text, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) || e.types[name] != "" || name == help {
				fail("a HELP for %q, a bad or repeated name", name)
			}
			if strings.Contains(strings.ReplaceAll(text, `\\`, ""), `\`) && !strings.Contains(text, `\n`) {
				fail("an escape other than \\\\ and \\n in HELP")
			}
			help = name
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			if name != help {
				fail("TYPE of %q without its HELP first", name)
			}
			if !slices.Contains([]string{"counter", "gauge", "histogram"}, typ) {
				fail("type %q", typ)
			}
			e.types[name], family = typ, name
			order = append(order, name)
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			fail("a comment or blank line the hub does not write")
		}
		s := parseSample(t, line, fail)
		typ := e.types[family]
		switch {
		case family == "":
			fail("a sample before any TYPE")
		case typ == "histogram":
			base, suffix := family, strings.TrimPrefix(s.name, family)
			if !slices.Contains([]string{"_bucket", "_sum", "_count"}, suffix) || base+suffix != s.name {
				fail("sample %s in histogram %s", s.name, family)
			}
			_, hasLE := s.labels["le"]
			if hasLE != (suffix == "_bucket") {
				fail("le on %s", suffix)
			}
			other := map[string]string{}
			for k, v := range s.labels {
				if k != "le" {
					other[k] = v
				}
			}
			key := fmt.Sprint(other)
			switch suffix {
			case "_bucket":
				le, err := strconv.ParseFloat(s.labels["le"], 64)
				if err != nil {
					fail("le %q", s.labels["le"])
				}
				if n := len(les[key]); n > 0 && (le <= les[key][n-1] || s.value < buckets[key][n-1]) {
					fail("buckets not increasing or not cumulative")
				}
				les[key], buckets[key] = append(les[key], le), append(buckets[key], s.value)
			case "_sum":
				if n := len(les[key]); n == 0 || !math.IsInf(les[key][n-1], 1) {
					fail("%s without buckets ending in +Inf before it", s.name)
				}
			case "_count":
				n := len(buckets[key])
				if n == 0 || buckets[key][n-1] != s.value {
					fail("_count %v is not the +Inf bucket's", s.value)
				}
				delete(les, key)
				delete(buckets, key)
			}
		default:
			if s.name != family {
				fail("sample %s in family %s", s.name, family)
			}
			if typ == "counter" && (s.value < 0 || s.value != math.Trunc(s.value)) {
				fail("counter value %v", s.value)
			}
		}
		id := s.name + fmt.Sprint(s.labels)
		if seen[id] {
			fail("series %s twice", id)
		}
		seen[id] = true
		e.samples = append(e.samples, s)
	}
	if len(les) > 0 {
		t.Fatalf("histogram series without _count: %v", les)
	}
	if !slices.IsSorted(order) {
		t.Errorf("families not in the order of their names: %v", order)
	}
	return e
}

// parseSample reads name{label="value",...} value.
func parseSample(t testing.TB, line string, fail func(string, ...any)) series {
	t.Helper()
	s := series{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		fail("no value")
	}
	s.name = line[:i]
	if !metricName.MatchString(s.name) {
		fail("metric name %q", s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				fail("a label without =")
			}
			name := rest[:eq]
			if !labelName.MatchString(name) || strings.HasPrefix(name, "__") {
				fail("label name %q", name)
			}
			if _, dup := s.labels[name]; dup {
				fail("label %s twice", name)
			}
			rest = rest[eq+1:]
			if rest == "" || rest[0] != '"' {
				fail("label value not quoted")
			}
			var v strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				c := rest[j]
				if c == '\\' {
					j++
					if j == len(rest) {
						fail("an escape at the end")
					}
					switch rest[j] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						fail("escape \\%c in a label value", rest[j])
					}
					continue
				}
				v.WriteByte(c)
			}
			if j == len(rest) {
				fail("an unterminated label value")
			}
			s.labels[name] = v.String()
			rest = rest[j+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
				continue
			}
			if !strings.HasPrefix(rest, "}") {
				fail("labels not closed")
			}
			rest = rest[1:]
			break
		}
	}
	val, ok := strings.CutPrefix(rest, " ")
	if !ok || strings.Contains(val, " ") {
		fail("want one space then the value (no timestamp)")
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		fail("value %q", val)
	}
	s.value = v
	return s
}

// scrape gets GET /metrics from the hub's metrics handler.
func scrape(t testing.TB, srv *hubserver.Server) (exposition, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("GET /metrics: Content-Type %q", ct)
	}
	text := rec.Body.String()
	return parseExposition(t, text), text
}

// routePatterns are the route label values the hub may use: the path of
// every pattern routes.go registers, and the few of its own.
func routePatterns(t testing.TB) []string {
	t.Helper()
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := []string{"unmatched", "/healthz", "/readyz", "/metrics"}
	for _, m := range regexp.MustCompile(`s\.handle\("[A-Z]+ "\+v\+"([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		routes = append(routes, hub.PathPrefix+m[1])
	}
	return routes
}

// eventually polls cond until it holds, failing the test after a generous
// bound.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return "zq" + hex.EncodeToString(b[:])
}

// TestMetricsExposition is the format's attack: after requests of every
// sort — named accounts, random paths that exist nowhere, methods no
// endpoint has, a publish, a refused token, a stream — the exposition
// parses strictly, every label value is one of a small fixed set, and
// nothing a client sent (a path, an account, a method) is in it.
func TestMetricsExposition(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.Burst, o.Limits.RatePerSecond = 1e6, 1e6 })
	pub, key := h.Publisher(t, "dave")
	publish(t, pub, key, "dave/tool", "1.0.0")
	secret := randomName()
	send(t, h, "GET", "/v1/info", "", nil)
	send(t, h, "GET", "/v1/modules/dave/tool", "", nil)
	var probes []string
	for range 20 {
		p := randomName()
		probes = append(probes, p)
		send(t, h, "GET", "/v1/modules/"+p+"/"+p, "", nil)          // a route, 404 module_not_found
		send(t, h, "GET", "/"+p+"/"+p+"%22%0a{}", "", nil)          // no route
		send(t, h, "PATCH", "/v1/accounts/"+p+"/keys", "", nil)     // no endpoint has the method
		send(t, h, strings.ToUpper(p), "/v1/info", "", nil)         // a method nobody serves
		send(t, h, "GET", "/v1/accounts/"+p+"/credits", "", nil)    // an account that does not exist
		send(t, h, "GET", "/v1/whoami", "stn_"+secret+p, nil)       // a bad token
		send(t, h, "GET", "/v1/teams/"+p, h.Account(t, p), nil)     // an account's own request
		send(t, h, "GET", "/v1/modules?q="+p+"&owner="+p, "", nil)  // a query
		send(t, h, "GET", "//v1/../info/"+p, "", nil)               // the mux's redirect
		send(t, h, "GET", "/healthz/"+p, "", nil)                   // a health path with more
		send(t, h, "GET", "/metrics?"+p, "", nil)                   // not on the public listener
		send(t, h, "POST", "/v1/modules", "", `{"bundle":"`+p+`"}`) // unauthenticated
	}
	s := subscribe(t, pub, lastSeq(t, h))
	within(t, s.connected, "the stream")
	publish(t, pub, key, "dave/tool", "1.0.1")
	s.next(t, hub.EventModulePublished)

	e, text := scrape(t, h.Server)
	for _, p := range append(probes, secret, "dave") {
		if strings.Contains(text, p) {
			t.Errorf("the exposition holds %q, which a client sent", p)
		}
	}
	routes := routePatterns(t)
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other"}
	allowed := map[string]func(string) bool{
		"route":     func(v string) bool { return slices.Contains(routes, v) },
		"method":    func(v string) bool { return slices.Contains(methods, v) },
		"code":      func(v string) bool { n, err := strconv.Atoi(v); return err == nil && n >= 100 && n <= 599 },
		"le":        func(string) bool { return true }, // checked by the parser
		"key":       func(v string) bool { return v == "account" || v == "address" },
		"check":     func(v string) bool { return v == "database" || v == "blobs" },
		"version":   func(v string) bool { return v != "" },
		"goversion": func(v string) bool { return strings.HasPrefix(v, "go") },
	}
	for _, s := range e.samples {
		for k, v := range s.labels {
			if ok := allowed[k]; ok == nil || !ok(v) {
				t.Errorf("%s: label %s=%q", s.name, k, v)
			}
		}
	}

	count := func(route, method, code string) float64 {
		v, _ := e.get("station_hub_http_requests_total", map[string]string{"route": route, "method": method, "code": code})
		return v
	}
	for _, tt := range []struct {
		route, method, code string
		want                float64
	}{
		{"/v1/modules/{owner}/{slug}", "GET", "404", 20},
		{"unmatched", "GET", "404", 60},   // no route, /healthz/..., /metrics
		{"unmatched", "PATCH", "404", 20}, // the catch-all takes every method
		{"unmatched", "other", "404", 20},
		{"unmatched", "GET", "307", 20}, // the mux's redirect to the clean path
		{"/v1/whoami", "GET", "401", 20},
		{"/v1/teams/{team}", "GET", "404", 20},
		{"/v1/modules", "POST", "401", 20},
		{"/v1/events", "GET", "200", 1}, // still open, answered: the stream took its connection
		{"/v1/info", "GET", "200", 1},
	} {
		if got := count(tt.route, tt.method, tt.code); got != tt.want {
			t.Errorf("requests %s %s %s = %v, want %v", tt.method, tt.route, tt.code, got, tt.want)
		}
	}
	if n := e.value(t, "station_hub_http_request_duration_seconds_count", map[string]string{"route": "/v1/info", "method": "GET"}); n != 1 {
		t.Errorf("duration count of GET /v1/info = %v, want 1", n)
	}
	if _, ok := e.get("station_hub_http_request_duration_seconds_count", map[string]string{"route": "/v1/events", "method": "GET"}); ok {
		t.Error("event streams are in the duration histogram")
	}
	if v := e.value(t, "station_hub_event_streams_open", nil); v != 1 {
		t.Errorf("streams open = %v, want 1", v)
	}
	if v := e.value(t, "station_hub_relay_subscribers", nil); v != 1 {
		t.Errorf("relay subscribers = %v, want 1", v)
	}
	if v := e.value(t, "station_hub_http_requests_in_flight", nil); v != 1 {
		t.Errorf("requests in flight = %v, want 1 (the scrape; the stream's request was answered)", v)
	}
	if v := e.value(t, "station_hub_draining", nil); v != 0 {
		t.Errorf("draining = %v", v)
	}
	last := float64(lastSeq(t, h))
	if v := e.value(t, "station_hub_event_log_last_seq", nil); v != last {
		t.Errorf("log last seq = %v, want %v", v, last)
	}
	if v := e.value(t, "station_hub_relay_last_seq", nil); v != last {
		t.Errorf("relay last seq = %v, want %v (the stream had the event)", v, last)
	}
	if v := e.value(t, "station_hub_relay_lag_events", nil); v != 0 {
		t.Errorf("relay lag = %v", v)
	}
	// Both publishes were fanned out: the relay starts at the end of the
	// log as the hub opens, which was empty.
	if v := e.value(t, "station_hub_relay_events_total", nil); v != last {
		t.Errorf("relay events = %v, want %v", v, last)
	}
	// The second publish, to the one stream (and the first, had the
	// relay fanned it out after the stream subscribed); counted once the
	// fan-out's sends are done, which may be just after the stream has it.
	eventually(t, "the deliveries counted", func() bool {
		e, _ := scrape(t, h.Server)
		v := e.value(t, "station_hub_relay_deliveries_total", nil)
		return v == 1 || v == 2
	})
	if v := e.value(t, "station_hub_relay_fanout_delay_seconds_count", nil); v != last {
		t.Errorf("fan-out delays observed = %v, want %v", v, last)
	}
	for _, s := range e.samples {
		if s.name == "station_hub_internal_errors_total" || s.name == "station_hub_rate_limited_total" {
			t.Errorf("%s%v = %v, want none", s.name, s.labels, s.value)
		}
	}

	// Two scrapes list the same series in the same order.
	e2, _ := scrape(t, h.Server)
	var a, b []string
	for _, s := range e.samples {
		a = append(a, s.name+fmt.Sprint(s.labels))
	}
	for _, s := range e2.samples {
		b = append(b, s.name+fmt.Sprint(s.labels))
	}
	// The second scrape counted the first (route /metrics): compare the
	// series both have, in order.
	var common []string
	for _, id := range b {
		if slices.Contains(a, id) {
			common = append(common, id)
		}
	}
	if !slices.Equal(common, a) {
		t.Errorf("the second scrape orders the series differently")
	}
}

// TestMetricsCountUnderConcurrency: requests and scrapes at once (run with
// -race) lose no count, and every scrape parses.
func TestMetricsCountUnderConcurrency(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.Burst, o.Limits.RatePerSecond = 1e6, 1e6 })
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				send(t, h, "GET", "/v1/info", "", nil)
				send(t, h, "GET", "/"+randomName(), "", nil)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 20 {
				scrape(t, h.Server)
			}
		})
	}
	wg.Wait()
	e, _ := scrape(t, h.Server)
	for _, tt := range []struct{ route, code string }{{"/v1/info", "200"}, {"unmatched", "404"}} {
		if v := e.value(t, "station_hub_http_requests_total", map[string]string{"route": tt.route, "method": "GET", "code": tt.code}); v != workers*each {
			t.Errorf("requests to %s: %v, want %d", tt.route, v, workers*each)
		}
	}
	if v := e.value(t, "station_hub_http_request_duration_seconds_count", map[string]string{"route": "/v1/info", "method": "GET"}); v != workers*each {
		t.Errorf("durations of /v1/info: %v, want %d", v, workers*each)
	}
	if v := e.value(t, "station_hub_http_requests_total", map[string]string{"route": "/metrics", "method": "GET", "code": "200"}); v != 80 {
		t.Errorf("scrapes counted: %v, want 80", v)
	}
}

// TestMetricsOfFailures: a request the Store fails is an internal error of
// its route, a refusal of the rate limit counts by what was limited, and a
// scrape while the Store is down still answers (without the log's end,
// which it could not read).
func TestMetricsOfFailures(t *testing.T) {
	h := hubtest.StartWith(t, func(o *hubserver.Options) { o.Limits.Burst, o.Limits.RatePerSecond = 3, 0.001 })
	tok := h.Account(t, "dave")
	for range 4 {
		send(t, h, "GET", "/v1/whoami", tok, nil)
		send(t, h, "GET", "/v1/info", "", nil)
	}
	e, _ := scrape(t, h.Server)
	for key, want := range map[string]float64{"account": 1, "address": 1} {
		if v := e.value(t, "station_hub_rate_limited_total", map[string]string{"key": key}); v != want {
			t.Errorf("rate-limited by %s: %v, want %v", key, v, want)
		}
	}
	h2 := hubtest.Start(t)
	h2.Store.Close()
	if a := send(t, h2, "GET", "/v1/modules/dave/tool", "", nil); a.code() != hub.CodeInternal {
		t.Fatalf("GET a module with the store closed: %d %s", a.status, a.body)
	}
	e, _ = scrape(t, h2.Server)
	if v := e.value(t, "station_hub_internal_errors_total", map[string]string{"route": "/v1/modules/{owner}/{slug}"}); v != 1 {
		t.Errorf("internal errors = %v, want 1", v)
	}
	if v := e.value(t, "station_hub_http_requests_total", map[string]string{"route": "/v1/modules/{owner}/{slug}", "method": "GET", "code": "500"}); v != 1 {
		t.Errorf("500s = %v, want 1", v)
	}
	for _, name := range []string{"station_hub_event_log_last_seq", "station_hub_relay_lag_events"} {
		if _, ok := e.get(name, nil); ok {
			t.Errorf("%s is reported while the Store cannot be read", name)
		}
	}
}

// TestMetricsListener: Serve serves MetricsHandler on Options.MetricsListener
// (the public listener has no /metrics) through a drain, which it shows,
// and closes it after.
func TestMetricsListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ops := "http://" + ln.Addr().String()
	p := serveProcess(t, sharedDatabase(t), func(o *hubserver.Options) {
		o.MetricsListener = ln
		o.DrainDelay = 500 * time.Millisecond
	})
	if a := send(t, p, "GET", "/metrics", "", nil); a.code() != hub.CodeNoEndpoint {
		t.Errorf("GET /metrics on the public listener: %d %s, want no_endpoint", a.status, a.body)
	}
	get := func() (int, string) {
		resp, err := http.Get(ops + "/metrics")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get(); status != http.StatusOK || !strings.Contains(body, "\nstation_hub_draining 0\n") {
		t.Fatalf("GET /metrics on the metrics listener: %d %.200s", status, body)
	}
	if resp, err := http.Get(ops + "/v1/info"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/info on the metrics listener: %v %v, want 404", resp, err)
	}
	pStopped := p.Stop()
	if status, body := get(); status != http.StatusOK || !strings.Contains(body, "\nstation_hub_draining 1\n") {
		t.Errorf("GET /metrics while draining: %d %.200s", status, body)
	}
	within(t, pStopped, "Serve to return")
	if status, _ := get(); status != 0 {
		t.Errorf("the metrics listener answers %d after Serve returned", status)
	}
}

// TestExpositionCheckerRefuses: the checker the tests parse scrapes with
// refuses what the format forbids, so that its passing means something.
func TestExpositionCheckerRefuses(t *testing.T) {
	ok := "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 2\n"
	hist := "# HELP h H.\n# TYPE h histogram\n"
	if !parses(ok) {
		t.Fatalf("the checker refuses a valid exposition")
	}
	for _, bad := range []string{
		"a_total 1\n",                                             // no HELP or TYPE
		"# TYPE a_total counter\na_total 1\n",                     // no HELP
		"# HELP a_total A.\n# TYPE a_total counter\na_total 1",    // no final newline
		"# HELP a_total A.\n# TYPE a_total counter\na_total -1\n", // a negative counter
		"# HELP a_total A.\n# TYPE a_total counter\nb_total 1\n",  // another family's sample
		"# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\",x=\"2\"} 1\n",
		"# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"a\nb\"} 1\n", // a raw newline
		"# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"a\\qb\"} 1\n",
		"# HELP a_total A.\n# TYPE a_total counter\na_total{1x=\"a\"} 1\n",
		"# HELP a_total A.\n# TYPE a_total counter\na_total 1\na_total 2\n",          // a series twice
		"# HELP a_total A.\n# TYPE a_total counter\na_total 1 1700000000\n",          // a timestamp
		"# HELP b B.\n# TYPE b gauge\nb 1\n" + ok,                                    // families out of order
		hist + "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", // not cumulative
		hist + "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		hist + "h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",                          // no +Inf
		hist + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n", // _count is not +Inf's
		hist + "h_bucket{le=\"+Inf\"} 1\nh_sum 1\n",                                  // no _count
		hist + "h 1\n",
	} {
		if parses(bad) {
			t.Errorf("the checker accepts %q", bad)
		}
	}
}

// parses reports whether parseExposition accepts text.
func parses(text string) (ok bool) {
	ft := &fatalTB{}
	defer func() {
		if r := recover(); r != nil && r != ft {
			panic(r)
		}
	}()
	parseExposition(ft, text)
	return !ft.failed
}

// fatalTB stops at the first failure.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(string, ...any) {
	f.failed = true
	panic(f)
}
func (f *fatalTB) Errorf(string, ...any) { f.failed = true }
