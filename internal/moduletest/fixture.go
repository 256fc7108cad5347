package moduletest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/station-dev/station/internal/yamlx"
)

// MaxFixtureSize bounds a fixture file: as much as the network gate lets a
// module read of one response.
const MaxFixtureSize = 16 << 20

// MaxRoutes bounds the routes of one fixture file.
const MaxRoutes = 1000

// Fixture is what a fixture server answers for one host: one body for
// every request, or, for a JSON file whose top-level object has a
// "routes" key, the first route that matches the request.
type Fixture struct {
	// Host is the canonical host it stands for; File the file it was read
	// from, as named.
	Host, File string
	// From says who named it: "tests.yaml" or "--fixture".
	From string
	// Routes are the file's routes; nil when the file is one body.
	Routes []Route

	body        []byte
	contentType string
}

// Route is one answer of a routes file.
type Route struct {
	// Method is the request method it matches, upper case; "" for any.
	Method string
	// Path is the request path it matches: exactly, or everything that
	// starts with Path when Prefix (written with a trailing "*").
	Path   string
	Prefix bool
	// Status, Header and Body are the answer.
	Status int
	Header http.Header
	Body   []byte
	// Line is where the route is written in the file.
	Line int
}

// String is the route as its list in a 404 shows it: "GET /v1/x",
// "any /v1/items/*".
func (r Route) String() string {
	m := r.Method
	if m == "" {
		m = "any"
	}
	p := r.Path
	if r.Prefix {
		p += "*"
	}
	return m + " " + p
}

func (r Route) matches(req *http.Request) bool {
	if r.Method != "" && !strings.EqualFold(r.Method, req.Method) {
		return false
	}
	if r.Prefix {
		return strings.HasPrefix(req.URL.Path, r.Path)
	}
	return req.URL.Path == r.Path
}

// LoadFixture reads the fixture file for host. A file of tests.yaml is
// opened inside dir (root), so that neither its name nor a link in it
// leads out; a file of --fixture (root nil) is any file the user can read.
func LoadFixture(root *os.Root, host, file string) (*Fixture, error) {
	var f *os.File
	var err error
	if root != nil {
		f, err = root.Open(file)
	} else {
		f, err = os.Open(file)
	}
	name := file
	if root != nil {
		name = filepath.Join(root.Name(), file)
	}
	if err != nil {
		return nil, fmt.Errorf("fixture for %s: %w", host, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("fixture for %s: %s is not a regular file", host, name)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFixtureSize+1))
	if err != nil {
		return nil, fmt.Errorf("fixture for %s: read %s: %w", host, name, err)
	}
	fx, err := ParseFixture(host, name, data)
	if err != nil {
		return nil, err
	}
	fx.File = file // as named: relative to the module directory for tests.yaml
	return fx, nil
}

// ParseFixture parses the contents of a fixture file for host; file names
// it in errors and picks the Content-Type of a file served as it is (by
// its extension, else by its first bytes). A routes file is checked
// strictly: every problem is an *Error with the file, line and column,
// joined.
func ParseFixture(host, file string, data []byte) (*Fixture, error) {
	if len(data) > MaxFixtureSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("the file is larger than %d bytes (16 MiB), the most the station lets a module read of one response", MaxFixtureSize)}
	}
	fx := &Fixture{Host: host, File: file}
	jsonExt := strings.EqualFold(filepath.Ext(file), ".json")
	trimmed := bytes.TrimSpace(data)
	switch valid := json.Valid(data); {
	case valid && len(trimmed) > 0 && trimmed[0] == '{':
		p := &fixtureParser{file: file, data: data}
		top := p.members(data, 0)
		if slices.ContainsFunc(top, func(m member) bool { return m.key == "routes" }) {
			fx.Routes = p.routes(top)
			if len(p.errs) > 0 {
				sort.SliceStable(p.errs, func(i, j int) bool {
					a, b := p.errs[i], p.errs[j]
					return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
				})
				errs := make([]error, len(p.errs))
				for i, e := range p.errs {
					errs[i] = e
				}
				return nil, errors.Join(errs...)
			}
			return fx, nil
		}
	case !valid && jsonExt:
		return nil, jsonSyntaxError(file, data)
	}
	fx.body = data
	fx.contentType = mime.TypeByExtension(filepath.Ext(file))
	if fx.contentType == "" {
		fx.contentType = http.DetectContentType(data)
	}
	return fx, nil
}

