package manifest

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/sdk/abi"
)

// Secret is one secret a module needs (requires.secrets.NAME): an API key
// or token the operator stores with `station secret set` and the station
// sends, on the module's behalf, only to the hosts it is bound to. The
// module itself never holds the value: it writes the secret's placeholder
// (abi.SecretPlaceholder, sdk.Secret in the Go SDK) where the value goes,
// and the network gate substitutes it in requests to Hosts after the
// allowlist decision.
type Secret struct {
	// Name is the secret's name, abi.CheckSecretName's syntax
	// (STRIPE_KEY).
	Name string
	// Description says what the secret is and where to get it; the
	// station shows it when it asks the operator for the value.
	Description string
	// Hosts are the allowlist entries, in canonical form, of the hosts the
	// value may be sent to. Each is within the module's own
	// requires.network.allow.
	Hosts []string
	// Query and Body allow the value in the URL (path and query) and in
	// the request body, besides headers (always allowed). Both are off by
	// default: a value in a URL or a body is more often logged, stored or
	// echoed by the server than one in a header.
	Query, Body bool
}

// MaxSecrets bounds requires.secrets.
const MaxSecrets = 32

// Secret returns the secret named name.
func (r *Requires) Secret(name string) (Secret, bool) {
	for _, s := range r.Secrets {
		if s.Name == name {
			return s, true
		}
	}
	return Secret{}, false
}

// secrets decodes requires.secrets, a mapping from names to bindings:
//
//	secrets:
//	  STRIPE_KEY:
//	    hosts: [api.stripe.com]
//	    description: Your Stripe secret key (sk_live_... or sk_test_...)
//	    in: [headers, body]
//
// The hosts are checked against the network allowlist in requires, once
// both are decoded (checkSecretHosts).
func (d *decoder) secrets(n *yaml.Node) ([]Secret, []*yaml.Node) {
	const path = "requires.secrets"
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode || n.ShortTag() != "!!map" {
		d.typeError(n, path, "a mapping from secret names to their hosts")
		return nil, nil
	}
	if len(n.Content)/2 > MaxSecrets {
		d.addf(n, path, "", "too many secrets (%d; at most %d)", len(n.Content)/2, MaxSecrets)
		return nil, nil
	}
	var out []Secret
	var hostNodes []*yaml.Node
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if d.MergeKey(k, path) {
			continue
		}
		name, ok := d.str(k, path)
		if !ok {
			continue
		}
		sp := path + "." + name
		if msg := abi.CheckSecretName(name); msg != "" {
			d.addf(k, path, "", "%s: %s", quote(name), msg)
			continue
		}
		if line, dup := first[name]; dup {
			d.addf(k, path, "", "duplicate secret %q (first at line %d)", name, line)
			continue
		}
		first[name] = k.Line
		s := Secret{Name: name}
		before := d.Len()
		var hosts *yaml.Node
		seen := d.mapping(v, sp, []field{
			{"description", func(v *yaml.Node) { s.Description = d.text(v, sp+".description") }},
			{"hosts", func(v *yaml.Node) {
				hosts = v
				for _, h := range d.list(v, sp+".hosts", checkSecretHost) {
					r, _ := netgate.ParseRule(h) // checked by checkSecretHost
					if c := r.String(); !slices.Contains(s.Hosts, c) {
						s.Hosts = append(s.Hosts, c)
					}
				}
			}},
			{"in", func(v *yaml.Node) {
				for _, place := range d.list(v, sp+".in", checkSecretPlace) {
					switch place {
					case "query":
						s.Query = true
					case "body":
						s.Body = true
					}
				}
			}},
		})
		if seen == nil {
			continue
		}
		if hosts == nil {
			d.add(v, sp, "", `missing required field "hosts": the hosts the secret may be sent to, from requires.network.allow`)
			continue
		}
		if len(s.Hosts) == 0 {
			if d.Len() == before {
				d.add(hosts, sp+".hosts", "", "at least one host is required: a secret no host may receive is of no use")
			}
			continue
		}
		out = append(out, s)
		hostNodes = append(hostNodes, hosts)
	}
	return out, hostNodes
}

// checkSecretHost checks the syntax of one secret host: an allowlist entry.
func checkSecretHost(s string) string {
	if _, err := netgate.ParseRule(s); err != nil {
		return err.Error()
	}
	return ""
}

// checkSecretPlace checks one entry of a secret's "in".
func checkSecretPlace(s string) string {
	switch s {
	case "headers", "query", "body":
		return ""
	}
	return `is not "headers", "query" or "body"`
}

// checkSecretHosts reports every secret host that the network allowlist
// does not cover: the value of a secret may only go where the module may
// send a request. A wildcard entry is covered only by the same wildcard.
func (d *decoder) checkSecretHosts(r *Requires, hostNodes []*yaml.Node) {
	allow, err := netgate.Compile(r.Network.Allow)
	if err != nil {
		return // reported under requires.network.allow
	}
	for i, s := range r.Secrets {
		for _, h := range s.Hosts {
			rule, _ := netgate.ParseRule(h)
			covered := false
			if rule.Wildcard {
				covered = slices.Contains(allow.Entries(), rule.String())
			} else {
				covered = allow.Allows(rule.Scheme, rule.Host, rule.Port)
			}
			if !covered {
				d.add(hostNodes[i], "requires.secrets."+s.Name+".hosts", h,
					fmt.Sprintf("is not in requires.network.allow (%s): a secret can only be sent where the module may send requests; add it there too", allow))
			}
		}
	}
}
