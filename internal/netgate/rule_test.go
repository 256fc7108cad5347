package netgate

import (
	"strconv"
	"strings"
	"testing"
)

// ruleCases are the table for ParseRule; they also seed FuzzParseRule.
var ruleCases = []struct {
	entry string
	want  Rule   // when err is ""
	str   string // canonical form, when err is ""
	err   string // substring of the error
}{
	{entry: "api.stripe.com", want: Rule{"https", "api.stripe.com", false, 443}, str: "api.stripe.com"},
	{entry: "API.Stripe.COM.", want: Rule{"https", "api.stripe.com", false, 443}, str: "api.stripe.com"},
	{entry: "https://api.stripe.com", want: Rule{"https", "api.stripe.com", false, 443}, str: "api.stripe.com"},
	{entry: "HTTPS://api.stripe.com:443", want: Rule{"https", "api.stripe.com", false, 443}, str: "api.stripe.com"},
	{entry: "http://api.stripe.com", want: Rule{"http", "api.stripe.com", false, 80}, str: "http://api.stripe.com"},
	{entry: "http://api.stripe.com:8080", want: Rule{"http", "api.stripe.com", false, 8080}, str: "http://api.stripe.com:8080"},
	{entry: "http://api.stripe.com:443", want: Rule{"http", "api.stripe.com", false, 443}, str: "http://api.stripe.com:443"},
	{entry: "https://api.stripe.com:8443", want: Rule{"https", "api.stripe.com", false, 8443}, str: "api.stripe.com:8443"},
	{entry: "api.stripe.com:65535", want: Rule{"https", "api.stripe.com", false, 65535}, str: "api.stripe.com:65535"},
	{entry: "*.stripe.com", want: Rule{"https", "stripe.com", true, 443}, str: "*.stripe.com"},
	{entry: "http://*.Stripe.com.:8080", want: Rule{"http", "stripe.com", true, 8080}, str: "http://*.stripe.com:8080"},
	{entry: "*.example.co.uk", want: Rule{"https", "example.co.uk", true, 443}, str: "*.example.co.uk"},
	{entry: "*.a.b.example.com", want: Rule{"https", "a.b.example.com", true, 443}, str: "*.a.b.example.com"},
	{entry: "xn--bcher-kva.example", want: Rule{"https", "xn--bcher-kva.example", false, 443}, str: "xn--bcher-kva.example"},
	{entry: "under_score.example.com", want: Rule{"https", "under_score.example.com", false, 443}, str: "under_score.example.com"},
	{entry: "localhost", want: Rule{"https", "localhost", false, 443}, str: "localhost"},
	{entry: "192.0.2.1", want: Rule{"https", "192.0.2.1", false, 443}, str: "192.0.2.1"},
	{entry: "http://127.0.0.1:8080", want: Rule{"http", "127.0.0.1", false, 8080}, str: "http://127.0.0.1:8080"},
	{entry: "[2001:db8::1]", want: Rule{"https", "2001:db8::1", false, 443}, str: "[2001:db8::1]"},
	{entry: "[2001:DB8::1]:8443", want: Rule{"https", "2001:db8::1", false, 8443}, str: "[2001:db8::1]:8443"},
	{entry: "[::ffff:127.0.0.1]", want: Rule{"https", "::ffff:127.0.0.1", false, 443}, str: "[::ffff:127.0.0.1]"},

	{entry: "", err: "is empty"},
	{entry: "*", err: `"*" would allow every host`},
	{entry: "https://*", err: `"*" would allow every host`},
	{entry: "*.com", err: "whole top-level domain"},
	{entry: "*.co.uk", err: "public suffix"},
	{entry: "*.github.io", err: "public suffix"},
	// Wildcard rules of the list: every name below is a public suffix.
	{entry: "*.compute.amazonaws.com", err: "every name below"},
	{entry: "*.run.app", err: "every name below"},
	{entry: "*.digitaloceanspaces.com", err: "every name below"},
	{entry: "http://*.Kawasaki.JP.:8080", err: "every name below"},
	{entry: "*.localhost", err: "whole top-level domain"},
	{entry: "**.example.com", err: `"*" may only stand alone`},
	{entry: "*.*.example.com", err: `"*" may only stand alone`},
	{entry: "a*.example.com", err: `"*" may only stand alone`},
	{entry: "x.*.example.com", err: `"*" may only stand alone`},
	{entry: "example.*", err: `"*" may only stand alone`},
	{entry: "*example.com", err: `"*" may only stand alone`},
	{entry: "api..stripe.com", err: "empty label"},
	{entry: ".stripe.com", err: "empty label"},
	{entry: "api.stripe.com..", err: "empty label"},
	{entry: "*.", err: `"*" would allow every host`},
	{entry: "https://", err: "names no host"},
	{entry: ":443", err: "names no host"},
	{entry: "api.stripe.com/v1", err: `remove "/v1" and write "api.stripe.com"`},
	{entry: "http://api.stripe.com/", err: `remove "/" and write "http://api.stripe.com"`},
	{entry: "api.stripe.com?x=1", err: "not a URL"},
	{entry: "api.stripe.com#frag", err: "not a URL"},
	{entry: "user:pw@api.stripe.com", err: `credentials ("user:pw@") do not belong in an entry; write "api.stripe.com"`},
	{entry: "bücher.example", err: "write it in punycode"},
	{entry: "api。stripe.com", err: "write it in punycode"},
	{entry: "ftp://api.stripe.com", err: `scheme "ftp" is not supported`},
	{entry: "wss://api.stripe.com", err: `scheme "wss" is not supported`},
	{entry: "https:api.stripe.com", err: `write the scheme as "https://host"`},
	{entry: "api.stripe.com:0", err: `port "0"`},
	{entry: "api.stripe.com:65536", err: `port "65536"`},
	{entry: "api.stripe.com:", err: `port ""`},
	{entry: "api.stripe.com:0443", err: "leading zeros"},
	{entry: "api.stripe.com:+443", err: `port "+443"`},
	{entry: "api.stripe.com:https", err: `port "https"`},
	{entry: " api.stripe.com", err: "space or control"},
	{entry: "api.stripe.com\n", err: "space or control"},
	{entry: "api.stripe.com\x00", err: "space or control"},
	{entry: "api!.stripe.com", err: `contains '!'`},
	{entry: "2001:db8::1", err: "must be written in brackets"},
	{entry: "[2001:db8::1", err: `closing "]"`},
	{entry: "[2001:db8::1]x", err: `unexpected "x"`},
	{entry: "[2001:db8:0::1]", err: "not in canonical form; write [2001:db8::1]"},
	{entry: "[fe80::1%25eth0]", err: "zone"},
	{entry: "[127.0.0.1]", err: "not an IPv6 address"},
	{entry: "[example.com]", err: "not an IPv6 address"},
	{entry: "127.1", err: "not a canonical IPv4 address"},
	{entry: "2130706433", err: "not a canonical IPv4 address"},
	{entry: "0x7f000001", err: "not a canonical IPv4 address"},
	{entry: "0177.0.0.1", err: "not a canonical IPv4 address"},
	{entry: "1.2.3.4.5", err: "not a canonical IPv4 address"},
	{entry: "example.0x1f", err: "not a canonical IPv4 address"},
	{entry: "*.127.0.0.1", err: "wildcard cannot be combined with an IP address"},
	{entry: strings.Repeat("a", 64) + ".example.com", err: "longer than 63"},
	{entry: strings.Repeat("abcdefghi.", 26) + "com", err: "longer than 253"},
}

