package config

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/yamlx"
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
func (e *Error) Error() string { return (*yamlx.Problem)(e).Error() }

// quote renders s Go-quoted and bounded, for error messages.
func quote(s string) string { return yamlx.Quote(s) }

// decoder walks config.yaml's node tree with the machinery and the wording
// of the manifest decoder (yamlx): positions on every error, unknown and
// duplicate keys, anchors and aliases refused, all problems reported.
type decoder struct {
	*yamlx.Decoder
	file string
	errs []*Error // the problems found, once decode returns

	// explicit records which limits the file set, to tell a conflict the
	// operator wrote from a default that no longer fits.
	explicit map[string]*yaml.Node
}

func (d *decoder) add(n *yaml.Node, field, entry, msg string) {
	d.AddEntry(n, field, entry, msg)
}

func (d *decoder) addf(n *yaml.Node, field, entry, format string, args ...any) {
	d.AddEntry(n, field, entry, fmt.Sprintf(format, args...))
}

// decode parses data into a Config and sets d.errs. An empty file is the
// defaults.
func (d *decoder) decode(data []byte) *Config {
	d.Decoder = yamlx.New(d.file, "config.yaml")
	c := d.config(data)
	d.errs = yamlx.Errors[Error](d.Decoder)
	return c
}

// config walks the document over the defaults.
func (d *decoder) config(data []byte) *Config {
	c := Default()
	doc, _ := d.Document(data)
	root := yamlx.Root(doc)
	if root == nil || isNull(root) || !d.NoAliases(root) {
		return c
	}
	d.explicit = map[string]*yaml.Node{}
	d.mapping(root, "", []field{
		{"network", func(v *yaml.Node) { d.network(v, &c.Network) }},
		{"limits", func(v *yaml.Node) { d.limits(v, &c.Limits) }},
		{"subprocess", func(v *yaml.Node) { d.subprocess(v, &c.Subprocess) }},
		{"llm", func(v *yaml.Node) { d.llm(v, &c.LLM) }},
		{"install", func(v *yaml.Node) { d.install(v, &c.Install) }},
		{"advisories", func(v *yaml.Node) { d.advisories(v, &c.Advisories) }},
		{"mcp", func(v *yaml.Node) {
			d.mapping(v, "mcp", []field{
				{"expose", func(v *yaml.Node) {
					c.MCP.Expose = []string{}
					d.list(v, "mcp.expose", func(e *yaml.Node, s string) {
						if msg := manifest.CheckID(s); msg != "" {
							d.add(e, "mcp.expose", s, "not a module id: "+msg)
							return
						}
						c.MCP.Expose = append(c.MCP.Expose, s)
					})
				}},
			})
		}},
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
				{"entries", func(v *yaml.Node) { d.count(v, "filesystem.entries", 1, 10_000_000, &c.Filesystem.Entries) }},
				{"open_files", func(v *yaml.Node) { d.count(v, "filesystem.open_files", 1, 65536, &c.Filesystem.OpenFiles) }},
				{"open_files_per_instance", func(v *yaml.Node) {
					d.count(v, "filesystem.open_files_per_instance", 1, 65536, &c.Filesystem.OpenFilesPerInstance)
				}},
			})
		}},
	})
	d.checkLimits(&c.Limits)
	d.Sort()
	return c
}

// field is one known key of a mapping and the function that decodes its
// value (yamlx.Field, under a name whose literals may be unkeyed).
type field yamlx.Field

// mapping decodes a mapping with known keys (yamlx.Decoder.Mapping); a null
// value is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	if !isNull(n) {
		d.Mapping(n, path, yamlx.Fields(fields))
	}
}

// isNull, typeError and str are yamlx's, under the names this package's
// decoding (llm.go too) uses.
var isNull = yamlx.IsNull

func (d *decoder) typeError(n *yaml.Node, path, want string) { d.TypeError(n, path, want) }

func (d *decoder) str(n *yaml.Node, path string) (string, bool) { return d.Str(n, path) }

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
		if b, ok := d.Bool(v, path); ok {
			*out = b
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
		{"allow_unconfined_files", func(v *yaml.Node) { boolean(v, "subprocess.allow_unconfined_files", &sp.AllowUnconfinedFiles) }},
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
					d.addf(e, path, s, "%s is already mapped (first at line %d)", r.Key(), line)
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
		{"grant", func(v *yaml.Node) {
			const path = "network.grant"
			d.list(v, path, func(e *yaml.Node, s string) {
				if _, err := netgate.ParseRule(s); err != nil {
					if inner := errors.Unwrap(err); inner != nil {
						err = inner
					}
					d.add(e, path, s, err.Error())
					return
				}
				net.Grant = append(net.Grant, s)
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
			if c, ok := d.Int(v, path, 1, manifest.MaxConcurrency); ok {
				l.DefaultConcurrency = c
				d.explicit[path] = v
			}
		}},
	})
}

// count decodes a whole number in [lo, hi].
func (d *decoder) count(n *yaml.Node, path string, lo, hi int, out *int) {
	if v, ok := d.Int(n, path, lo, hi); ok {
		*out = v
		d.explicit[path] = n
	}
}

// size decodes a memory size with the manifest's syntax and bounds, rounded
// up to whole WebAssembly pages.
func (d *decoder) size(n *yaml.Node, path string, out *uint64) {
	if v, ok := d.Size(n, path, "1GiB", manifest.MinMemory, manifest.MaxMemory); ok {
		*out = (v + manifest.PageSize - 1) / manifest.PageSize * manifest.PageSize
		d.explicit[path] = n
	}
}

// duration decodes a duration of more than 0.
func (d *decoder) duration(n *yaml.Node, path string, out *time.Duration) {
	if v, ok := d.Duration(n, path, 0); ok {
		*out = v
		d.explicit[path] = n
	}
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
			d.addf(n, "limits.default_timeout", "", "%s is more than limits.max_timeout (%s)",
				yamlx.FormatDuration(l.DefaultTimeout), yamlx.FormatDuration(l.MaxTimeout))
		} else {
			l.DefaultTimeout = l.MaxTimeout
		}
	}
}
