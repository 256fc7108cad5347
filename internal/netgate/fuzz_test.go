package netgate

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"
)

// FuzzParseRule: ParseRule never panics, and an accepted entry has a
// canonical form that parses back to the same rule and that allows what the
// rule says.
func FuzzParseRule(f *testing.F) {
	for _, c := range ruleCases {
		f.Add(c.entry)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		r, err := ParseRule(entry)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "allow entry ") {
				t.Fatalf("ParseRule(%q) error %q does not name the entry", entry, err)
			}
			return
		}
		if r.Scheme != "https" && r.Scheme != "http" || r.Port < 1 || r.Port > 65535 || r.Host == "" {
			t.Fatalf("ParseRule(%q) = %+v: bad field", entry, r)
		}
		if r.Host != strings.ToLower(r.Host) || strings.HasSuffix(r.Host, ".") || strings.Contains(r.Host, "*") {
			t.Fatalf("ParseRule(%q) = %+v: host not canonical", entry, r)
		}
		s := r.String()
		again, err := ParseRule(s)
		if err != nil || again != r || again.String() != s {
			t.Fatalf("ParseRule(%q) = %+v; its form %q parses to %+v, %v", entry, r, s, again, err)
		}
		a, err := Compile([]string{entry})
		if err != nil {
			t.Fatalf("Compile(%q): %v", entry, err)
		}
		if r.Wildcard {
			if a.Allows(r.Scheme, r.Host, r.Port) {
				t.Fatalf("%q allows its apex %s", entry, r.Host)
			}
			if !a.Allows(r.Scheme, "x."+r.Host, r.Port) {
				t.Fatalf("%q does not allow x.%s", entry, r.Host)
			}
			if ps, _ := publicsuffix.PublicSuffix(r.Host); ps == r.Host {
				t.Fatalf("%q is a wildcard over the public suffix %s", entry, ps)
			}
			if ps, _ := suffixBelow(r.Host); strings.HasSuffix(ps, "."+r.Host) {
				t.Fatalf("%q is a wildcard over public suffixes such as %s", entry, ps)
			}
		} else if !a.Allows(r.Scheme, r.Host, r.Port) {
			t.Fatalf("%q does not allow its own host %s", entry, r.Host)
		}
	})
}

// FuzzAllows: whatever the inputs, Allows says yes only for a host equal to
// the rule's host, or for a wildcard a valid name strictly below it, with the
// same scheme and port.
func FuzzAllows(f *testing.F) {
	for _, c := range allowCases {
		f.Add(c.entry, c.scheme, c.host, c.port)
	}
	f.Fuzz(func(t *testing.T, entry, scheme, host string, port int) {
		a, err := Compile([]string{entry})
		if err != nil {
			return
		}
		if !a.Allows(scheme, host, port) {
			return
		}
		r := a.rules[0]
		if scheme != r.Scheme || port != r.Port {
			t.Fatalf("[%s] allows %s %s %d", entry, scheme, host, port)
		}
		if !r.Wildcard {
			if host != r.Host {
				t.Fatalf("[%s] allows host %q", entry, host)
			}
			return
		}
		sub, ok := strings.CutSuffix(host, "."+r.Host)
		if !ok || sub == "" || sub != strings.ToLower(sub) || strings.Contains(sub, "..") || strings.HasPrefix(sub, ".") {
			t.Fatalf("[%s] allows host %q", entry, host)
		}
		if _, err := checkURL("https://" + host + "/"); err != nil {
			t.Fatalf("[%s] allows host %q, which no URL can carry: %v", entry, host, err)
		}
	})
}

// fuzzList is the allowlist FuzzCheckURL decides against.
var fuzzList = []string{"api.stripe.com", "*.stripe.com", "http://api.test:8080", "192.0.2.1", "[2001:db8::1]:8443"}