func TestParseRule(t *testing.T) {
	for _, c := range ruleCases {
		got, err := ParseRule(c.entry)
		if c.err != "" {
			if err == nil {
				t.Errorf("ParseRule(%q) = %+v, want an error containing %q", c.entry, got, c.err)
				continue
			}
			if !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseRule(%q) error = %q, want it to contain %q", c.entry, err, c.err)
			}
			if want := "allow entry " + strconv.Quote(c.entry); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("ParseRule(%q) error = %q, want it to start with %q", c.entry, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRule(%q): %v", c.entry, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseRule(%q) = %+v, want %+v", c.entry, got, c.want)
		}
		if got, want := got.String(), c.str; got != want {
			t.Errorf("ParseRule(%q).String() = %q, want %q", c.entry, got, want)
		}
		again, err := ParseRule(got.String())
		if err != nil || again != got {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v (round trip of %q)", got.String(), again, err, got, c.entry)
		}
	}
}

// TestBroad (issue 11, defect 7): a wildcard below a domain where a cloud,
// hosting or tunnel service gives names to any customer is accepted by the
// grammar but is broad — any AWS customer could receive what a module with
// "*.amazonaws.com" sends — and says why; narrow rules are not.
func TestBroad(t *testing.T) {
	tests := []struct {
		entry string
		want  string // substring of the reason; "" for a narrow rule
	}{
		// Below a domain the list misses, or a parent of a listed one.
		{"*.amazonaws.com", "gives the names below amazonaws.com to any of its customers"},
		{"*.AMAZONAWS.com.", "amazonaws.com"},
		{"http://*.amazonaws.com:8080", "amazonaws.com"},
		{"*.sqs.amazonaws.com", "under amazonaws.com"},
		{"*.x.us-east-1.elb.amazonaws.com", "under us-east-1.elb.amazonaws.com"},
		{"*.execute-api.amazonaws.com", "amazonaws.com"},
		{"*.windows.net", "windows.net"},
		{"*.database.windows.net", "under windows.net"},
		{"*.azure.com", "include cloudapp.azure.com"},
		{"*.on.aws", "on.aws"},
		{"*.loca.lt", "loca.lt"},
		{"*.firebaseio.com", "firebaseio.com"},
		{"*.r2.cloudflarestorage.com", "cloudflarestorage.com"},
		{"*.share.zrok.io", "zrok.io"},
		{"*.koyeb.app", "koyeb.app"},
		{"*.modal.run", "modal.run"},
		{"*.webhook.site", "webhook.site"},
		{"*.m.pipedream.net", "pipedream.net"},
		{"*.requestcatcher.com", "requestcatcher.com"},
		{"*.oast.fun", "oast.fun"},
		{"*.oastify.com", "oastify.com"},
		// Below a private entry of the public suffix list: a tenant's name.
		{"*.mybucket.s3.amazonaws.com", "under s3.amazonaws.com"},
		{"*.acct.blob.core.windows.net", "under blob.core.windows.net"},
		{"*.dave.github.io", "under github.io"},
		{"*.app.herokuapp.com", "herokuapp.com"},
		{"*.x.cloudfront.net", "cloudfront.net"},
		{"*.x.azurewebsites.net", "azurewebsites.net"},
		{"*.x.appspot.com", "appspot.com"},
		{"*.x.cloudfunctions.net", "cloudfunctions.net"},
		{"*.x.a.run.app", "a.run.app"},
		{"*.x.web.app", "web.app"},
		{"*.x.firebaseapp.com", "firebaseapp.com"},
		{"*.x.vercel.app", "vercel.app"},
		{"*.x.netlify.app", "netlify.app"},
		{"*.x.pages.dev", "pages.dev"},
		{"*.x.workers.dev", "workers.dev"},
		{"*.x.gitlab.io", "gitlab.io"},
		{"*.x.ngrok.io", "ngrok.io"},
		{"*.x.ngrok-free.app", "ngrok-free.app"},
		{"*.x.trycloudflare.com", "trycloudflare.com"},
		{"*.x.r2.dev", "r2.dev"},
		{"*.b.nyc3.digitaloceanspaces.com", "digitaloceanspaces.com"},
		{"*.x.googleapis.com", "googleapis.com"},
		// Narrow.
		{"*.stripe.com", ""},
		{"*.example.co.uk", ""},
		{"*.a.b.example.com", ""},
		{"*.corp.internal", ""},  // an unlisted top-level domain is no hosting service
		{"*.amazon.com", ""},     // not amazonaws.com
		{"*.xamazonaws.com", ""}, // nor a name ending in it
		{"*.github.com", ""},
		{"api.stripe.com", ""},
		{"x.s3.amazonaws.com", ""}, // one name: whoever holds it is who the operator approved
		{"s3.amazonaws.com", ""},
		{"192.0.2.1", ""},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.entry)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.entry, err)
			continue
		}
		got := r.Broad()
		switch {
		case tt.want == "" && got != "":
			t.Errorf("ParseRule(%q).Broad() = %q, want narrow", tt.entry, got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("ParseRule(%q).Broad() = %q, want a reason containing %q", tt.entry, got, tt.want)
		case tt.want != "" && !strings.Contains(got, "receives what the module sends"):
			t.Errorf("ParseRule(%q).Broad() = %q, want it to say what the grant risks", tt.entry, got)
		}
	}
}

