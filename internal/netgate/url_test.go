package netgate

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// urlCases are the table for checkURL; they also seed FuzzCheckURL. For an
// accepted URL, name is the decision target and url the URL that is sent.
var urlCases = []struct {
	raw  string
	name string
	url  string
	err  string // substring of an ErrInvalid error
}{
	{raw: "https://api.stripe.com/v1/invoices?limit=3", name: "api.stripe.com:443", url: "https://api.stripe.com/v1/invoices?limit=3"},
	{raw: "https://api.stripe.com", name: "api.stripe.com:443", url: "https://api.stripe.com"},
	{raw: "HTTPS://API.Stripe.COM./v1", name: "api.stripe.com:443", url: "https://api.stripe.com/v1"},
	{raw: "https://api.stripe.com:443/", name: "api.stripe.com:443", url: "https://api.stripe.com/"},
	{raw: "https://api.stripe.com:8443/", name: "api.stripe.com:8443", url: "https://api.stripe.com:8443/"},
	{raw: "http://api.stripe.com/", name: "http://api.stripe.com:80", url: "http://api.stripe.com/"},
	{raw: "http://api.stripe.com:443/", name: "http://api.stripe.com:443", url: "http://api.stripe.com:443/"},
	{raw: "https://api.stripe.com/a#frag", name: "api.stripe.com:443", url: "https://api.stripe.com/a"},
	{raw: "https://evil.example#@api.stripe.com/", name: "evil.example:443", url: "https://evil.example"},
	{raw: "https://evil.example?@api.stripe.com/", name: "evil.example:443", url: "https://evil.example?@api.stripe.com/"},
	{raw: "https://api.stripe.com/a%2Fb?q=%20", name: "api.stripe.com:443", url: "https://api.stripe.com/a%2Fb?q=%20"},
	{raw: "https://api.stripe.com/?", name: "api.stripe.com:443", url: "https://api.stripe.com/?"},
	{raw: "https://api.stripe.com//evil.example/x", name: "api.stripe.com:443", url: "https://api.stripe.com//evil.example/x"},
	{raw: "https://127.0.0.1/", name: "127.0.0.1:443", url: "https://127.0.0.1/"},
	{raw: "https://127.0.0.1./", name: "127.0.0.1:443", url: "https://127.0.0.1/"},
	{raw: "https://[::1]:8443/", name: "[::1]:8443", url: "https://[::1]:8443/"},
	{raw: "https://[0:0::1]/", name: "[::1]:443", url: "https://[::1]/"},
	{raw: "https://[::ffff:127.0.0.1]/", name: "[::ffff:127.0.0.1]:443", url: "https://[::ffff:127.0.0.1]/"},
	{raw: "https://[::FFFF:7F00:1]/", name: "[::ffff:127.0.0.1]:443", url: "https://[::ffff:127.0.0.1]/"},
	{raw: "https://a_b.example.com/", name: "a_b.example.com:443", url: "https://a_b.example.com/"},
	{raw: "https://1.2.3.example.com/", name: "1.2.3.example.com:443", url: "https://1.2.3.example.com/"},

	{raw: "https://api.stripe.com@evil.example/", err: "userinfo"},
	{raw: "https://user:pw@api.stripe.com/", err: "userinfo"},
	{raw: "https://@api.stripe.com/", err: "userinfo"},
	{raw: `https://evil.example\@api.stripe.com/`, err: "backslash"},
	{raw: `https:\\api.stripe.com/`, err: "backslash"},
	{raw: `https://api.stripe.com\.evil.example/`, err: "backslash"},
	{raw: "https://api.stripe.com/\t", err: "control"},
	{raw: "https://api.stripe.com\t.evil.example/", err: "control"},
	{raw: "https://api.stripe.com /", err: "space"},
	{raw: "https://api.stripe.com/\r\nX: y", err: "control"},
	{raw: "https://api.stripe.com/\x00", err: "control"},
	{raw: "https://api.stripe.com/\x7f", err: "control"},
	{raw: "https://api%2estripe.com/", err: "percent-encoded host"},
	{raw: "https://api.stripe.com%2f@evil.example/", err: "userinfo"},
	{raw: "https://аpi.stripe.com/", err: "non-ASCII"},
	{raw: "https://api。stripe.com/", err: "non-ASCII"},
	{raw: "https://api．stripe.com/", err: "non-ASCII"},
	{raw: "https://api.stripe.com/café", err: "non-ASCII"},
	{raw: "https:///v1", err: "no host"},
	{raw: "https://:443/", err: "no host"},
	{raw: "https://api.stripe.com:/", err: "empty port"},
	{raw: "https://api.stripe.com:0/", err: `port "0"`},
	{raw: "https://api.stripe.com:0443/", err: `port "0443"`},
	{raw: "https://api.stripe.com:65536/", err: `port "65536"`},
	{raw: "https://api.stripe.com:x/", err: "does not parse"},
	{raw: "https://2130706433/", err: "not a canonical IPv4"},
	{raw: "https://0x7f000001/", err: "not a canonical IPv4"},
	{raw: "https://0X7F000001/", err: "not a canonical IPv4"},
	{raw: "https://127.1/", err: "not a canonical IPv4"},
	{raw: "https://0177.0.0.1/", err: "not a canonical IPv4"},
	{raw: "https://127.0.0.01/", err: "not a canonical IPv4"},
	{raw: "https://1.2.3.4.5/", err: "not a canonical IPv4"},
	{raw: "https://example.0x10/", err: "not a canonical IPv4"},
	{raw: "https://[fe80::1%25eth0]/", err: "percent-encoded host"},
	{raw: "https://[127.0.0.1]/", err: "does not parse"},
	{raw: "https://api..stripe.com/", err: "empty label"},
	{raw: "https://*.stripe.com/", err: "contains '*'"},
	{raw: "https://api.stripe.com../", err: "empty label"},
	{raw: "https://api_stripe!.com/", err: "contains '!'"},
	{raw: "ftp://api.stripe.com/", err: `scheme "ftp"`},
	{raw: "file:///etc/passwd", err: `scheme "file"`},
	{raw: "javascript://api.stripe.com/", err: `scheme "javascript"`},
	{raw: "https:api.stripe.com", err: "not an absolute"},
	{raw: "//api.stripe.com/", err: "not an absolute"},
	{raw: "/v1/invoices", err: "not an absolute"},
	{raw: "", err: "not an absolute"},
}