// jsonSyntaxError is the error of a .json file that is not JSON, at the
// position encoding/json stopped.
func jsonSyntaxError(file string, data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	e := &Error{File: file, Msg: "not valid JSON"}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		e.Line, e.Column = position(data, se.Offset-1) // Offset is past the byte it stopped at
		e.Msg = "not valid JSON: " + se.Error()
	}
	e.Msg += " (a .json fixture must be JSON; name it otherwise to serve it as it is)"
	return e
}

// member is one member of a JSON object, as written.
type member struct {
	key   string
	value json.RawMessage
	at    int64 // where the key starts in the file
	valAt int64 // where the value starts
}

type fixtureParser struct {
	file string
	data []byte // the whole file, for positions
	errs []*Error
}

func (p *fixtureParser) add(at int64, field, format string, args ...any) {
	if len(p.errs) >= yamlx.MaxProblems {
		return
	}
	line, col := position(p.data, at)
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Column: col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// members returns the members of the JSON object obj, valid JSON that
// starts at offset base of the file, recording duplicate keys.
func (p *fixtureParser) members(obj []byte, base int64) []member {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return nil
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		at := skip(obj, dec.InputOffset(), " \t\r\n,")
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		valAt := skip(obj, dec.InputOffset(), " \t\r\n:")
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out
		}
		if seen[key] {
			p.add(base+at, "", "duplicate key %s", yamlx.Quote(key))
			continue
		}
		seen[key] = true
		out = append(out, member{key: key, value: raw, at: base + at, valAt: base + valAt})
	}
	return out
}

// elements returns the elements of the JSON array arr and where each
// starts in the file.
func (p *fixtureParser) elements(arr []byte, base int64) ([]json.RawMessage, []int64) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if _, err := dec.Token(); err != nil { // [
		return nil, nil
	}
	var out []json.RawMessage
	var at []int64
	for dec.More() {
		off := skip(arr, dec.InputOffset(), " \t\r\n,")
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		out, at = append(out, raw), append(at, base+off)
	}
	return out, at
}

func skip(b []byte, off int64, chars string) int64 {
	for off < int64(len(b)) && strings.IndexByte(chars, b[off]) >= 0 {
		off++
	}
	return off
}

var routeFields = []string{"method", "path", "status", "headers", "body"}

// framing are the headers the server writes itself.
var framing = []string{"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Trailer", "Upgrade", "Te"}

func (p *fixtureParser) routes(top []member) []Route {
	var list member
	for _, m := range top {
		if m.key != "routes" {
			p.add(m.at, "", "%s (a routes file has one key, routes; to serve this object as it is, put it in a route's body)", yamlx.Unknown("key", m.key, []string{"routes"}))
			continue
		}
		list = m
	}
	if len(list.value) == 0 || list.value[0] != '[' {
		p.add(list.valAt, "routes", `must be a list of routes, e.g. [{"path": "/v1/x", "body": {}}]`)
		return nil
	}
	elems, at := p.elements(list.value, list.valAt)
	if len(elems) == 0 {
		p.add(list.valAt, "routes", "is empty: every request would be answered 404; add a route")
		return nil
	}
	if len(elems) > MaxRoutes {
		p.add(list.valAt, "routes", "has %d routes, more than %d", len(elems), MaxRoutes)
		return nil
	}
	var out []Route
	for i, e := range elems {
		path := fmt.Sprintf("routes[%d]", i)
		if e[0] != '{' {
			p.add(at[i], path, "must be an object with path (and method, status, headers, body)")
			continue
		}
		line, _ := position(p.data, at[i])
		r := Route{Status: http.StatusOK, Line: line}
		hasPath, bodyType := false, ""
		for _, m := range p.members(e, at[i]) {
			field := path + "." + m.key
			switch m.key {
			case "method":
				s, ok := p.str(m, field)
				if !ok {
					continue
				}
				if !validToken(s) || len(s) > 32 {
					p.add(m.valAt, field, "%s is not an HTTP method (GET, POST, ...; leave it out to match any)", yamlx.Quote(s))
					continue
				}
				r.Method = strings.ToUpper(s)
			case "path":
				s, ok := p.str(m, field)
				if !ok {
					continue
				}
				hasPath = true
				if msg := checkRoutePath(s); msg != "" {
					p.add(m.valAt, field, "%s %s", yamlx.Quote(s), msg)
					continue
				}
				r.Path, r.Prefix = strings.CutSuffix(s, "*")
			case "status":
				n, err := strconv.Atoi(string(m.value))
				if err != nil || n < 100 || n > 599 {
					p.add(m.valAt, field, "must be an HTTP status from 100 to 599, not %s", Cut(string(m.value), 40))
					continue
				}
				r.Status = n
			case "headers":
				r.Header = p.headers(m, field)
			case "body":
				var s string
				if m.value[0] == '"' && json.Unmarshal(m.value, &s) == nil {
					r.Body, bodyType = []byte(s), "text/plain; charset=utf-8"
					continue
				}
				r.Body, bodyType = append([]byte(nil), m.value...), "application/json"
			default:
				p.add(m.at, path, "%s", yamlx.Unknown("field", m.key, routeFields))
			}
		}
		if bodyType != "" {
			r.Header = setDefault(r.Header, "Content-Type", bodyType)
		}
		if !hasPath {
			p.add(at[i], path, `missing required field "path" (e.g. "/v1/items", or "/v1/items/*" for every path under it)`)
		}
		out = append(out, r)
	}
	return out
}

