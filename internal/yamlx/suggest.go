package yamlx

import (
	"fmt"
	"strings"
)

// maxListed bounds how many known names a message lists.
const maxListed = 20

// Unknown words that name is not one of the names known, of the kind what
// ("field", "step", "input"), with Suggest's hint:
//
//	unknown field "nmae"; did you mean "name"?
//	unknown field "colour" (known fields: name, on, count)
func Unknown(what, name string, known []string) string {
	return "unknown " + what + " " + Quote(name) + Suggest(name, known, what+"s")
}

// Suggest is the hint for a name that is not one of known: the closest
// known name (see Closest), as `; did you mean "name"?`; or else the known
// names, as ` (known fields: a, b)` for plural "fields" (at most 20 of
// them, then how many more); or "" when nothing is known.
func Suggest(name string, known []string, plural string) string {
	if best := Closest(name, known); best != "" {
		return fmt.Sprintf("; did you mean %s?", Quote(best))
	}
	if len(known) == 0 {
		return ""
	}
	names := make([]string, 0, min(len(known), maxListed))
	for _, k := range known[:min(len(known), maxListed)] {
		names = append(names, Printable(k))
	}
	list := strings.Join(names, ", ")
	if len(known) > maxListed {
		list += fmt.Sprintf(" and %d more", len(known)-maxListed)
	}
	return " (known " + plural + ": " + list + ")"
}

// Closest returns the name in known that name most likely misspells, or ""
// when none is close. Case is ignored; otherwise a name of 3 to 5 bytes may
// be one edit away (a letter added, dropped, changed, or two swapped), a
// longer one two, and a shorter one none: "b" is not a typo of "a", nor
// "any" of "env". Of equally close names the first in known wins.
func Closest(name string, known []string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", min(2, len(lower)/3)+1
	for _, k := range known {
		lk := strings.ToLower(k)
		if len(lk) < len(lower)-bestDist+1 || len(lk) > len(lower)+bestDist-1 {
			continue // more than bestDist-1 bytes to add or drop
		}
		if dist := editDistance(lower, lk); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: the insertions, deletions, substitutions and swaps of two
// neighbours that turn a into b. Names longer than 64 bytes are never
// close to anything.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	// three rows of the table: i-2, i-1 and i
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
