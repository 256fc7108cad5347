package netgate

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Rule is one compiled allowlist entry. It matches requests whose scheme and
// port equal Scheme and Port and whose host is Host (or, for a wildcard, a
// name strictly below Host).
type Rule struct {
	// Scheme is "https" or "http".
	Scheme string
	// Host is lower-case ASCII without a trailing dot. For a wildcard entry
	// it is the domain after "*."; for an IPv6 entry it is the address
	// without brackets.
	Host string
	// Wildcard reports a "*.host" entry: any name at any depth below Host
	// matches, Host itself never does.
	Wildcard bool
	// Port is the port the entry grants, 1 to 65535.
	Port int
}

// ParseRule parses one allowlist entry: host, *.host or an IP literal
// (IPv6 in brackets), with an optional "https://" or "http://" and an
// optional ":port". A bare host means https on 443; "http://host" means
// http on 80. Upper case is folded to lower case and one trailing dot is
// dropped; everything else that is not already in canonical form is an
// error that names the entry, says what is wrong and what to write instead.
func ParseRule(entry string) (Rule, error) {
	r, err := parseRule(entry)
	if err != nil {
		return Rule{}, fmt.Errorf("allow entry %q: %w", entry, err)
	}
	return r, nil
}

func parseRule(entry string) (Rule, error) {
	if entry == "" {
		return Rule{}, errors.New(`is empty; write a host such as "api.example.com"`)
	}
	for i := 0; i < len(entry); i++ {
		if c := entry[i]; c <= ' ' || c == 0x7f {
			return Rule{}, errors.New(`contains a space or control character; write just the host, e.g. "api.example.com"`)
		}
	}

	r := Rule{Scheme: "https"}
	rest := entry
	if i := strings.Index(rest, "://"); i >= 0 {
		r.Scheme = strings.ToLower(rest[:i])
		if r.Scheme != "https" && r.Scheme != "http" {
			return Rule{}, fmt.Errorf(`scheme %q is not supported; write "host" (https) or "http://host"`, rest[:i])
		}
		rest = rest[i+3:]
	} else if s, _, ok := strings.Cut(rest, ":"); ok && (strings.EqualFold(s, "https") || strings.EqualFold(s, "http")) {
		return Rule{}, fmt.Errorf(`write the scheme as %q`, strings.ToLower(s)+"://host")
	}
	prefix := ""
	if r.Scheme == "http" {
		prefix = "http://"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return Rule{}, fmt.Errorf("an entry names a host, not a URL: remove %q and write %q", rest[i:], prefix+rest[:i])
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		return Rule{}, fmt.Errorf("credentials (%q) do not belong in an entry; write %q", rest[:i+1], prefix+rest[i+1:])
	}

	host, port, hasPort, bracketed := rest, "", false, false
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return Rule{}, errors.New(`an IPv6 address needs a closing "]", as in "[2001:db8::1]"`)
		}
		host, bracketed = rest[1:end], true
		if after := rest[end+1:]; after != "" {
			if after[0] != ':' {
				return Rule{}, fmt.Errorf("unexpected %q after the IPv6 address; write %q", after, prefix+rest[:end+1])
			}
			port, hasPort = after[1:], true
		}
	} else if n := strings.Count(rest, ":"); n > 1 {
		return Rule{}, errors.New(`an IPv6 address must be written in brackets, as in "[2001:db8::1]" or "[2001:db8::1]:8443"`)
	} else if n == 1 {
		i := strings.IndexByte(rest, ':')
		host, port, hasPort = rest[:i], rest[i+1:], true
	}

	r.Port = defaultPort(r.Scheme)
	if hasPort {
		p, ok := parsePort(port)
		if !ok {
			return Rule{}, fmt.Errorf("port %q is not a number from 1 to 65535 (without leading zeros), as in %q", port, "api.example.com:8443")
		}
		r.Port = p
	}

	if bracketed {
		a, err := netip.ParseAddr(strings.ToLower(host))
		switch {
		case err != nil || !a.Is6():
			return Rule{}, fmt.Errorf("%q in brackets is not an IPv6 address", host)
		case a.Zone() != "":
			return Rule{}, errors.New("an IPv6 zone (%...) is not allowed in an entry; write the address without it")
		case a.String() != strings.ToLower(host):
			return Rule{}, fmt.Errorf("IPv6 address %q is not in canonical form; write [%s]", host, a)
		}
		r.Host = a.String()
		return r, nil
	}

	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return Rule{}, nonASCII(host)
		}
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case h == "":
		return Rule{}, errors.New(`names no host; write a host such as "api.example.com"`)
	case h == "*":
		return Rule{}, errors.New(`"*" would allow every host; list the hosts the module needs, e.g. "api.example.com" or "*.example.com"`)
	case strings.HasPrefix(h, "*."):
		r.Wildcard = true
		h = h[2:]
	}
	if strings.Contains(h, "*") {
		return Rule{}, errors.New(`"*" may only stand alone as the first label, as in "*.example.com" (any name below example.com)`)
	}
	if err := checkHostname(h); err != nil {
		return Rule{}, err
	}
	if numericLastLabel(h) {
		if r.Wildcard {
			return Rule{}, errors.New("a wildcard cannot be combined with an IP address; list each address")
		}
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is4() || a.String() != h {
			return Rule{}, fmt.Errorf("%q is not a canonical IPv4 address; write four decimal octets without leading zeros, as in \"192.0.2.1\"", h)
		}
	} else if r.Wildcard {
		if ps, _ := publicsuffix.PublicSuffix(h); ps == h {
			if !strings.Contains(h, ".") {
				return Rule{}, fmt.Errorf("*.%s would allow a whole top-level domain; list the hosts instead, e.g. \"api.example.%s\" or \"*.example.%s\"", h, h, h)
			}
			return Rule{}, fmt.Errorf("%q is a public suffix whose names belong to different owners; list the hosts instead, e.g. \"*.example.%s\"", h, h)
		}
		if ps, _ := suffixBelow(h); strings.HasSuffix(ps, "."+h) {
			// A wildcard rule of the list (*.compute.amazonaws.com,
			// *.kawasaki.jp): each name below h is a public suffix.
			return Rule{}, fmt.Errorf("every name below %q is a public suffix, whose names belong to different owners; list the hosts instead", h)
		}
	}
	r.Host = h
	return r, nil
}

