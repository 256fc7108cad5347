package fsgate

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// globMeta are the bytes that start a glob construct in doublestar syntax.
// A backslash (an escape) is refused outright, as the manifest refuses it.
const globMeta = "*?[{"

// Limits on a glob, checked by New.
const (
	maxGlobLen  = 4096
	maxBraceAlt = 256 // brace alternatives one glob may expand to
)

// grant is one validated glob of a module's policy.
type grant struct {
	glob string     // as declared, e.g. "/home/u/out/**"
	root string     // its literal leading directory, e.g. "/home/u/out"
	alts [][]string // brace-expanded alternatives, split into path segments
}

// policy is a module's compiled filesystem grants. It is immutable and its
// methods are pure: they look only at the path string they are given, which
// must be an absolute, clean host path (see clean). Every filesystem
// operation of the gate decides through these methods.
type policy struct {
	writes []grant
	reads  []grant // the declared read globs; readable means writes or reads

	writeList string // "/a/**, /b/*.csv", for denial reasons
	readList  string // writes then reads
}

// compilePolicy validates writes and reads. Errors name the glob.
func compilePolicy(writes, reads []string) (*policy, error) {
	p := &policy{}
	for _, g := range writes {
		gr, err := compileGrant(g)
		if err != nil {
			return nil, fmt.Errorf("write glob %q: %w", g, err)
		}
		p.writes = append(p.writes, gr)
	}
	for _, g := range reads {
		gr, err := compileGrant(g)
		if err != nil {
			return nil, fmt.Errorf("read glob %q: %w", g, err)
		}
		p.reads = append(p.reads, gr)
	}
	p.writeList = globList(p.writes, nil)
	p.readList = globList(p.writes, p.reads)
	return p, nil
}