func TestCheckURL(t *testing.T) {
	for _, c := range urlCases {
		got, err := checkURL(c.raw)
		if c.err != "" {
			if err == nil {
				t.Errorf("checkURL(%q) = %q, want an error containing %q", c.raw, got.url.String(), c.err)
				continue
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("checkURL(%q) error = %q, want ErrInvalid containing %q", c.raw, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("checkURL(%q): %v", c.raw, err)
			continue
		}
		if got.name != c.name {
			t.Errorf("checkURL(%q).name = %q, want %q", c.raw, got.name, c.name)
		}
		if got := got.url.String(); got != c.url {
			t.Errorf("checkURL(%q).url = %q, want %q", c.raw, got, c.url)
		}
	}
}

func TestCheckURLTooLong(t *testing.T) {
	_, err := checkURL("https://api.stripe.com/" + strings.Repeat("a", maxURLBytes))
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("checkURL(long) error = %v, want ErrTooLarge", err)
	}
}

func TestResolveLocation(t *testing.T) {
	base, err := checkURL("https://api.stripe.com:8443/v1/a?x=1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		loc  string
		want string // URL, or "error: substring"
	}{
		{"/v2/b", "https://api.stripe.com:8443/v2/b"},
		{"b?y=2", "https://api.stripe.com:8443/v1/b?y=2"},
		{"../c", "https://api.stripe.com:8443/c"},
		{"?z", "https://api.stripe.com:8443/v1/a?z"},
		{"#frag", "https://api.stripe.com:8443/v1/a?x=1"},
		{"//evil.example/x", "https://evil.example/x"},
		{"https://evil.example/", "https://evil.example/"},
		{"HTTP://Evil.Example./", "http://evil.example/"},
		{"https://api.stripe.com@evil.example/", "error: userinfo"},
		{"//api.stripe.com@evil.example/", "error: userinfo"},
		{`/\evil.example/`, "error: backslash"},
		{"https://2130706433/", "error: not a canonical IPv4"},
		{"https://evil%2eexample/", "error: does not parse"},
		{"ftp://evil.example/", "error: scheme"},
		{"/a\r\nSet-Cookie: x", "error: control"},
	}
	for _, c := range cases {
		got, err := base.resolve(c.loc)
		if want, ok := strings.CutPrefix(c.want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("resolve(%q) = %v, %v; want an error containing %q", c.loc, got.url.String(), err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("resolve(%q): %v", c.loc, err)
			continue
		}
		if got := got.url.String(); got != c.want {
			t.Errorf("resolve(%q) = %q, want %q", c.loc, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"https://api.stripe.com/v1/x", "https://api.stripe.com/v1/x"},
		{"https://user:secret@api.stripe.com/v1?key=sk_live_1#frag", "https://REDACTED@api.stripe.com/v1?REDACTED"},
		{"https://api.stripe.com/?", "https://api.stripe.com/?"},
		{"https://api.stripe.com/#x", "https://api.stripe.com/"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Redact(u); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	if got := Redact(nil); got != "" {
		t.Errorf("Redact(nil) = %q, want \"\"", got)
	}

	raw := []struct{ raw, want string }{
		{"https://user:pw@evil.example/x?k=v", "https://REDACTED@evil.example/x?REDACTED"},
		{"https://user:pw@evil.example\t/x?k=v", "https://REDACTED@evil.example\t/..."},
		{"https://evil.example/\x00?token=1", "https://evil.example/..."},
	}
	for _, c := range raw {
		if got := redactRaw(c.raw); got != c.want {
			t.Errorf("redactRaw(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}