// probeLabel stands for any label: no rule of the public suffix list names
// it, so the suffix of probeLabel+"."+d is what every name below d is
// under.
const probeLabel = "station-probe"

// suffixBelow returns the public suffix every name below d is under, and
// whether the ICANN section of the list holds it (false: a hosting
// service's private entry, or the default rule). It is below d itself
// ("x.kawasaki.jp" for "kawasaki.jp") when d's subdomains are public
// suffixes by a wildcard rule of the list.
func suffixBelow(d string) (ps string, icann bool) {
	return publicsuffix.PublicSuffix(probeLabel + "." + d)
}

// sharedTenant are domains under which a cloud, hosting, CDN or tunnel
// service gives names to any of its customers (a storage bucket, a
// function, a load balancer, a virtual machine, a tunnel) but that the
// public suffix list does not mark as such at that level. The private
// section of the list covers most such services (github.io, herokuapp.com,
// s3.amazonaws.com, blob.core.windows.net, ...): see Broad. This list adds
// what it misses, chiefly the parents of its entries (amazonaws.com above
// s3.amazonaws.com) and services it does not list; it cannot be complete.
var sharedTenant = []string{
	// clouds: buckets, functions, load balancers, virtual machines, registries
	"amazonaws.com", "on.aws", "windows.net", "cloudapp.azure.com", "azurecr.io",
	"googleusercontent.com", "firebaseio.com", "oraclecloud.com", "appdomain.cloud", "mybluemix.net",
	"aliyuncs.com", "myqcloud.com",
	// object storage
	"wasabisys.com", "backblazeb2.com", "cloudflarestorage.com",
	// hosting and CDNs
	"fastly.net", "b-cdn.net", "railway.app", "herokudns.com", "glitch.me", "surge.sh",
	"sourceforge.io", "neocities.org", "sharepoint.com",
	// tunnels
	"loca.lt", "localtunnel.me", "serveo.net", "serveousercontent.com", "lhr.life", "localhost.run",
	"pinggy.link", "cfargotunnel.com", "devtunnels.ms", "pagekite.me", "loophole.site", "zrok.io",
	// hosting the list misses
	"koyeb.app", "modal.run",
	// request inspectors and out-of-band testing: a name for anyone, made
	// to collect what is sent to it
	"webhook.site", "requestcatcher.com", "pipedream.net", "interact.sh", "oast.fun", "oast.live",
	"oast.me", "oast.online", "oast.pro", "oast.site", "burpcollaborator.net", "oastify.com",
}