// globList renders globs for a denial reason, bounded so that a long policy
// does not make a long audit line.
func globList(a, b []grant) string {
	var names []string
	seen := map[string]bool{}
	for _, g := range append(append([]grant(nil), a...), b...) {
		if !seen[g.glob] {
			seen[g.glob] = true
			names = append(names, g.glob)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	s := ""
	for i, n := range names {
		if i > 0 && len(s)+len(n) > 200 {
			return s + fmt.Sprintf(", and %d more", len(names)-i)
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// Root returns the directory every match of the absolute glob g lives under,
// which is what the gate mounts for it: the leading segments without
// wildcards, or, for a literal path, its directory. The subprocess gate's
// exclusions use the same function, so both agree on what a module can write.
func Root(g string) string {
	segs := strings.Split(strings.TrimPrefix(g, "/"), "/")
	lit := 0
	for lit < len(segs) && !strings.ContainsAny(segs[lit], globMeta) {
		lit++
	}
	if lit == len(segs) {
		return path.Dir(g) // a literal path: its directory is mounted
	}
	return "/" + strings.Join(segs[:lit], "/")
}

// compileGrant validates one glob and computes its literal root.
func compileGrant(g string) (grant, error) {
	switch {
	case g == "":
		return grant{}, errors.New("is empty")
	case len(g) > maxGlobLen:
		return grant{}, fmt.Errorf("is longer than %d bytes", maxGlobLen)
	case hasControl(g):
		return grant{}, errors.New("contains a control character")
	case strings.ContainsRune(g, '\\'):
		return grant{}, errors.New("must not contain a backslash (escapes are not supported)")
	case !strings.HasPrefix(g, "/"):
		return grant{}, errors.New(`must be an absolute path ("~/" must be expanded by the caller)`)
	case !doublestar.ValidatePattern(g):
		return grant{}, errors.New("is not a valid glob (check brackets and braces)")
	case path.Clean(g) != g:
		return grant{}, fmt.Errorf("must be a clean path (no \".\", \"..\", \"//\" or trailing \"/\"), such as %q", path.Clean(g))
	case slashInClass(g):
		return grant{}, errors.New(`must not have "/" inside a character class`)
	}
	alts, err := expandBraces(g)
	if err != nil {
		return grant{}, err
	}
	gr := grant{glob: g}
	for _, a := range alts {
		if a == "" || a[0] != '/' {
			return grant{}, fmt.Errorf("expands to %q, which is not an absolute path", a)
		}
		segs := strings.Split(a[1:], "/")
		for _, s := range segs {
			if s == "" || s == "." || s == ".." {
				return grant{}, fmt.Errorf("expands to %q, which is not a clean path", a)
			}
		}
		gr.alts = append(gr.alts, segs)
	}
	gr.root = Root(g)
	if gr.root == "/" {
		return grant{}, errors.New(`would mount the whole filesystem; name a directory before the first wildcard, e.g. "/srv/reports/**"`)
	}
	return gr, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// classEnd returns the index of the ']' that closes the character class
// opened at s[i] == '[', following doublestar's own validation, or -1.
func classEnd(s string, i int) int {
	i++
	if i < len(s) && (s[i] == '^' || s[i] == '!') {
		i++
	}
	if i >= len(s) || s[i] == ']' {
		return -1
	}
	for ; i < len(s); i++ {
		if s[i] == ']' {
			return i
		}
	}
	return -1
}

// slashInClass reports whether a character class in g contains '/'.
// doublestar lets "[/]" match a slash, which would make a glob's segments
// disagree with the path's.
func slashInClass(g string) bool {
	for i := 0; i < len(g); i++ {
		if g[i] == '[' {
			end := classEnd(g, i)
			if end < 0 {
				return false // ValidatePattern refuses it
			}
			if strings.ContainsRune(g[i:end], '/') {
				return true
			}
			i = end
		}
	}
	return false
}

// expandBraces returns the brace-free alternatives of a valid glob, at most
// maxBraceAlt of them.
func expandBraces(g string) ([]string, error) {
	var out []string
	var expand func(s string) error
	expand = func(s string) error {
		open, close, commas := -1, -1, []int(nil)
		depth := 0
	scan:
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '[':
				if end := classEnd(s, i); end > 0 {
					i = end
				}
			case '{':
				if depth == 0 {
					open = i
				}
				depth++
			case ',':
				if depth == 1 {
					commas = append(commas, i)
				}
			case '}':
				depth--
				if depth == 0 {
					close = i
					break scan
				}
			}
		}
		if open < 0 || close < 0 {
			if len(out) == maxBraceAlt {
				return fmt.Errorf("expands to more than %d alternatives", maxBraceAlt)
			}
			out = append(out, s)
			return nil
		}
		prefix, suffix := s[:open], s[close+1:]
		start := open + 1
		for _, end := range append(commas, close) {
			if err := expand(prefix + s[start:end] + suffix); err != nil {
				return err
			}
			start = end + 1
		}
		return nil
	}
	err := expand(g)
	return out, err
}

// notIn is the reason for denying an operation of kind k on a path that no
// glob grants it to: the write allowlist for a change, the read allowlist
// (writes and reads) for anything else.
func (p *policy) notIn(k kind) string {
	if k == kindWrite {
		return "is not in its write allowlist (" + p.writeList + ")"
	}
	return "is not in its read allowlist (" + p.readList + ")"
}

// writable reports whether the module may change the host path abs, and
// the glob that grants it.
func (p *policy) writable(abs string) (string, bool) {
	if !isClean(abs) {
		return "", false
	}
	return match(p.writes, abs)
}

// readable reports whether the module may read the host path abs (its
// write globs grant reads too), and the glob that grants it.
func (p *policy) readable(abs string) (string, bool) {
	if !isClean(abs) {
		return "", false
	}
	if g, ok := match(p.writes, abs); ok {
		return g, true
	}
	return match(p.reads, abs)
}

// visible reports whether the module may see the host path abs at all:
// stat it and, if it is a directory, list it (filtered) and walk through
// it. That is everything readable plus every directory above something
// readable.
func (p *policy) visible(abs string) bool {
	if !isClean(abs) {
		return false
	}
	if _, ok := p.readable(abs); ok {
		return true
	}
	segs := segments(abs)
	for _, gs := range [][]grant{p.writes, p.reads} {
		for _, g := range gs {
			for _, alt := range g.alts {
				if canContain(alt, segs) {
					return true
				}
			}
		}
	}
	return false
}

// subtreeWritable reports whether everything below the directory p is
// writable: some write glob "X/**" has an X that matches p or one of its
// ancestors. A directory may only be renamed between such places, so a
// rename never moves entries to (or takes them from) a path the module may
// not write.
func (p *policy) subtreeWritable(abs string) bool {
	if !isClean(abs) {
		return false
	}
	segs := segments(abs)
	for _, g := range p.writes {
		for _, alt := range g.alts {
			if len(alt) == 0 || alt[len(alt)-1] != "**" {
				continue
			}
			base := alt[:len(alt)-1]
			for n := len(segs); n >= 0; n-- {
				if matchSegs(base, segs[:n]) {
					return true
				}
			}
		}
	}
	return false
}

func match(gs []grant, abs string) (string, bool) {
	for _, g := range gs {
		if doublestar.MatchUnvalidated(g.glob, abs) {
			return g.glob, true
		}
	}
	return "", false
}

// isClean reports whether p is an absolute path as path.Clean leaves it,
// without a NUL byte. Glob matching is lexical, so the policy refuses to
// judge anything else ("/out/../etc" matches "/out/**").
func isClean(p string) bool {
	if p == "" || p[0] != '/' || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	clean, _ := scanRel(p[1:])
	return clean
}

// scanRel reports whether rel is "" or a relative path as path.Clean
// leaves it, without a leading or trailing slash, and the length of its
// longest name (cleaning never makes a name longer).
func scanRel(rel string) (clean bool, longest int) {
	clean = true
	for start := 0; start <= len(rel); {
		end := strings.IndexByte(rel[start:], '/')
		if end < 0 {
			end = len(rel)
		} else {
			end += start
		}
		switch name := rel[start:end]; {
		case rel == "":
		case name == "", name == ".", name == "..":
			clean = false
		}
		longest = max(longest, end-start)
		start = end + 1
	}
	return clean, longest
}

// segments splits a clean absolute path: "/" has none.
func segments(abs string) []string {
	if abs == "/" {
		return nil
	}
	return strings.Split(abs[1:], "/")
}

// matchSegs reports whether the brace-free glob segments g match the path
// segments p exactly.
func matchSegs(g, p []string) bool {
	if len(g) == 0 {
		return len(p) == 0
	}
	if len(p) == 0 {
		// only "**" segments can match nothing
		for _, s := range g {
			if s != "**" {
				return false
			}
		}
		return true
	}
	return doublestar.MatchUnvalidated(strings.Join(g, "/"), strings.Join(p, "/"))
}

// canContain reports whether some path strictly below the path segments p
// could match the brace-free glob segments g.
func canContain(g, p []string) bool {
	for i, s := range p {
		if i >= len(g) {
			return false
		}
		if g[i] == "**" {
			return true
		}
		if !doublestar.MatchUnvalidated(g[i], s) {
			return false
		}
	}
	return len(p) < len(g)
}

// within reports whether the clean absolute path p is root or below it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/") || root == "/"
}
