package learn

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

// Requires is a requires block as learn reads and writes it.
type Requires struct {
	Network []string `json:"network"`
	// SubprocessAny is "subprocess: true".
	SubprocessAny bool     `json:"subprocess_any,omitempty"`
	Programs      []string `json:"programs"`
	Env           []string `json:"env"`
	Writes        []string `json:"filesystem_writes"`
	Reads         []string `json:"filesystem_reads"`
	// LLM is requires.llm; nil is false.
	LLM *LLM `json:"llm"`
	// Secrets are the names of requires.secrets: never learned, carried
	// over from module.yaml as written.
	Secrets []string `json:"secrets,omitempty"`
}

// LLM is requires.llm; zero fields are no limit.
type LLM struct {
	MaxTokensPerCall   int   `json:"max_tokens_per_call,omitempty"`
	BudgetTokensPerDay int64 `json:"budget_tokens_per_day,omitempty"`
}

// MaxEntries bounds each list of a proposal.
const MaxEntries = 100

// Prefixes of the gates' refusal reasons that name an access a manifest
// entry would allow (internal/netgate, internal/fsgate, internal/execgate).
const (
	notInAllowlist  = "is not in its allowlist"
	notInWrites     = "is not in its write allowlist"
	notInReads      = "is not in its read allowlist"
	notDeclaredEnv  = "is not declared in its subprocess env"
	subprocessShown = " (" // "git (/usr/bin/git) argc=2"
)