// Broad returns why r reaches hosts that different owners hold although
// ParseRule accepts it, or "" if it does not: a wildcard below a domain where
// a cloud, hosting or tunnel service gives names to any customer, so that
// whoever gets one (a bucket, a function, a tunnel) receives what the module
// sends. The class is the public suffix list's private section — the names
// below the wildcard's domain are under a suffix a hosting service, not the
// ICANN registries, lists — and, for what the list misses, a short list of
// such domains (sharedTenant), including their parents: "*.amazonaws.com"
// covers s3.amazonaws.com. A manifest may ask for such a rule only with the
// operator's grant; the reason is shown when it asks.
func (r Rule) Broad() string {
	if !r.Wildcard {
		return ""
	}
	const anyone = "whoever holds one receives what the module sends"
	h := r.Host
	// The default rule ("*", an unlisted top-level domain) has one label and
	// is no hosting service's.
	if ps, icann := suffixBelow(h); !icann && strings.Contains(ps, ".") {
		return fmt.Sprintf("%s is under %s, where a hosting service gives names to any of its customers (public suffix list): %s", h, ps, anyone)
	}
	for _, d := range sharedTenant {
		switch {
		case h == d:
			return fmt.Sprintf("a cloud, hosting or tunnel service gives the names below %s to any of its customers: %s", h, anyone)
		case strings.HasSuffix(h, "."+d):
			return fmt.Sprintf("%s is under %s, where a cloud, hosting or tunnel service gives names to any of its customers: %s", h, d, anyone)
		case strings.HasSuffix(d, "."+h):
			return fmt.Sprintf("names below %s include %s, where a cloud, hosting or tunnel service gives names to any of its customers: %s", h, d, anyone)
		}
	}
	return ""
}

// nonASCII explains that an internationalized name must be written in
// punycode. (The gate does not convert names itself: what the manifest says
// is exactly what is matched.)
func nonASCII(host string) error {
	return fmt.Errorf(`host %q is not ASCII; write it in punycode, the "xn--" form (bücher.example is "xn--bcher-kva.example")`, host)
}

// checkHostname reports whether h (lower case, no trailing dot) is a
// sequence of dot-separated labels of 1 to 63 letters, digits, hyphens and
// underscores, 253 bytes at most.
func checkHostname(h string) error {
	if len(h) > 253 {
		return errors.New("the host is longer than 253 characters")
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" {
			return errors.New(`the host has an empty label (".." or a leading dot); for subdomains write "*.example.com"`)
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q is longer than 63 characters", label)
		}
		for i := 0; i < len(label); i++ {
			if !hostByte(label[i]) {
				return fmt.Errorf("the host contains %q; a host has only letters, digits, '-', '_' and dots", label[i])
			}
		}
	}
	return nil
}

func hostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// validLabels reports whether s is a non-empty sequence of valid
// lower-case labels. It does not allocate.
func validLabels(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if n == 0 {
				return false
			}
			n = 0
		case hostByte(c):
			if n++; n > 63 {
				return false
			}
		default:
			return false
		}
	}
	return n > 0
}

