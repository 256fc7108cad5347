package moduletest

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// get asks fx for method path and returns the answer.
func get(t *testing.T, fx *Fixture, method, path string) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	fx.serve(w, httptest.NewRequest(method, "https://api.example.test"+path, nil))
	resp := w.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestFixtureRoutes(t *testing.T) {
	fx, err := ParseFixture("api.example.test", "routes.json", []byte(`{"routes": [
  {"method": "get", "path": "/v1/x", "status": 201, "headers": {"X-Id": ["a", "b"], "content-type": "application/vnd.x+json"}, "body": {"a": [1, 2.50]}},
  {"path": "/v1/x", "body": "any method"},
  {"path": "/v1/items/*", "body": "text", "headers": {"Content-Type": ["text/csv"]}},
  {"path": "/v1/items/special", "body": "never: the prefix above wins"},
  {"method": "DELETE", "path": "/empty", "status": 204}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(fx.Routes) != 5 || fx.Routes[0].Line != 2 || fx.Routes[2].String() != "any /v1/items/*" {
		t.Fatalf("routes %+v", fx.Routes)
	}
	resp, body := get(t, fx, "GET", "/v1/x?q=1")
	if resp.StatusCode != 201 || body != `{"a": [1, 2.50]}` || resp.Header.Get("Content-Type") != "application/vnd.x+json" || len(resp.Header.Values("X-Id")) != 2 {
		t.Errorf("GET /v1/x: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = get(t, fx, "POST", "/v1/x")
	if resp.StatusCode != 200 || body != "any method" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("POST /v1/x: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = get(t, fx, "GET", "/v1/items/special")
	if body != "text" || resp.Header.Get("Content-Type") != "text/csv" {
		t.Errorf("the first route that matches answers: %q %v", body, resp.Header)
	}
	if resp, _ = get(t, fx, "DELETE", "/empty"); resp.StatusCode != 204 {
		t.Errorf("DELETE /empty: %d", resp.StatusCode)
	}
	resp, body = get(t, fx, "GET", "/v2/nothing")
	if resp.StatusCode != 404 || !strings.Contains(body, "no route of the fixture routes.json for api.example.test matches GET /v2/nothing") ||
		!strings.Contains(body, "\n  GET /v1/x\n  any /v1/x\n  any /v1/items/*\n") {
		t.Errorf("no route: %d %q", resp.StatusCode, body)
	}
}

func TestFixtureBody(t *testing.T) {
	for _, tc := range []struct{ file, data, ctype string }{
		{"hello.json", `{"greeting": "hi"}`, "application/json"},
		{"list.json", `[1, 2]`, "application/json"},
		{"page.html", "<p>hi</p>", "text/html; charset=utf-8"},
		{"notes", "plain words", "text/plain; charset=utf-8"},
		{"blob", "\x00\x01\x02", "application/octet-stream"},
	} {
		fx, err := ParseFixture("api.example.test", tc.file, []byte(tc.data))
		if err != nil {
			t.Fatal(err)
		}
		resp, body := get(t, fx, "POST", "/any/path")
		if resp.StatusCode != 200 || body != tc.data || resp.Header.Get("Content-Type") != tc.ctype || fx.Routes != nil {
			t.Errorf("%s: %d %q %q", tc.file, resp.StatusCode, body, resp.Header.Get("Content-Type"))
		}
	}
}

func TestFixtureErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"not JSON", "{\n  \"routes\": [\n    {\"path\": \"/x\",}\n  ]\n}", `bad.json:3:19: not valid JSON: invalid character '}'`},
		{"routes not a list", `{"routes": {"path": "/x"}}`, "bad.json:1:12: routes: must be a list of routes"},
		{"routes empty", `{"routes": []}`, "routes: is empty"},
		{"another key", `{"routes": [{"path": "/"}], "rootes": 1}`, `bad.json:1:29: unknown key "rootes"`},
		{"unknown field", "{\"routes\": [\n  {\"path\": \"/\", \"stauts\": 200}\n]}", `bad.json:2:17: routes[0]: unknown field "stauts"; did you mean "status"?`},
		{"no path", `{"routes": [{"body": 1}]}`, `routes[0]: missing required field "path"`},
		{"relative path", `{"routes": [{"path": "v1/x"}]}`, `routes[0].path: "v1/x" must start with "/"`},
		{"a star inside", `{"routes": [{"path": "/v1/*/x"}]}`, `may have "*" only at its end`},
		{"a query", `{"routes": [{"path": "/v1?x=1"}]}`, "leave out the query"},
		{"status", `{"routes": [{"path": "/", "status": 999}]}`, "routes[0].status: must be an HTTP status from 100 to 599, not 999"},
		{"status a string", `{"routes": [{"path": "/", "status": "200"}]}`, "must be an HTTP status"},
		{"method", `{"routes": [{"path": "/", "method": "G T"}]}`, "is not an HTTP method"},
		{"framing header", `{"routes": [{"path": "/", "headers": {"content-length": ["3"]}}]}`, "Content-Length is written by the server itself"},
		{"header value", `{"routes": [{"path": "/", "headers": {"X-A": ["a\nb"]}}]}`, "is not a valid header value"},
		{"header type", `{"routes": [{"path": "/", "headers": {"X-A": 1}}]}`, "must be a string or a list of strings"},
		{"a duplicate key", `{"routes": [{"path": "/", "path": "/x"}]}`, `duplicate key "path"`},
		{"a route not an object", `{"routes": ["/x"]}`, "routes[0]: must be an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFixture("api.example.test", "bad.json", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A file that is not JSON and not named .json is a body.
	if _, err := ParseFixture("h", "reply.txt", []byte("{nope")); err != nil {
		t.Errorf("a .txt file that looks like broken JSON: %v", err)
	}
	// An object without routes is a body too, as it is.
	if fx, err := ParseFixture("h", "reply.json", []byte(`{"route": 1}`)); err != nil || fx.Routes != nil {
		t.Errorf("an object without routes: %v", err)
	}
	if _, err := ParseFixture("h", "big.bin", make([]byte, MaxFixtureSize+1)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file over 16 MiB: %v", err)
	}
}

func TestLoadFixture(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{"a": 1}`), 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fx, err := LoadFixture(root, "h", "ok.json")
	if err != nil || fx.File != "ok.json" {
		t.Fatalf("LoadFixture: %+v, %v", fx, err)
	}
	// Out of the directory, by name or by a link: refused inside the root,
	// and allowed for a file named on the command line (root nil).
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("s3cret"), 0o644)
	os.Symlink(secret, filepath.Join(dir, "link.json"))
	for _, name := range []string{"../" + filepath.Base(filepath.Dir(secret)) + "/secret", "link.json", secret} {
		if _, err := LoadFixture(root, "h", name); err == nil {
			t.Errorf("LoadFixture(root, %q) read a file outside the directory", name)
		}
	}
	if fx, err := LoadFixture(nil, "h", secret); err != nil || string(fx.body) != "s3cret" {
		t.Errorf("--fixture of any file: %v", err)
	}
	if _, err := LoadFixture(nil, "h", filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := LoadFixture(nil, "h", dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	if os.Getuid() != 0 {
		unreadable := filepath.Join(dir, "unreadable")
		os.WriteFile(unreadable, []byte("x"), 0o000)
		if _, err := LoadFixture(root, "h", "unreadable"); !errors.Is(err, os.ErrPermission) {
			t.Errorf("an unreadable file: %v", err)
		}
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct{ want, got, diff string }{
		{`{"a": 1, "b": [true, null, "x"]}`, `{"b":[true,null,"x"],"a":1.0}`, ""},
		{`1e2`, `100`, ""},
		{`123456789012345678901234567890`, `123456789012345678901234567891`, "at the top: got 123456789012345678901234567891, want 123456789012345678901234567890"},
		{`{"a": {"b": [1, 2]}}`, `{"a": {"b": [1, 3]}}`, "at .a.b[1]: got 3, want 2"},
		{`{"a": 1}`, `{"a": 1, "z": 2}`, `at the top: "z" is not wanted`},
		{`{"a": 1, "c": 2}`, `{"a": 1}`, `at the top: "c" is missing`},
		{`[1, 2]`, `[1]`, "at the top: 1 elements, want 2"},
		{`"1"`, `1`, `at the top: got 1, want "1"`},
		{`null`, `{}`, "at the top: got {}, want null"},
		{`{}`, `not json`, "the result is not JSON"},
	} {
		if got := Diff([]byte(tc.want), []byte(tc.got)); !strings.Contains(got, tc.diff) || (tc.diff == "") != (got == "") {
			t.Errorf("Diff(%s, %s) = %q, want %q", tc.want, tc.got, got, tc.diff)
		}
	}
}
