package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/manifest"
)

// Error is one problem found in config.yaml. Load joins every Error it finds
// with errors.Join.
type Error struct {
	File   string
	Line   int // 1-based; 0 when the problem has no position
	Column int // 1-based; 0 when unknown
	Field  string
	Entry  string // the offending list entry, when there is one
	Msg    string
}

// Error renders e as one line:
//
//	config.yaml:3:7: network.resolve: entry "x=y": ...
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File + ":")
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line) + ":")
		if e.Column > 0 {
			b.WriteString(strconv.Itoa(e.Column) + ":")
		}
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	if e.Entry != "" {
		b.WriteString("entry " + quote(e.Entry) + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// quote renders s Go-quoted and bounded, for error messages.
func quote(s string) string {
	const max = 128
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}

// decoder walks config.yaml's node tree. It is deliberately the same shape
// as the manifest decoder: positions on every error, unknown and duplicate
// keys refused, all problems reported.
type decoder struct {
	file string
	errs []*Error

	// explicit records which limits the file set, to tell a conflict the
	// operator wrote from a default that no longer fits.
	explicit map[string]*yaml.Node
}

func (d *decoder) add(n *yaml.Node, field, entry, msg string) {
	e := &Error{File: d.file, Field: field, Entry: entry, Msg: msg}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func (d *decoder) addf(n *yaml.Node, field, entry, format string, args ...any) {
	d.add(n, field, entry, fmt.Sprintf(format, args...))
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

func (d *decoder) decode(data []byte) *Config {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if !errors.Is(err, io.EOF) {
			d.yamlError(err)
		}
		return c // an empty file is the defaults
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(err)
		return c
	default:
		d.add(&extra, "", "", "config.yaml is one YAML document; found a second one")
		return c
	}
	if len(doc.Content) != 1 || isNull(doc.Content[0]) {
		return c
	}
	d.explicit = map[string]*yaml.Node{}
	d.mapping(doc.Content[0], "", []field{
		{"network", func(v *yaml.Node) { d.network(v, &c.Network) }},
		{"limits", func(v *yaml.Node) { d.limits(v, &c.Limits) }},
		{"subprocess", func(v *yaml.Node) { d.subprocess(v, &c.Subprocess) }},
		{"llm", func(v *yaml.Node) { d.llm(v, &c.LLM) }},
		{"filesystem", func(v *yaml.Node) {
			d.mapping(v, "filesystem", []field{
				{"grant", func(v *yaml.Node) {
					d.list(v, "filesystem.grant", func(e *yaml.Node, s string) {
						if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
							d.add(e, "filesystem.grant", s, `must be an absolute path or start with "~/"`)
							return
						}
						c.Filesystem.Grant = append(c.Filesystem.Grant, s)
					})
				}},
				{"quota", func(v *yaml.Node) { d.size(v, "filesystem.quota", &c.Filesystem.Quota) }},
			})
		}},
	})
	d.checkLimits(&c.Limits)
	sort.SliceStable(d.errs, func(i, j int) bool {
		a, b := d.errs[i], d.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return c
}

func safeDecode(dec *yaml.Decoder, v *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: malformed document (%v)", r)
		}
	}()
	return dec.Decode(v)
}

func (d *decoder) yamlError(err error) {
	msg := err.Error()
	var line int
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	q := quote(msg)
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Msg: "invalid YAML: " + q[1:len(q)-1]})
}

type field struct {
	name   string
	decode func(v *yaml.Node)
}

// mapping decodes a mapping with known keys; unknown and duplicate keys are
// errors. A null value is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.typeError(n, path, "a mapping")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.addf(k, path, "", "keys must be field names, not %s", describe(k))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.addf(k, path, "", "duplicate field %q (first at line %d)", k.Value, line)
			continue
		}
		var f *field
		for j := range fields {
			if fields[j].name == k.Value {
				f = &fields[j]
			}
		}
		if f == nil {
			d.add(k, path, "", unknownField(k.Value, fields))
			continue
		}
		seen[k.Value] = k.Line
		f.decode(v)
	}
}