// numericLastLabel reports whether the last label of h looks like a number
// (all decimal digits, or "0x" followed by hex digits). Such a name is read
// as an IPv4 address by some parsers (WHATWG URL, inet_aton), so it is
// accepted only as a canonical dotted-quad.
func numericLastLabel(h string) bool {
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return false
	}
	if len(last) >= 2 && last[0] == '0' && last[1] == 'x' {
		for i := 2; i < len(last); i++ {
			if c := last[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if c := last[i]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parsePort parses a decimal port from 1 to 65535 without sign or leading
// zeros.
func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	p := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		p = p*10 + int(c-'0')
	}
	return p, p <= 65535
}

func defaultPort(scheme string) int {
	if scheme == "http" {
		return 80
	}
	return 443
}

// String returns the canonical form of the entry: the shortest text that
// parses to r. https is implied and its default port omitted; http is
// written out and its default port omitted.
func (r Rule) String() string {
	host := r.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if r.Wildcard {
		host = "*." + host
	}
	switch {
	case r.Scheme == "https" && r.Port == 443:
		return host
	case r.Scheme == "https":
		return host + ":" + strconv.Itoa(r.Port)
	case r.Port == 80:
		return r.Scheme + "://" + host
	default:
		return r.Scheme + "://" + host + ":" + strconv.Itoa(r.Port)
	}
}

// matchHost reports whether host (canonical) is matched by r. It does not
// allocate.
func (r *Rule) matchHost(host string) bool {
	if !r.Wildcard {
		return host == r.Host
	}
	n := len(host) - len(r.Host)
	if n < 2 || host[n-1] != '.' || host[n:] != r.Host || len(host) > 253 {
		return false
	}
	return validLabels(host[:n-1])
}

// Allowlist is a compiled network allowlist. It is immutable and safe for
// concurrent use; the nil *Allowlist allows nothing.
type Allowlist struct {
	rules   []Rule
	entries []string // canonical form of rules[i]
	reasons []string // audit reason when rules[i] allows a request
	list    string   // "a, b" or "(none)"
	denial  string   // "is not in its allowlist (a, b)"
}

// Compile parses every entry and builds the allowlist. Duplicate entries
// (after canonicalisation) are kept once. Every bad entry is reported, each
// error naming its entry.
func Compile(entries []string) (*Allowlist, error) {
	a := &Allowlist{}
	var errs []error
	seen := make(map[Rule]bool, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		s := r.String()
		a.rules = append(a.rules, r)
		a.entries = append(a.entries, s)
		a.reasons = append(a.reasons, "allowlist entry "+s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	a.list = "(none)"
	a.denial = "is not in its allowlist (none)"
	if len(a.entries) > 0 {
		a.list = strings.Join(a.entries, ", ")
		a.denial = "is not in its allowlist (" + a.list + ")"
	}
	return a, nil
}

// Allows reports whether a request to scheme://host:port is allowed. host
// must be in the canonical form the gate produces (lower-case ASCII without
// a trailing dot; an IPv6 address without brackets); a host in any other
// form is never allowed. Allows is pure and does not allocate.
func (a *Allowlist) Allows(scheme, host string, port int) bool {
	return a.match(scheme, host, port) >= 0
}

// match returns the index of the first rule that allows the request, or -1.
func (a *Allowlist) match(scheme, host string, port int) int {
	if a == nil {
		return -1
	}
	for i := range a.rules {
		r := &a.rules[i]
		if r.Port == port && r.Scheme == scheme && r.matchHost(host) {
			return i
		}
	}
	return -1
}

// allowsHostPort reports whether some rule, for either scheme, covers
// host:port. The dialer uses it as a second, scheme-blind check.
func (a *Allowlist) allowsHostPort(host string, port int) bool {
	if a == nil {
		return false
	}
	for i := range a.rules {
		r := &a.rules[i]
		if r.Port == port && r.matchHost(host) {
			return true
		}
	}
	return false
}

// String returns the canonical entries separated by ", ", or "(none)".
func (a *Allowlist) String() string {
	if a == nil || a.list == "" {
		return "(none)"
	}
	return a.list
}

// Entries returns the canonical form of each entry, in order.
func (a *Allowlist) Entries() []string {
	if a == nil {
		return nil
	}
	return append([]string(nil), a.entries...)
}

// denialReason is the reason recorded when a request matches no rule.
func (a *Allowlist) denialReason() string {
	if a == nil || a.denial == "" {
		return "is not in its allowlist (none)"
	}
	return a.denial
}
