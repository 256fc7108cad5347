package station

import (
	"fmt"
	"slices"
	"strings"

	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/netgate"
)

// Escalations lists, in plain words, what next asks for that approved does
// not already grant: a host not covered by an approved entry, programs
// where there were none (or other programs, or the same names at another
// path or digest), new environment variables, a write or read glob not
// inside an approved one, the LLM, or a larger LLM allowance. Nothing means
// next is within what was approved, and an upgrade to it needs no new
// approval. When in doubt it reports an escalation: a false alarm costs the
// operator a question, a missed one costs a permission nobody approved.
func Escalations(approved, next Permissions) []string {
	var out []string
	for _, e := range next.Network {
		if !networkCovered(approved.Network, e) {
			out = append(out, "may now connect to "+e)
		}
	}
	out = append(out, subprocessEscalations(approved, next)...)
	for _, v := range next.Env {
		if !slices.Contains(approved.Env, v) {
			out = append(out, "may now pass the environment variable "+v+" to programs")
		}
	}
	for _, g := range next.FilesystemWrites {
		if !globCovered(approved.FilesystemWrites, g) {
			out = append(out, "may now create, change and delete "+g)
		}
	}
	for _, g := range next.FilesystemReads {
		if !globCovered(approved.FilesystemReads, g) && !globCovered(approved.FilesystemWrites, g) {
			out = append(out, "may now read "+g)
		}
	}
	out = append(out, llmEscalations(approved.LLM, next.LLM)...)
	out = append(out, secretEscalations(approved.Secrets, next.Secrets)...)
	return out
}

// secretEscalations compares secret bindings: a new secret, a host a
// secret was not sent to, or a new place in a request (the URL, the body).
func secretEscalations(approved, next []SecretPermission) []string {
	var out []string
	for _, n := range next {
		i := slices.IndexFunc(approved, func(a SecretPermission) bool { return a.Name == n.Name })
		if i < 0 {
			out = append(out, fmt.Sprintf("may now have secret %s sent to %s", n.Name, strings.Join(n.Hosts, ", ")))
			continue
		}
		a := approved[i]
		for _, h := range n.Hosts {
			if !networkCovered(a.Hosts, h) {
				out = append(out, fmt.Sprintf("may now have secret %s sent to %s", n.Name, h))
			}
		}
		for _, in := range n.In {
			if in == "headers" || slices.Contains(a.In, in) {
				continue
			}
			place := "body"
			if in == "query" {
				place = "URL"
			}
			out = append(out, fmt.Sprintf("may now put secret %s in a request's %s", n.Name, place))
		}
	}
	return out
}

// networkCovered reports whether entry e is granted by one of the approved
// entries: the same rule, or a wildcard over e's host with e's scheme and
// port.
func networkCovered(approved []string, e string) bool {
	r, err := netgate.ParseRule(e)
	if err != nil {
		return slices.Contains(approved, e)
	}
	for _, a := range approved {
		ar, err := netgate.ParseRule(a)
		if err != nil || ar.Scheme != r.Scheme || ar.Port != r.Port {
			continue
		}
		switch {
		case ar.Wildcard == r.Wildcard && ar.Host == r.Host:
			return true
		case ar.Wildcard && strings.HasSuffix(r.Host, "."+ar.Host):
			// *.example.com covers api.example.com and *.api.example.com.
			return true
		}
	}
	return false
}

// globCovered reports whether glob g matches only paths an approved glob
// matches: the same glob, or one under an approved "DIR/**".
func globCovered(approved []string, g string) bool {
	for _, a := range approved {
		if a == g {
			return true
		}
		if dir, ok := strings.CutSuffix(a, "/**"); ok && !strings.ContainsAny(dir, "*?[{") {
			if strings.HasPrefix(g, dir+"/") && !strings.Contains(g[len(dir)+1:], "..") {
				return true
			}
		}
	}
	return false
}

// subprocessEscalations compares the subprocess grants.
func subprocessEscalations(approved, next Permissions) []string {
	anyOf := func(p Permissions) bool { b, ok := p.Subprocess.(bool); return ok && b }
	names := func(p Permissions) []string {
		switch s := p.Subprocess.(type) {
		case map[string][]string:
			return s["allow"]
		case map[string]any:
			var out []string
			if l, ok := s["allow"].([]any); ok {
				for _, v := range l {
					out = append(out, fmt.Sprint(v))
				}
			}
			return out
		}
		return nil
	}
	known := func(p Permissions) bool {
		switch p.Subprocess.(type) {
		case nil, bool, map[string][]string, map[string]any:
			return true
		}
		return false
	}
	if !known(next) {
		// A form this code does not read: fail closed.
		return []string{fmt.Sprintf("MAY NOW START PROGRAMS (%v)", next.Subprocess)}
	}
	if anyOf(next) {
		if anyOf(approved) {
			return nil
		}
		return []string{"MAY NOW START ANY PROGRAM on the station's search path"}
	}
	if anyOf(approved) {
		return nil
	}
	var out []string
	have := names(approved)
	for _, n := range names(next) {
		if !slices.Contains(have, n) {
			out = append(out, "MAY NOW START "+n)
		}
	}
	for _, p := range next.Programs {
		i := slices.IndexFunc(approved.Programs, func(q execgate.Program) bool { return q.Name == p.Name })
		if i >= 0 && (approved.Programs[i].Path != p.Path || approved.Programs[i].Digest != p.Digest) {
			out = append(out, fmt.Sprintf("MAY NOW START %s as %s (%s), not the approved %s (%s)", p.Name, p.Path, shortHash(p.Digest), approved.Programs[i].Path, shortHash(approved.Programs[i].Digest)))
		}
	}
	return out
}

// llmEscalations compares LLM allowances; a zero limit is no limit.
func llmEscalations(approved, next *LLMPermission) []string {
	if next == nil {
		return nil
	}
	if approved == nil {
		return []string{"may now ask the station's LLM for completions"}
	}
	var out []string
	if wider(approved.MaxTokensPerCall, next.MaxTokensPerCall) {
		out = append(out, fmt.Sprintf("may now ask for %s tokens per call (approved: %s)", limitText(int64(next.MaxTokensPerCall)), limitText(int64(approved.MaxTokensPerCall))))
	}
	if wider(approved.BudgetTokensPerDay, next.BudgetTokensPerDay) {
		out = append(out, fmt.Sprintf("may now spend %s tokens a day (approved: %s)", limitText(next.BudgetTokensPerDay), limitText(approved.BudgetTokensPerDay)))
	}
	return out
}

// wider reports whether limit next allows more than approved (0 is no
// limit).
func wider[T int | int64](approved, next T) bool {
	switch {
	case approved == 0:
		return false
	case next == 0:
		return true
	}
	return next > approved
}

func limitText(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