func unknownField(name string, fields []field) string {
	names := make([]string, len(fields))
	best, bestDist := "", 3
	for i, f := range fields {
		names[i] = f.name
		if dist := editDistance(strings.ToLower(name), f.name); dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown field %s; did you mean %q?", quote(name), best)
	}
	return fmt.Sprintf("unknown field %s (known fields: %s)", quote(name), strings.Join(names, ", "))
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "empty"
		}
	}
	return "a value of another type"
}

func (d *decoder) typeError(n *yaml.Node, path, want string) {
	d.addf(n, path, "", "must be %s, not %s", want, describe(n))
}

func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	d.typeError(n, path, "a string")
	return "", false
}

// list decodes a list of strings, calling each for every entry; a null list
// is empty.
func (d *decoder) list(n *yaml.Node, path string, each func(e *yaml.Node, s string)) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list")
		return
	}
	for _, e := range n.Content {
		s, ok := d.str(e, path)
		switch {
		case !ok:
		case s == "":
			d.add(e, path, "", "empty entry")
		default:
			each(e, s)
		}
	}
}

func (d *decoder) subprocess(n *yaml.Node, sp *Subprocess) {
	boolean := func(v *yaml.Node, path string, out *bool) {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(out) != nil {
			d.typeError(v, path, "true or false")
		}
	}
	d.mapping(n, "subprocess", []field{
		{"search_path", func(v *yaml.Node) {
			d.list(v, "subprocess.search_path", func(e *yaml.Node, s string) {
				if !filepath.IsAbs(s) || filepath.Clean(s) != s {
					d.add(e, "subprocess.search_path", s, "must be a clean absolute directory")
					return
				}
				sp.SearchPath = append(sp.SearchPath, s)
			})
		}},
		{"grant_any", func(v *yaml.Node) { boolean(v, "subprocess.grant_any", &sp.GrantAny) }},
		{"grant_programs", func(v *yaml.Node) {
			d.list(v, "subprocess.grant_programs", func(e *yaml.Node, s string) { sp.GrantPrograms = append(sp.GrantPrograms, s) })
		}},
		{"allow_network", func(v *yaml.Node) { boolean(v, "subprocess.allow_network", &sp.AllowNetwork) }},
	})
}

func (d *decoder) network(n *yaml.Node, net *Network) {
	d.mapping(n, "network", []field{
		{"resolve", func(v *yaml.Node) {
			const path = "network.resolve"
			first := map[string]int{}
			d.list(v, path, func(e *yaml.Node, s string) {
				r, err := parseResolve(s)
				if err != nil {
					d.add(e, path, s, err.Error())
					return
				}
				if line, dup := first[r.Key()]; dup {
					d.addf(e, path, s, "%s is already mapped (line %d)", r.Key(), line)
					return
				}
				first[r.Key()] = e.Line
				net.Resolve = append(net.Resolve, r)
			})
		}},
		{"extra_ca", func(v *yaml.Node) {
			if isNull(v) {
				return
			}
			if s, ok := d.str(v, "network.extra_ca"); ok {
				if s == "" || strings.ContainsRune(s, 0) {
					d.add(v, "network.extra_ca", "", "must be the path of a PEM file")
					return
				}
				net.ExtraCA = s
			}
		}},
		{"allow_private", func(v *yaml.Node) {
			const path = "network.allow_private"
			d.list(v, path, func(e *yaml.Node, s string) {
				p, err := parsePrefix(s)
				if err != nil {
					d.add(e, path, s, err.Error())
					return
				}
				net.AllowPrivate = append(net.AllowPrivate, p)
			})
		}},
	})
}

// parseResolve parses "host:port=address[:port]".
func parseResolve(s string) (Resolve, error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok {
		return Resolve{}, errors.New(`must be "host:port=address:port", e.g. "api.stripe.com:443=127.0.0.1:8443"`)
	}
	if strings.Contains(from, "://") {
		return Resolve{}, errors.New(`the name must be "host:port", without a scheme`)
	}
	i := strings.LastIndexByte(from, ':')
	if i < 0 || strings.HasSuffix(from, "]") {
		return Resolve{}, fmt.Errorf("%q needs a port, e.g. %q", from, from+":443")
	}
	rule, err := netgate.ParseRule(from)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return Resolve{}, err
	}
	if rule.Wildcard {
		return Resolve{}, fmt.Errorf("%q: a resolve override names one host, not a wildcard", from)
	}
	r := Resolve{Host: rule.Host, Port: rule.Port}
	if ap, err := netip.ParseAddrPort(to); err == nil {
		r.To = ap
	} else if a, err := netip.ParseAddr(to); err == nil {
		r.To = netip.AddrPortFrom(a, 0)
	} else {
		return Resolve{}, fmt.Errorf("%q is not an IP address with an optional port, e.g. 127.0.0.1:8443 or [::1]:8443", to)
	}
	if r.To.Addr().Zone() != "" {
		return Resolve{}, fmt.Errorf("%q: IPv6 zones are not supported", to)
	}
	return r, nil
}