// declared is what m asks for.
func declared(m *manifest.Manifest) Requires {
	r := m.Requires
	d := Requires{Network: nonNil(r.Network.Allow), SubprocessAny: r.Subprocess.Any, Programs: nonNil(r.Subprocess.Allow),
		Env: nonNil(r.Subprocess.Env), Writes: nonNil(r.FilesystemWrites), Reads: nonNil(r.FilesystemReads)}
	if r.LLM.Enabled {
		d.LLM = &LLM{MaxTokensPerCall: r.LLM.MaxTokensPerCall, BudgetTokensPerDay: r.LLM.BudgetTokensPerDay}
	}
	for _, s := range r.Secrets {
		d.Secrets = append(d.Secrets, s.Name)
	}
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// refusedRules are the allowlist entries that would have allowed the
// network requests of decisions the allowlist refused, in order.
func refusedRules(ds []store.AuditRecord) []string {
	var out []string
	for _, d := range ds {
		if d.Capability != sandbox.Network || d.Allowed || !strings.HasPrefix(d.Reason, notInAllowlist) {
			continue
		}
		if r, err := ruleOf(d.Target); err == nil && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// ruleOf is the allowlist entry, in canonical form, of a network gate's
// decision target: "host:port" for https, "http://host:port".
func ruleOf(target string) (string, error) {
	scheme, hp := "https", target
	if rest, ok := strings.CutPrefix(target, "http://"); ok {
		scheme, hp = "http", rest
	}
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", fmt.Errorf("is not a host and port")
	}
	r, err := netgate.ParseRule(scheme + "://" + net.JoinHostPort(h, p))
	if err != nil {
		return "", errors.Unwrap(err)
	}
	return r.String(), nil
}

// observed is what the calls did, each list in the order first seen.
type observed struct {
	network, programs, env, writes, reads []string
	llmCalls, llmMaxTokens                int
	llmUnbounded                          bool // a request asked for no max_tokens
	unnamed                               []Unnamed
	seenUnnamed                           map[string]bool
	refusedWrites                         bool
}

func (o *observed) addUnnamed(c sandbox.Capability, target, why string) {
	k := string(c) + "\x00" + target
	if o.seenUnnamed[k] || len(o.unnamed) >= MaxEntries {
		return
	}
	o.seenUnnamed[k] = true
	o.unnamed = append(o.unnamed, Unnamed{Capability: string(c), Target: target, Why: why})
}

func addOnce(list *[]string, s string) {
	if !slices.Contains(*list, s) {
		*list = append(*list, s)
	}
}

// observe reads the decisions and LLM requests of the calls.
func (l *learner) observe(calls []CallResult) *observed {
	o := &observed{seenUnnamed: map[string]bool{}}
	for _, c := range calls {
		for _, d := range c.Decisions {
			switch d.Capability {
			case sandbox.Network:
				l.observeNetwork(o, d)
			case sandbox.Filesystem:
				l.observeFile(o, d)
			case sandbox.Subprocess:
				l.observeProgram(o, d)
			}
		}
		for _, r := range c.LLMRequests {
			o.llmCalls++
			o.llmMaxTokens = max(o.llmMaxTokens, r.MaxTokens)
			if r.MaxTokens == 0 {
				o.llmUnbounded = true
			}
		}
	}
	// Writes grant reads; a directory above a granted path may be looked
	// at (fsgate): neither needs a read entry.
	o.reads = slices.DeleteFunc(o.reads, func(r string) bool {
		for _, g := range slices.Concat(o.writes, o.reads) {
			if g == r && slices.Contains(o.writes, r) || strings.HasPrefix(g, r+"/") {
				return true
			}
		}
		return false
	})
	return o
}

func (l *learner) observeNetwork(o *observed, d store.AuditRecord) {
	if !d.Allowed && !strings.HasPrefix(d.Reason, notInAllowlist) {
		return // refused for another reason (a malformed URL, a private address): no entry allows it
	}
	r, err := ruleOf(d.Target)
	if err != nil {
		o.addUnnamed(sandbox.Network, d.Target, err.Error())
		return
	}
	addOnce(&o.network, r)
}

func (l *learner) observeFile(o *observed, d store.AuditRecord) {
	write := strings.HasPrefix(d.Reason, notInWrites)
	if !write && !strings.HasPrefix(d.Reason, notInReads) {
		if !d.Allowed && !l.ours(d.Target) {
			o.addUnnamed(sandbox.Filesystem, d.Target, d.Reason)
		}
		return
	}
	for _, p := range strings.Split(d.Target, " -> ") {
		if l.ours(p) {
			continue
		}
		g, why := l.glob(p)
		if why != "" {
			o.addUnnamed(sandbox.Filesystem, p, why)
			continue
		}
		if write {
			o.refusedWrites = true
			addOnce(&o.writes, g)
		} else {
			addOnce(&o.reads, g)
		}
	}
}

// ours reports whether a path is one of the learning run's own.
func (l *learner) ours(p string) bool {
	for _, r := range l.roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// glob is a host path as a manifest names it: "~/..." inside the
// operator's home, absolute elsewhere; or why it cannot be named.
func (l *learner) glob(p string) (string, string) {
	switch {
	case len(p) >= sandbox.MaxTargetLen && strings.HasSuffix(p, "..."):
		return "", fmt.Sprintf("the path is longer than the %d bytes the audit log keeps of it", sandbox.MaxTargetLen)
	case strings.ContainsRune(p, '\\'):
		return "", "the path has control characters or a backslash, which no manifest glob may contain"
	case strings.ContainsAny(p, "*?[]{}"):
		return "", "the path has glob characters (* ? [ ] { }), so no glob names only it"
	case !path.IsAbs(p) || path.Clean(p) != p:
		return "", "is not a clean absolute path"
	}
	if h := l.o.Home; h != "" && h != "/" && strings.HasPrefix(p, h+"/") {
		p = "~/" + strings.TrimPrefix(p, h+"/")
	}
	return p, ""
}

func (l *learner) observeProgram(o *observed, d store.AuditRecord) {
	t := d.Target
	switch {
	case strings.Contains(t, ": env "):
		name, v, _ := strings.Cut(t, ": env ")
		if !strings.HasPrefix(d.Reason, notDeclaredEnv) {
			o.addUnnamed(sandbox.Subprocess, t, d.Reason)
			return
		}
		addOnce(&o.programs, name)
		addOnce(&o.env, v)
		return
	case strings.Contains(t, ": dir "):
		o.addUnnamed(sandbox.Subprocess, t, d.Reason)
		return
	case t == "(no program)" || t == "(no request)":
		return
	}
	name := t
	if i := strings.Index(t, subprocessShown); i > 0 && (d.Allowed || strings.HasSuffix(t, ")")) {
		name = t[:i]
	}
	addOnce(&o.programs, name)
}

// propose fills rep's proposal, diff and notes from its calls.
func propose(l *learner, rep *Report) {
	o := l.observe(rep.Calls)
	dec := declared(l.man)
	rep.Declared = dec
	rep.Truncated = map[string]int{}
	p := Requires{Secrets: dec.Secrets}
	p.Network = l.valid(o, sandbox.Network, ordered(o.network, dec.Network), "network")
	p.Programs = l.valid(o, sandbox.Subprocess, ordered(o.programs, dec.Programs), "programs")
	p.Env = l.valid(o, sandbox.Subprocess, ordered(o.env, dec.Env), "env")
	p.Writes = l.valid(o, sandbox.Filesystem, ordered(o.writes, dec.Writes), "filesystem_writes")
	p.Reads = l.valid(o, sandbox.Filesystem, ordered(o.reads, dec.Reads), "filesystem_reads")
	for k, n := range map[string]*[]string{"network": &p.Network, "programs": &p.Programs, "env": &p.Env,
		"filesystem_writes": &p.Writes, "filesystem_reads": &p.Reads} {
		if len(*n) > MaxEntries {
			rep.Truncated[k] = len(*n) - MaxEntries
			*n = (*n)[:MaxEntries]
		}
	}
	if len(p.Programs) == 0 {
		p.Env = []string{}
	}
	if o.llmCalls > 0 {
		switch {
		case dec.LLM != nil:
			// Limits are the author's policy; learn sees requests, not a
			// day's use.
			lim := *dec.LLM
			if lim.MaxTokensPerCall > 0 && o.llmMaxTokens > lim.MaxTokensPerCall {
				lim.MaxTokensPerCall = o.llmMaxTokens
				if lim.BudgetTokensPerDay > 0 && int64(lim.MaxTokensPerCall) > lim.BudgetTokensPerDay {
					lim.BudgetTokensPerDay = int64(lim.MaxTokensPerCall)
				}
				rep.Notes = append(rep.Notes, fmt.Sprintf("a request asked for %d completion tokens, more than requires.llm.max_tokens_per_call allows: the proposal raises it", o.llmMaxTokens))
			}
			p.LLM = &lim
		case o.llmUnbounded:
			p.LLM = &LLM{}
			rep.Notes = append(rep.Notes, "the module asked the station's LLM without max_tokens: the proposal is llm: true (no limits); consider max_tokens_per_call and budget_tokens_per_day")
		default:
			p.LLM = &LLM{MaxTokensPerCall: o.llmMaxTokens}
			rep.Notes = append(rep.Notes, "requires.llm.budget_tokens_per_day cannot be learned from a few calls: add one")
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d LLM requests were recorded and failed: learn answers none", o.llmCalls))
	}
	rep.Proposal = p
	rep.Unused, rep.Undeclared = diff(dec, p, l.o.Home)
	rep.Unnamed = append(rep.Unnamed, o.unnamed...)
	// requires.secrets binds each secret to hosts within the allowlist:
	// carried over, its hosts stay in the proposal's allowlist (and in
	// Unused when no call reached them).
	for _, s := range l.man.Requires.Secrets {
		for _, h := range s.Hosts {
			r, err := netgate.ParseRule(h)
			if err != nil {
				continue
			}
			if al, _ := netgate.Compile(p.Network); al == nil || !al.Allows(r.Scheme, r.Host, r.Port) {
				p.Network = append(p.Network, h)
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s stays in the allowlist: requires.secrets binds %s to it", h, s.Name))
			}
		}
	}
	rep.Proposal = p
	sec := secretsNode(l.raw)
	rep.ProposalYAML = proposalYAML(p, sec)
	if err := l.check(p, sec); err != nil {
		rep.Notes = append(rep.Notes, "the proposal does not validate as a manifest (report this): "+err.Error())
	}
	if len(dec.Secrets) > 0 {
		rep.Notes = append(rep.Notes, "requires.secrets cannot be learned (the learning run gives the module none): the proposal carries module.yaml's over unchanged")
	}
	if len(o.network) > 0 && rep.Mode == "offline" {
		rep.Notes = append(rep.Notes, "every network request was refused (--offline): a call that goes on after a reply may reach more hosts; --live performs the requests of the hosts you approve")
	}
	if o.refusedWrites {
		rep.Notes = append(rep.Notes, "every write was refused (learn writes nothing): a call that goes on after a write may have stopped there")
	}
	if !rep.Complete {
		rep.Notes = append(rep.Notes, "the calls made more sandbox decisions than the audit log stores one by one (it counts the rest): the proposal may miss some")
	}
	for k, n := range rep.Truncated {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d more entries are not in the proposal (at most %d each)", k, n, MaxEntries))
	}
}

// ordered is learned with the entries the manifest declares first, in its
// order, then the others as they were seen.
func ordered(learned, declared []string) []string {
	out := []string{}
	for _, d := range declared {
		if slices.Contains(learned, d) {
			out = append(out, d)
		}
	}
	for _, s := range learned {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// valid keeps the entries a manifest accepts as they are (checked one by
// one by manifest.Parse, with the operator's home), and lists the others
// as unnamed with the manifest's reason.
func (l *learner) valid(o *observed, c sandbox.Capability, entries []string, field string) []string {
	out := []string{}
	for _, e := range entries {
		r := Requires{}
		switch field {
		case "network":
			r.Network = []string{e}
		case "programs":
			r.Programs = []string{e}
		case "env":
			r.Programs, r.Env = []string{"true"}, []string{e}
		case "filesystem_writes":
			r.Writes = []string{e}
		case "filesystem_reads":
			r.Reads = []string{e}
		}
		if err := l.check(r, nil); err != nil {
			why := err.Error()
			var me *manifest.Error
			if errors.As(err, &me) {
				why = me.Msg
			}
			o.addUnnamed(c, e, "a manifest cannot ask for it: "+why)
			continue
		}
		out = append(out, e)
	}
	return out
}

// check parses the module's manifest with requires r (and sec).
func (l *learner) check(r Requires, sec *yaml.Node) error {
	data, err := withRequires(l.raw, requiresNode(r, sec))
	if err != nil {
		return err
	}
	_, err = manifest.ParseWith(l.man.File, data, manifest.Options{Home: l.o.Home})
	return err
}

// requiresNode is r as the value of requires:.
func requiresNode(r Requires, sec *yaml.Node) *yaml.Node {
	n := mapping("network", mapping("allow", strList(r.Network)))
	var sp *yaml.Node
	switch {
	case r.SubprocessAny:
		sp = boolNode(true)
	case len(r.Programs) > 0:
		sp = mapping("allow", strList(r.Programs))
		if len(r.Env) > 0 {
			sp.Content = append(sp.Content, scalar("env"), strList(r.Env))
		}
	default:
		sp = boolNode(false)
	}
	n.Content = append(n.Content, scalar("subprocess"), sp, scalar("filesystem_writes"), strList(r.Writes))
	if len(r.Reads) > 0 {
		n.Content = append(n.Content, scalar("filesystem_reads"), strList(r.Reads))
	}
	if l := r.LLM; l != nil {
		v := boolNode(true)
		if l.MaxTokensPerCall > 0 || l.BudgetTokensPerDay > 0 {
			v = &yaml.Node{Kind: yaml.MappingNode}
			if l.MaxTokensPerCall > 0 {
				v.Content = append(v.Content, scalar("max_tokens_per_call"), intNode(int64(l.MaxTokensPerCall)))
			}
			if l.BudgetTokensPerDay > 0 {
				v.Content = append(v.Content, scalar("budget_tokens_per_day"), intNode(l.BudgetTokensPerDay))
			}
		}
		n.Content = append(n.Content, scalar("llm"), v)
	}
	if sec != nil {
		n.Content = append(n.Content, scalar("secrets"), sec)
	}
	return n
}

// proposalYAML is the requires block as YAML, ready to paste into
// module.yaml.
func proposalYAML(r Requires, sec *yaml.Node) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.Encode(mapping("requires", requiresNode(r, sec)))
	enc.Close()
	return b.String()
}

// diff is what dec declares that p does not use, and what p uses that
// dec does not declare.
func diff(dec, p Requires, home string) (unused, undeclared Requires) {
	unused = Requires{Network: []string{}, Programs: []string{}, Env: []string{}, Writes: []string{}, Reads: []string{}}
	undeclared = Requires{Network: []string{}, Programs: []string{}, Env: []string{}, Writes: []string{}, Reads: []string{}}
	rules := map[string]netgate.Rule{}
	for _, e := range p.Network {
		if r, err := netgate.ParseRule(e); err == nil {
			rules[e] = r
		}
	}
	all, _ := netgate.Compile(dec.Network)
	for _, e := range p.Network {
		if r := rules[e]; all == nil || !all.Allows(r.Scheme, r.Host, r.Port) {
			undeclared.Network = append(undeclared.Network, e)
		}
	}
	for _, d := range dec.Network {
		one, err := netgate.Compile([]string{d})
		used := false
		for _, r := range rules {
			if err == nil && one.Allows(r.Scheme, r.Host, r.Port) {
				used = true
			}
		}
		if !used {
			unused.Network = append(unused.Network, d)
		}
	}
	if dec.SubprocessAny {
		unused.SubprocessAny = len(p.Programs) == 0
	} else {
		undeclared.Programs = minus(p.Programs, dec.Programs)
	}
	unused.Programs = minus(dec.Programs, p.Programs)
	undeclared.Env = minus(p.Env, dec.Env)
	unused.Env = minus(dec.Env, p.Env)
	expand := func(g string) string {
		if rest, ok := strings.CutPrefix(g, "~/"); ok && home != "" {
			return strings.TrimSuffix(home, "/") + "/" + rest
		}
		return g
	}
	matches := func(globs []string, p string) bool {
		for _, g := range globs {
			if ok, _ := doublestar.Match(expand(g), expand(p)); ok {
				return true
			}
		}
		return false
	}
	for _, w := range p.Writes {
		if !matches(dec.Writes, w) {
			undeclared.Writes = append(undeclared.Writes, w)
		}
	}
	for _, r := range p.Reads {
		if !matches(slices.Concat(dec.Writes, dec.Reads), r) {
			undeclared.Reads = append(undeclared.Reads, r)
		}
	}
	for _, g := range dec.Writes {
		if !anyMatch(g, p.Writes, expand) {
			unused.Writes = append(unused.Writes, g)
		}
	}
	for _, g := range dec.Reads {
		if !anyMatch(g, slices.Concat(p.Reads, p.Writes), expand) {
			unused.Reads = append(unused.Reads, g)
		}
	}
	switch {
	case p.LLM != nil && dec.LLM == nil:
		undeclared.LLM = p.LLM
	case p.LLM != nil && dec.LLM.MaxTokensPerCall > 0 && p.LLM.MaxTokensPerCall > dec.LLM.MaxTokensPerCall:
		undeclared.LLM = p.LLM
	case p.LLM == nil && dec.LLM != nil:
		unused.LLM = dec.LLM
	}
	return unused, undeclared
}

// anyMatch reports whether glob g matches one of paths.
func anyMatch(g string, paths []string, expand func(string) string) bool {
	for _, p := range paths {
		if ok, _ := doublestar.Match(expand(g), expand(p)); ok {
			return true
		}
	}
	return false
}

// minus is a without the elements of b.
func minus(a, b []string) []string {
	out := []string{}
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
