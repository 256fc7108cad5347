// Package netgate is the network gate of the module sandbox: the one path
// through which a module's HTTP requests reach the network.
//
// A Gate is built for one module when the module is linked. It binds the
// module id, the module's compiled Allowlist, the operator's settings and
// the audit Recorder; nothing is looked up later from process-global state or
// from the caller, except the command name in the call's context, which is
// used only to attribute decisions. Each Gate owns its transport, so no
// connection, TLS session or cookie state is shared with another module or
// with the station's own clients, and nothing process-wide
// (http.DefaultTransport, net.DefaultResolver, proxy variables) is read or
// changed.
//
// # Allowlist entries
//
// An entry is host, *.host or an IP literal, with an optional scheme and
// port:
//
//	api.stripe.com            https on 443 (a bare host means https)
//	http://api.stripe.com     http on 80
//	api.stripe.com:8443       https on 8443 (also written https://api.stripe.com:8443)
//	*.stripe.com              https on 443 for any name below stripe.com, never stripe.com itself
//	192.0.2.1, [2001:db8::1]  IP literals in canonical form, IPv6 in brackets
//
// Upper case is folded and one trailing dot dropped. Everything else is
// refused when the manifest is installed, with an error that names the entry
// and says what to write instead: "*", wildcards over a top-level domain or
// any public suffix ("*.com", "*.co.uk", "*.github.io"), wildcards that are
// not the whole first label ("a*.x.com", "x.*.com", "**.x.com"), empty
// labels, paths, queries and userinfo, non-ASCII names (write punycode),
// schemes other than http and https, ports outside 1-65535, non-canonical IP
// literals and hosts whose last label is numeric but which are not a
// dotted-quad IPv4 address. Rule.String gives the canonical form.
//
// # Requests
//
// Do takes the guest's abi.HTTPRequest and parses its URL once, strictly:
// the scheme must be http or https; userinfo, backslashes, whitespace and
// control bytes, non-ASCII bytes, percent-encoded hosts, IPv6 zones, empty
// ports and numeric hosts other than canonical dotted-quads ("2130706433",
// "0x7f000001", "127.1", "0177.0.0.1") are refused as invalid. The host is
// folded to lower case and a trailing dot dropped; the fragment is dropped.
// The request is then built from the parsed value, so the scheme, host and
// port the allowlist approved are exactly the ones dialed, sent as TLS SNI
// and sent as Host.
//
// The guest cannot set Host, Connection, Keep-Alive, TE, Trailer,
// Transfer-Encoding, Upgrade, Content-Length, Expect, HTTP2-Settings or any
// Proxy-* header, cannot use CONNECT or TRACE, and header names must be
// tokens whose values carry no control characters other than tab. Such a
// request is malformed: Do returns an error wrapping ErrInvalid (and records
// the refusal), rather than a violation, because nothing about it depends on
// the module's policy.
//
// # Connections
//
// The gate resolves names itself (an operator Resolve override first, then
// the Resolver) and checks every address with Classify before connecting:
// loopback, private, link-local and cloud metadata, unspecified, multicast,
// CGNAT, reserved and similar ranges, and their IPv4-mapped, NAT64, 6to4 and
// Teredo forms, are refused unless an operator AllowPrivate prefix contains
// the (unmapped) address. If any address of a name is refused the connection
// is refused. The checked address, never the name, is dialed, and the
// dialer's Control hook checks it once more on the socket, so a DNS answer
// that changes between check and connect cannot win. A name the allowlist
// refuses is never resolved.
//
// # Redirects
//
// Up to MaxRedirects (10) redirects are followed, each hop going through the
// same URL check and allowlist decision as the first request; a redirect from
// https to http is always refused. When a hop changes the origin (scheme,
// host or port), every guest header except a short safelist (Accept,
// Accept-Language, Content-Language, Content-Type, User-Agent, Cache-Control)
// is dropped for the rest of the request — Authorization, Cookie and custom
// credential headers such as X-Api-Key alike. The response carries the final
// URL.
//
// # Decisions
//
// Every decision goes to the Recorder: each hop's allowlist decision (target
// "host:port", or "http://host:port" for plain http), each connection
// attempt (target "host:port (ip)") and each refused malformed request. A
// denial is returned as a *sandbox.Violation, which renders as
//
//	sandbox violation: module dave/stripe-invoicing: network: "evil.example:443" is not in its allowlist (api.stripe.com, api.groq.com)
//
// # Limits
//
// The call's context bounds everything, including dials the transport would
// otherwise let outlive the request. Request bodies are limited to
// MaxRequestBytes and response bodies to Options.MaxResponseBytes; beyond
// either the error wraps ErrTooLarge.
package netgate