// parsePrefix parses a CIDR prefix in canonical (masked) form, or a single
// address.
func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, errors.New(`must be an address range such as "127.0.0.0/8" or "fd00::/8", or one address`)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, errors.New(`must be an address range such as "127.0.0.0/8" or "fd00::/8", or one address`)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("has host bits set; write %q", m.String())
	}
	return p, nil
}

func (d *decoder) limits(n *yaml.Node, l *Limits) {
	d.mapping(n, "limits", []field{
		{"max_memory", func(v *yaml.Node) { d.size(v, "limits.max_memory", &l.MaxMemory) }},
		{"max_timeout", func(v *yaml.Node) { d.duration(v, "limits.max_timeout", &l.MaxTimeout) }},
		{"default_memory", func(v *yaml.Node) { d.size(v, "limits.default_memory", &l.DefaultMemory) }},
		{"default_timeout", func(v *yaml.Node) { d.duration(v, "limits.default_timeout", &l.DefaultTimeout) }},
		{"default_concurrency", func(v *yaml.Node) {
			const path = "limits.default_concurrency"
			var c int
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&c) != nil {
				d.typeError(v, path, "an integer")
				return
			}
			if c < 1 || c > manifest.MaxConcurrency {
				d.addf(v, path, "", "%d is out of range (1 to %d)", c, manifest.MaxConcurrency)
				return
			}
			l.DefaultConcurrency = c
			d.explicit[path] = v
		}},
	})
}

// size decodes a memory size with the manifest's syntax and bounds, rounded
// up to whole WebAssembly pages.
func (d *decoder) size(n *yaml.Node, path string, out *uint64) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		d.typeError(n, path, `a size such as "1GiB"`)
		return
	}
	v, err := manifest.ParseSize(n.Value)
	if err != nil {
		d.add(n, path, "", err.Error())
		return
	}
	if v < manifest.MinMemory || v > manifest.MaxMemory {
		d.addf(n, path, "", "%s is out of range (1MiB to 4GiB)", quote(n.Value))
		return
	}
	*out = (v + manifest.PageSize - 1) / manifest.PageSize * manifest.PageSize
	d.explicit[path] = n
}

func (d *decoder) duration(n *yaml.Node, path string, out *time.Duration) {
	s, ok := d.str(n, path)
	if !ok {
		return
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.addf(n, path, "", "%s is not a duration (write it like 30s, 5m or 1h)", quote(s))
		return
	}
	if v <= 0 {
		d.addf(n, path, "", "%s must be more than 0", quote(s))
		return
	}
	*out = v
	d.explicit[path] = n
}

// checkLimits checks that each default fits under its maximum. A default
// the file did not set is lowered to the maximum the file set; a default the
// file set that exceeds the maximum is an error.
func (d *decoder) checkLimits(l *Limits) {
	if l.DefaultMemory > l.MaxMemory {
		if n := d.explicit["limits.default_memory"]; n != nil {
			d.addf(n, "limits.default_memory", "", "%s is more than limits.max_memory (%s)",
				manifest.FormatSize(l.DefaultMemory), manifest.FormatSize(l.MaxMemory))
		} else {
			l.DefaultMemory = l.MaxMemory
		}
	}
	if l.DefaultTimeout > l.MaxTimeout {
		if n := d.explicit["limits.default_timeout"]; n != nil {
			d.addf(n, "limits.default_timeout", "", "%s is more than limits.max_timeout (%s)", l.DefaultTimeout, l.MaxTimeout)
		} else {
			l.DefaultTimeout = l.MaxTimeout
		}
	}
}