// FuzzCheckURL: a URL string goes to a decision without panicking; an
// accepted URL is canonical, carries no userinfo or fragment, reparses to
// the same scheme, host and port, and if it is allowed its host is matched by
// some rule.
func FuzzCheckURL(f *testing.F) {
	for _, c := range urlCases {
		f.Add(c.raw)
	}
	f.Add("https://api.stripe.com@evil.example/")
	f.Add("https://a.b.stripe.com:443/x?y#z")
	f.Add("http://api.test:8080/")
	f.Add("https://[2001:db8::1]:8443/")
	allow, err := Compile(fuzzList)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tg, err := checkURL(raw)
		if err != nil {
			return
		}
		u := tg.url
		if u.User != nil || u.Fragment != "" || u.Opaque != "" || u.Scheme != tg.scheme {
			t.Fatalf("checkURL(%q) = %#v", raw, u)
		}
		if tg.host == "" || tg.host != strings.ToLower(tg.host) || strings.HasSuffix(tg.host, ".") || strings.ContainsAny(tg.host, "%@\\/ ") {
			t.Fatalf("checkURL(%q): host %q not canonical", raw, tg.host)
		}
		back, err := url.Parse(u.String())
		if err != nil {
			t.Fatalf("checkURL(%q): built URL %q does not parse: %v", raw, u.String(), err)
		}
		port := defaultPort(back.Scheme)
		if p := back.Port(); p != "" {
			port, _ = parsePort(p)
		}
		if back.Scheme != tg.scheme || back.Hostname() != tg.host || port != tg.port || back.Host != u.Host {
			t.Fatalf("checkURL(%q): built URL %q reads as %s %s %d, checked %s %s %d", raw, u.String(), back.Scheme, back.Hostname(), port, tg.scheme, tg.host, tg.port)
		}
		if ru := u.RequestURI(); !strings.HasPrefix(ru, "/") {
			t.Fatalf("checkURL(%q): request URI %q is not a path", raw, ru)
		}
		again, err := checkURL(u.String())
		if err != nil || again.name != tg.name || again.url.String() != u.String() {
			t.Fatalf("checkURL(%q) built %q, which checks as %q, %v", raw, u.String(), again.url.String(), err)
		}
		if !allow.Allows(tg.scheme, tg.host, tg.port) {
			return
		}
		matched := false
		for _, e := range fuzzList {
			r, _ := ParseRule(e)
			if r.Scheme != tg.scheme || r.Port != tg.port {
				continue
			}
			if tg.host == r.Host && !r.Wildcard || r.Wildcard && strings.HasSuffix(tg.host, "."+r.Host) {
				matched = true
			}
		}
		if !matched {
			t.Fatalf("checkURL(%q): %s allowed but no rule matches", raw, tg.name)
		}
		if numericLastLabel(tg.host) {
			if a, err := netip.ParseAddr(tg.host); err != nil || a.String() != tg.host {
				t.Fatalf("checkURL(%q): numeric host %q allowed", raw, tg.host)
			}
		}
	})
}

// FuzzClassify: Classify never panics, ignores zones, and classifies the
// IPv4-mapped and NAT64 forms of an IPv4 address by the address.
func FuzzClassify(f *testing.F) {
	for _, c := range classifyCases {
		b := netip.MustParseAddr(c.ip).WithZone("").As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		c := Classify(ip)
		if c == "invalid" {
			t.Fatalf("Classify(%s) = invalid", ip)
		}
		if z := Classify(ip.WithZone("eth0")); ip.Is6() && z != c {
			t.Fatalf("Classify(%s%%eth0) = %q, want %q", ip, z, c)
		}
		if !ip.Is4() && !ip.Is4In6() {
			return
		}
		a := ip.Unmap().As4()
		c4 := Classify(netip.AddrFrom4(a))
		mapped := Classify(netip.AddrFrom16(netip.AddrFrom4(a).As16()))
		nat := Classify(netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 10: 0, 11: 0, 12: a[0], 13: a[1], 14: a[2], 15: a[3]}))
		if (c4 == "") != (mapped == "") || (c4 == "") != (nat == "") {
			t.Fatalf("%s: Classify = %q, mapped %q, nat64 %q", netip.AddrFrom4(a), c4, mapped, nat)
		}
		if c4 != "" && (mapped != "ipv4-mapped "+c4 || nat != "nat64 "+c4) {
			t.Fatalf("%s: Classify = %q, mapped %q, nat64 %q", netip.AddrFrom4(a), c4, mapped, nat)
		}
	})
}