// setDefault sets key in h unless h (which may be nil) has it.
func setDefault(h http.Header, key, value string) http.Header {
	if h == nil {
		h = http.Header{}
	}
	if _, ok := h[key]; !ok {
		h[key] = []string{value}
	}
	return h
}

func (p *fixtureParser) str(m member, field string) (string, bool) {
	var s string
	if m.value[0] != '"' || json.Unmarshal(m.value, &s) != nil {
		p.add(m.valAt, field, "must be a string")
		return "", false
	}
	return s, true
}

func (p *fixtureParser) headers(m member, field string) http.Header {
	if m.value[0] != '{' {
		p.add(m.valAt, field, `must be an object of header: [values], e.g. {"Content-Type": ["application/json"]}`)
		return nil
	}
	h := http.Header{}
	for _, hm := range p.members(m.value, m.valAt) {
		at := field + "." + hm.key
		if !httpguts.ValidHeaderFieldName(hm.key) {
			p.add(hm.at, field, "%s is not a header name", yamlx.Quote(hm.key))
			continue
		}
		name := http.CanonicalHeaderKey(hm.key)
		if slices.Contains(framing, name) {
			p.add(hm.at, field, "%s is written by the server itself; leave it out", name)
			continue
		}
		var values []string
		var one string
		switch {
		case hm.value[0] == '"' && json.Unmarshal(hm.value, &one) == nil:
			values = []string{one}
		case hm.value[0] == '[' && json.Unmarshal(hm.value, &values) == nil:
		default:
			p.add(hm.valAt, at, "must be a string or a list of strings")
			continue
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				p.add(hm.valAt, at, "%s is not a valid header value (no control characters)", yamlx.Quote(v))
			}
		}
		h[name] = append(h[name], values...)
	}
	return h
}

// checkRoutePath says what is wrong with a route's path, or "".
func checkRoutePath(s string) string {
	switch {
	case !strings.HasPrefix(s, "/"):
		return `must start with "/"`
	case strings.ContainsAny(s, "?#"):
		return "is matched against the request's path alone; leave out the query"
	case strings.Contains(strings.TrimSuffix(s, "*"), "*"):
		return `may have "*" only at its end (a prefix: "/v1/items/*")`
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c == 0x7f {
			return "contains a space or a control character"
		}
	}
	return ""
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !httpguts.IsTokenRune(rune(s[i])) {
			return false
		}
	}
	return true
}

// position is the 1-based line and column (in characters) of offset off
// of data.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// answer is what a fixture served, for the record of a test.
type answer struct {
	status int
	note   string // which route, or why none
}

// serve answers req.
func (f *Fixture) serve(w http.ResponseWriter, req *http.Request) answer {
	if f.Routes == nil {
		w.Header().Set("Content-Type", f.contentType)
		w.WriteHeader(http.StatusOK)
		w.Write(f.body)
		return answer{status: http.StatusOK}
	}
	for i, r := range f.Routes {
		if !r.matches(req) {
			continue
		}
		for k, v := range r.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(r.Status)
		w.Write(r.Body)
		return answer{status: r.Status, note: fmt.Sprintf("route %d, %s", i, r)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no route of the fixture %s for %s matches %s %s; its routes (the first that matches answers):\n", f.File, f.Host, req.Method, req.URL.Path)
	for _, r := range f.Routes {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, b.String())
	return answer{status: http.StatusNotFound, note: "no route matches"}
}
