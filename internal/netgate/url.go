package netgate

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// maxURLBytes bounds a request URL (and a redirect's Location).
const maxURLBytes = 16 << 10

// target is a URL that passed checkURL: the scheme, host and port the
// allowlist is consulted with, and the URL the request is built from. The
// URL's host is exactly host (and port when it is not the scheme's default),
// so what is checked is what is dialed, sent as SNI and sent as Host.
type target struct {
	url    url.URL // no userinfo, no fragment; Host canonical
	scheme string  // "https" or "http"
	host   string  // lower-case ASCII, no trailing dot; IPv6 without brackets
	port   int
	name   string // decision target: "host:port", or "http://host:port"
}

// sameOrigin reports whether t and u have the same scheme, host and port.
func (t *target) sameOrigin(u *target) bool {
	return t.scheme == u.scheme && t.host == u.host && t.port == u.port
}

// urlTooLong is the refusal of a URL of n bytes, over maxURLBytes.
func urlTooLong(n int) error {
	return &sizeError{fmt.Sprintf("URL of %d bytes exceeds the limit of %d bytes", n, maxURLBytes), maxURLBytes}
}

// invalidURL builds the error for a URL checkURL refuses.
func invalidURL(format string, a ...any) error {
	return fmt.Errorf("%w: URL "+format, append([]any{ErrInvalid}, a...)...)
}

// checkURL parses raw once, strictly, and returns the target built from the
// parsed value. It refuses anything two URL parsers could read differently:
// userinfo, backslashes, whitespace and control characters, non-ASCII bytes,
// percent-encoded or non-canonical numeric hosts, IPv6 zones and empty
// ports. Every refusal wraps ErrInvalid.
func checkURL(raw string) (target, error) {
	if len(raw) > maxURLBytes {
		return target{}, urlTooLong(len(raw))
	}
	if err := checkURLBytes(raw); err != nil {
		return target{}, err
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		return target{}, invalidURL(`is not an absolute "https://" or "http://" URL`)
	}
	scheme := strings.ToLower(raw[:i])
	if scheme != "https" && scheme != "http" {
		return target{}, invalidURL("scheme %q is not allowed; use https or http", raw[:i])
	}
	authority := raw[i+3:]
	if j := strings.IndexAny(authority, "/?#"); j >= 0 {
		authority = authority[:j]
	}
	if strings.Contains(authority, "@") {
		return target{}, invalidURL(`has userinfo (credentials before "@"); send credentials in an Authorization header`)
	}
	if strings.Contains(authority, "%") {
		return target{}, invalidURL("has a percent-encoded host; write the host literally")
	}
	if strings.HasSuffix(authority, ":") {
		return target{}, invalidURL("has an empty port; omit the colon or write a port")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, invalidURL("does not parse: %v", unwrapURLError(err))
	}
	// Both readings of the authority must agree; with '@' and '%' excluded,
	// url.Parse keeps it verbatim.
	if u.Scheme != scheme || u.Opaque != "" || u.User != nil || u.Host != authority {
		return target{}, invalidURL("is ambiguous")
	}

	t := target{scheme: scheme, port: defaultPort(scheme)}
	if p := u.Port(); p != "" {
		port, ok := parsePort(p)
		if !ok {
			return target{}, invalidURL("port %q is not a number from 1 to 65535 (without leading zeros)", p)
		}
		t.port = port
	}
	h := u.Hostname()
	switch {
	case h == "":
		return target{}, invalidURL("has no host")
	case strings.HasPrefix(authority, "["):
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return target{}, invalidURL("host [%s] is not an IPv6 address without a zone", h)
		}
		t.host = a.String()
	default:
		h = strings.TrimSuffix(strings.ToLower(h), ".")
		if err := checkHostname(h); err != nil {
			return target{}, invalidURL("host: %v", err)
		}
		if numericLastLabel(h) {
			if a, err := netip.ParseAddr(h); err != nil || !a.Is4() || a.String() != h {
				return target{}, invalidURL("host %q is not a canonical IPv4 address; write four decimal octets without leading zeros", h)
			}
		}
		t.host = h
	}

	hostport := t.host
	if strings.Contains(hostport, ":") {
		hostport = "[" + hostport + "]"
	}
	port := strconv.Itoa(t.port)
	if t.port == 443 && scheme == "https" || t.port == 80 && scheme == "http" {
		t.url.Host = hostport
	} else {
		t.url.Host = hostport + ":" + port
	}
	t.name = hostport + ":" + port
	if scheme == "http" {
		t.name = "http://" + t.name
	}
	t.url.Scheme = scheme
	t.url.Path = u.Path
	t.url.RawPath = u.RawPath
	t.url.RawQuery = u.RawQuery
	t.url.ForceQuery = u.ForceQuery
	return t, nil
}

// checkURLBytes refuses bytes that parsers disagree about or that have no
// place in a URL on the wire.
func checkURLBytes(s string) error {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c == 0x7f:
			return invalidURL("contains a space or control character (byte %d); percent-encode it", i)
		case c >= 0x80:
			return invalidURL("contains a non-ASCII byte (byte %d); percent-encode it, and write hosts in punycode", i)
		case c == '\\':
			return invalidURL(`contains a backslash (byte %d); use "/" or percent-encode it as %%5C`, i)
		}
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// resolve checks the Location of a redirect from t. An absolute location is
// checked as it is; a scheme-relative one gets t's scheme; any other is
// resolved against t's URL first. Either way the result passes through
// checkURL, so a redirect is held to exactly the rules of a request.
func (t *target) resolve(loc string) (target, error) {
	if len(loc) > maxURLBytes {
		return target{}, urlTooLong(len(loc))
	}
	if err := checkURLBytes(loc); err != nil {
		return target{}, err
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return target{}, invalidURL("does not parse: %v", unwrapURLError(err))
	}
	switch {
	case ref.Scheme != "":
		return checkURL(loc)
	case strings.HasPrefix(loc, "//"):
		return checkURL(t.scheme + ":" + loc)
	}
	return checkURL(t.url.ResolveReference(ref).String())
}

// redacted is the placeholder Redact puts in place of userinfo and query.
const redacted = "REDACTED"

// Redact returns a URL string safe for logs and audit records: userinfo and
// query are replaced by "REDACTED" and the fragment is dropped. The result
// still needs sandbox.Sanitize before it is printed.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	if r.User != nil {
		r.User = url.User(redacted)
	}
	if r.RawQuery != "" {
		r.RawQuery = redacted
	}
	r.Fragment, r.RawFragment = "", ""
	return r.String()
}

// redactRaw is Redact for a string that may not parse: it keeps the scheme
// and host and drops the rest.
func redactRaw(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return Redact(u)
	}
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		if len(s) > 64 {
			s = s[:64] + "..."
		}
		return s
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i] + "/..."
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = redacted + rest[i:]
	}
	return scheme + "://" + rest
}