// Every domain of the explicit list is one a wildcard may name (else the
// entry is dead: the grammar refuses it already) and is broad.
func TestSharedTenantList(t *testing.T) {
	for _, d := range sharedTenant {
		r, err := ParseRule("*." + d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		if r.Broad() == "" {
			t.Errorf("*.%s is not broad", d)
		}
	}
}

func TestCompile(t *testing.T) {
	a, err := Compile([]string{"api.stripe.com", "API.stripe.com.", "api.groq.com", "http://*.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.String(), "api.stripe.com, api.groq.com, http://*.example.com"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := strings.Join(a.Entries(), "|"), "api.stripe.com|api.groq.com|http://*.example.com"; got != want {
		t.Errorf("Entries() = %q, want %q", got, want)
	}

	none, err := Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	var nilList *Allowlist
	for _, l := range []*Allowlist{none, nilList} {
		if got, want := l.String(), "(none)"; got != want {
			t.Errorf("String() of an empty allowlist = %q, want %q", got, want)
		}
		if l.Allows("https", "api.stripe.com", 443) {
			t.Error("an empty allowlist allows api.stripe.com")
		}
	}

	_, err = Compile([]string{"ok.example.com", "*", "a..b", "*.com"})
	if err == nil {
		t.Fatal("Compile with bad entries succeeded")
	}
	lines := strings.Split(err.Error(), "\n")
	if got, want := len(lines), 3; got != want {
		t.Fatalf("Compile error has %d lines, want %d: %q", got, want, err)
	}
	for i, entry := range []string{`"*"`, `"a..b"`, `"*.com"`} {
		if want := "allow entry " + entry + ": "; !strings.HasPrefix(lines[i], want) {
			t.Errorf("error line %d = %q, want prefix %q", i, lines[i], want)
		}
	}
}

// allowCases are the table for Allows; they also seed FuzzAllows.
var allowCases = []struct {
	entry  string
	scheme string
	host   string
	port   int
	want   bool
}{
	{"api.stripe.com", "https", "api.stripe.com", 443, true},
	{"api.stripe.com", "http", "api.stripe.com", 80, false},
	{"api.stripe.com", "http", "api.stripe.com", 443, false},
	{"api.stripe.com", "https", "api.stripe.com", 8443, false},
	{"api.stripe.com", "https", "xapi.stripe.com", 443, false},
	{"api.stripe.com", "https", "api.stripe.com.evil.example", 443, false},
	{"api.stripe.com", "https", "evil.api.stripe.com", 443, false},
	{"api.stripe.com", "https", "API.stripe.com", 443, false},  // not canonical
	{"api.stripe.com", "https", "api.stripe.com.", 443, false}, // not canonical
	{"api.stripe.com", "HTTPS", "api.stripe.com", 443, false},
	{"http://api.stripe.com", "http", "api.stripe.com", 80, true},
	{"http://api.stripe.com", "https", "api.stripe.com", 443, false},
	{"api.stripe.com:8443", "https", "api.stripe.com", 8443, true},
	{"api.stripe.com:8443", "https", "api.stripe.com", 443, false},
	{"*.stripe.com", "https", "api.stripe.com", 443, true},
	{"*.stripe.com", "https", "a.b.c.stripe.com", 443, true},
	{"*.stripe.com", "https", "stripe.com", 443, false},
	{"*.stripe.com", "https", "xstripe.com", 443, false},
	{"*.stripe.com", "https", ".stripe.com", 443, false},
	{"*.stripe.com", "https", "a..stripe.com", 443, false},
	{"*.stripe.com", "https", "A.stripe.com", 443, false},
	{"*.stripe.com", "https", "a/b.stripe.com", 443, false},
	{"*.stripe.com", "https", "stripe.com.evil.example", 443, false},
	{"*.stripe.com", "http", "api.stripe.com", 80, false},
	{"192.0.2.1", "https", "192.0.2.1", 443, true},
	{"192.0.2.1", "https", "192.0.2.10", 443, false},
	{"[2001:db8::1]", "https", "2001:db8::1", 443, true},
	{"[2001:db8::1]", "https", "[2001:db8::1]", 443, false},
	{"[2001:db8::1]", "https", "2001:db8:0::1", 443, false},
}

func TestAllows(t *testing.T) {
	for _, c := range allowCases {
		a, err := Compile([]string{c.entry})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Allows(c.scheme, c.host, c.port); got != c.want {
			t.Errorf("[%s].Allows(%q, %q, %d) = %v, want %v", c.entry, c.scheme, c.host, c.port, got, c.want)
		}
	}
}

func TestAllowsDoesNotAllocate(t *testing.T) {
	a, err := Compile([]string{"api.stripe.com", "api.groq.com", "*.example.com", "http://x.example.org:8080"})
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		a.Allows("https", "deep.sub.example.com", 443)
		a.Allows("http", "x.example.org", 8080)
		a.Allows("https", "evil.example", 443)
	})
	if allocs != 0 {
		t.Errorf("Allows allocates %v times per run, want 0", allocs)
	}
}

func BenchmarkAllows(b *testing.B) {
	a, err := Compile([]string{"api.stripe.com", "api.groq.com", "*.example.com"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		a.Allows("https", "deep.sub.example.com", 443)
	}
}
