package manifest

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/station-dev/station/internal/yamlx"
)

// Each check below returns "" for a valid value, or what is wrong with it
// (lower case, no trailing period).

// CheckID returns "" if s is a valid module id, "owner/slug", or what is
// wrong with it (docs/manifest.md).
func CheckID(s string) string {
	owner, slug, ok := strings.Cut(s, "/")
	if !ok {
		return `must be "owner/slug", e.g. "dave/stripe-invoicing"`
	}
	if msg := CheckName(owner, 39); msg != "" {
		return "owner " + msg
	}
	if msg := CheckName(slug, 64); msg != "" {
		return "slug " + msg
	}
	return ""
}

// CheckName returns "" if s is a valid name of at most maxLen bytes — an
// owner (39), a slug (64), an account or a team — or what is wrong with it:
// lower-case letters, digits and single hyphens, not at either end.
func CheckName(s string, maxLen int) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > maxLen:
		return fmt.Sprintf("is longer than %d characters", maxLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "may contain only lower-case letters, digits and hyphens"
		}
	}
	if s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return "may not start or end with a hyphen or contain two in a row"
	}
	return ""
}

// semver is the regular expression of semver.org, 2.0.0.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// CheckVersion returns "" if s is a semantic version (semver.org 2.0.0) as a
// manifest may declare it, or what is wrong with it.
func CheckVersion(s string) string {
	if len(s) > 128 {
		return "is longer than 128 characters"
	}
	if semver.MatchString(s) {
		return ""
	}
	if strings.HasPrefix(s, "v") && semver.MatchString(s[1:]) {
		return fmt.Sprintf("must not start with \"v\"; write %q", s[1:])
	}
	return `is not a semantic version (MAJOR.MINOR.PATCH, e.g. "1.4.0" or "2.0.0-rc.1")`
}

// checkWasmPath validates the path of the module's binary: relative,
// slash-separated, clean and inside the module directory.
func checkWasmPath(s string) string {
	switch {
	case s == "":
		return "is empty"
	case strings.HasPrefix(s, "/"):
		return "must be relative to the module directory, not absolute"
	case strings.ContainsRune(s, '\\'):
		return `must use "/" as the separator`
	case hasDotDot(s):
		return `must stay inside the module directory (no ".." segments)`
	case !fs.ValidPath(s) || s == ".":
		return fmt.Sprintf("must be a clean relative path (%q)", path.Clean(s))
	case hasControl(s):
		return "contains a control character"
	}
	return ""
}

// maxText bounds a description.
const maxText = 1024

// checkText validates a description. Descriptions are shown to the operator
// when they approve a module, so anything that could rewrite what a terminal
// shows (escape sequences, bidirectional overrides) is refused.
func checkText(s string) string {
	if len(s) > maxText {
		return fmt.Sprintf("is longer than %d bytes", maxText)
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if unsafeRune(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	return ""
}

// unsafeRune reports control and formatting characters: C0, DEL, C1, line
// separators and bidirectional controls.
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
		r == 0x2028 || r == 0x2029 || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == utf8.RuneError
}

func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unsafeRune(r) {
			return true
		}
	}
	return false
}

var commandName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkCommandName validates a command name.
func checkCommandName(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > 64:
		return "is longer than 64 characters"
	case !commandName.MatchString(s):
		return "must start with a lower-case letter and contain only lower-case letters, digits and hyphens"
	}
	return ""
}

// checkProgram validates a subprocess allow entry: a bare program name
// (resolved at install from the station's fixed PATH) or a clean absolute
// path.
func checkProgram(s string) string {
	switch {
	case s == "":
		return "is empty"
	case hasControl(s) || strings.ContainsFunc(s, unicode.IsSpace):
		return "contains a space or control character"
	case len(s) > 1024:
		return "is longer than 1024 bytes"
	case strings.HasPrefix(s, "-"):
		return `must not start with "-"`
	case strings.HasPrefix(s, "/"):
		if hasDotDot(s) || path.Clean(s) != s || s == "/" {
			return fmt.Sprintf("must be a clean absolute path (%q)", path.Clean(s))
		}
		return ""
	case strings.ContainsRune(s, '/'):
		return `must be a program name such as "git" or an absolute path, not a relative path`
	case s == "." || s == "..":
		return "is not a program name"
	}
	return ""
}

// globMeta are the characters that make a glob segment match more than one
// name.
const globMeta = "*?[{"

// systemRoots are trees a manifest may never request writes to: writes there
// change the operating system, not the user's files. An operator grant for
// them is out of scope for this release.
var systemRoots = []string{
	"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/nix", "/opt",
	"/proc", "/root", "/run", "/sbin", "/snap", "/sys", "/usr", "/var",
	"/Applications", "/Library", "/System", "/Volumes", "/cores", "/private",
}

// homeRoots are where other users' home directories live; a grant there
// must name a directory inside one (/home/dave/reports/**), not a whole home.
var homeRoots = []string{"/home", "/Users"}

// homeCode are the directories of the home directory without a leading dot
// where shells, language runtimes and desktops find code to run or settings
// to obey, keyed by their lower-case name (they are compared without regard
// to case, as macOS does), with what they hold.
var homeCode = map[string]string{
	"bin":          "programs your shell finds on its PATH",
	"go":           "Go's installed programs and module cache (GOPATH)",
	"node_modules": "packages Node.js loads for any script under your home",
	"perl5":        "Perl modules (local::lib)",
	"library":      "macOS launch agents, preferences, application data and Python packages",
	"applications": "macOS applications of your own",
	"appdata":      "Windows application data and start-up programs",
	"snap":         "snap applications' own home directories, dotfiles included",
}

// needsGrant ends the error for a glob that only an operator grant allows.
const needsGrant = "; it needs an operator grant: the exact glob in filesystem.grant of the station config"

// checkGlobSyntax checks what every filesystem glob must satisfy, granted
// by the operator or not.
func checkGlobSyntax(s string) string {
	switch {
	case len(s) > 4096:
		return "is longer than 4096 bytes"
	case hasControl(s):
		return "contains a control character"
	case strings.ContainsRune(s, '\\'):
		return "must not contain a backslash (escapes are not supported)"
	case !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/"):
		return `must be an absolute path or start with "~/"`
	case !doublestar.ValidatePattern(s):
		return "is not a valid glob (check brackets and braces)"
	case hasDotDot(s):
		return `must not contain ".." segments`
	case s == "/" || s == "/**" || s == "~/" || s == "~/**":
		return "covers the whole filesystem or home directory, which no grant allows"
	}
	return ""
}

// checkWriteGlob validates a filesystem glob a manifest asks for on its own
// (writes and reads alike), for an operator whose home directory is not
// known.
func checkWriteGlob(s string) string { return checkGlobAt(s, "") }

// checkGlobAt is checkWriteGlob for an operator whose home directory is
// home ("" when not known).
func checkGlobAt(s, home string) string {
	if msg := checkGlobSyntax(s); msg != "" && !strings.HasPrefix(msg, "covers the whole") {
		return msg
	}
	msg, _ := globBreadth(s, home)
	return msg
}

// GrantReason returns why a manifest may ask for the filesystem glob s only
// with the operator's grant (filesystem.grant) — the reason an approval
// shows next to a granted glob — or "" if a manifest may ask for s on its
// own. home is the operator's home directory (an absolute glob inside it is
// judged as its "~/" form), or "".
func GrantReason(s, home string) string {
	if checkGlobSyntax(s) != "" {
		return ""
	}
	_, reason := globBreadth(s, home)
	return reason
}

// checkResolved judges the glob s again as the path it leads to on this
// machine: its leading directory (the part before the first glob
// character) with symbolic links followed, against the home directory as
// written and as resolved. s passed checkGlobAt.
func checkResolved(s, home string, resolve func(string) string) string {
	lead := s
	if i := strings.IndexAny(s, "*?[{"); i >= 0 {
		lead = s[:strings.LastIndexByte(s[:i], '/')+1]
	}
	dir := strings.TrimSuffix(lead, "/")
	if rest, ok := strings.CutPrefix(dir, "~"); ok && home != "" {
		dir = home + rest
	}
	homes := []string{home}
	if home != "" {
		if h := resolve(home); h != "" && h != home {
			homes = append(homes, h)
		}
	}
	real := ""
	if dir != "" {
		real = resolve(dir)
	}
	for _, h := range homes {
		judged, via := s, ""
		if real != "" && real != dir {
			judged, via = real+"/"+strings.TrimPrefix(s[len(lead):], "/"), real
			judged = strings.TrimSuffix(judged, "/")
		}
		if via == "" && h == home {
			continue // judged as written already
		}
		if msg := checkGlobAt(judged, h); msg != "" {
			if via != "" {
				return fmt.Sprintf("leads through a symbolic link to %s: %s", via, msg)
			}
			return fmt.Sprintf("is inside your home directory %s, which is %s: %s", home, h, msg)
		}
	}
	return ""
}

// globBreadth returns, for a glob that passed checkGlobSyntax, what is
// wrong with a manifest asking for it on its own (msg) and the reason an
// approval shows when the operator grants it; both "" for an ordinary glob.
func globBreadth(s, home string) (msg, reason string) {
	rest, inHome := strings.CutPrefix(s, "~/")
	if !inHome {
		rest = s[1:]
	}
	if rest == "" {
		if inHome {
			return `covers the whole home directory; name a directory, e.g. "~/reports/**"`, "it covers your whole home directory"
		}
		return "covers the whole filesystem", "it covers the whole filesystem"
	}
	if path.Clean(rest) != rest || strings.HasPrefix(rest, "/") {
		return fmt.Sprintf("must be a clean path (no \".\", \"//\" or trailing \"/\") such as %q", cleanGlob(s)), "it is not a clean path"
	}
	segs := strings.Split(rest, "/")
	lit := 0 // the number of leading segments without glob characters
	for lit < len(segs) && !strings.ContainsAny(segs[lit], globMeta) {
		lit++
	}
	if lit == 0 {
		where, example := "filesystem", "/srv/reports/**"
		if inHome {
			where, example = "home directory", "~/reports/**"
		}
		if segs[0] == "**" {
			return fmt.Sprintf("covers the whole %s; name a directory, e.g. %q", where, example), "it covers the whole " + where
		}
		return fmt.Sprintf("must name a directory before the first wildcard, e.g. %q", example), "it names no directory before its first wildcard"
	}
	if inHome {
		return homeBreadth("~/", segs)
	}
	top := "/" + segs[0]
	for _, root := range systemRoots {
		if strings.EqualFold(top, root) {
			return "is inside the system directory " + root + needsGrant, "it is inside the system directory " + root
		}
	}
	// A home directory, written as an absolute path, is judged like "~/":
	// the operator's own (home), and any under /home or /Users.
	if hs := homeSegments(home); len(hs) > 0 {
		switch {
		case len(segs) >= len(hs) && equalFoldSegs(segs[:len(hs)], hs):
			if lit <= len(hs) {
				return `covers your whole home directory; name a directory inside it, e.g. "~/reports/**"`, "it covers your whole home directory"
			}
			return homeBreadth("/"+strings.Join(segs[:len(hs)], "/")+"/", segs[len(hs):])
		case lit < len(hs) && lit < len(segs) && equalFoldSegs(segs[:lit], hs[:lit]):
			// A wildcard on the way to the home directory can match it,
			// and so everything in it: "/data/users/*/.ssh/**" for a home
			// of /data/users/ada. (Under /home and /Users, and for a home
			// two segments deep, the rules below refuse it as well.)
			h := "/" + strings.Join(hs, "/")
			return fmt.Sprintf(`can match your home directory %s and everything in it; name a directory inside it, e.g. "~/reports/**"`, h),
				"it can match your whole home directory " + h
		}
	}
	for _, root := range homeRoots {
		if strings.EqualFold(top, root) {
			if lit < 3 {
				return `covers a whole home directory; name a directory inside one, or write "~/..."`, "it covers a whole home directory"
			}
			return homeBreadth("/"+segs[0]+"/"+segs[1]+"/", segs[2:])
		}
	}
	if lit < 2 {
		return fmt.Sprintf("covers the whole top-level directory %s; name a directory inside it, e.g. %q", top, top+"/reports/**"),
			"it covers the whole top-level directory " + top
	}
	return "", ""
}

// homeBreadth judges the part of a glob inside a home directory, below the
// directory written as prefix ("~/", "/home/dave/"): segs, of which the
// first has no glob characters, so it names the one entry of the home
// directory that everything the glob matches is inside. Every dotfile and
// dot-directory (~/.ssh, ~/.config, ~/.bashrc, ...) and homeCode need the
// operator's grant, as a class.
func homeBreadth(prefix string, segs []string) (msg, reason string) {
	first := segs[0]
	if strings.HasPrefix(first, ".") {
		kind := "dot-directory"
		if len(segs) == 1 {
			kind = "dotfile"
		}
		why := fmt.Sprintf("%s%s is a %s of the home directory, %s", prefix, first, kind, dotReason)
		return why + needsGrant, why
	}
	if what, ok := homeCode[strings.ToLower(first)]; ok {
		why := fmt.Sprintf("%s%s holds %s: a module that writes there can run code as you outside the sandbox", prefix, first, what)
		return why + needsGrant, why
	}
	return "", ""
}

// dotReason is why the dot-directories and dotfiles of a home directory
// need the operator's grant, whatever their name.
const dotReason = "where shells, editors, language runtimes and credential helpers keep start-up files, settings and secrets: " +
	"a module that writes there can run code as you outside the sandbox, one that reads there can take your credentials"

// homeSegments returns the segments of the clean absolute directory home
// ("/srv/dave": ["srv", "dave"]), or nil for "" or "/".
func homeSegments(home string) []string {
	home = path.Clean(home)
	if !path.IsAbs(home) || home == "/" {
		return nil
	}
	return strings.Split(home[1:], "/")
}

// equalFoldSegs reports whether a and b hold the same segments, compared
// without regard to case.
func equalFoldSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

// cleanGlob returns s with "." segments, doubled and trailing slashes
// removed, for a suggestion.
func cleanGlob(s string) string {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		return "~/" + strings.TrimPrefix(path.Clean("/"+rest), "/")
	}
	return path.Clean(s)
}

// hasDotDot reports whether s has a ".." path segment, also inside a glob
// alternation ("{..,x}").
func hasDotDot(s string) bool {
	for _, seg := range strings.FieldsFunc(s, func(r rune) bool {
		return r == '/' || r == '{' || r == '}' || r == ','
	}) {
		if seg == ".." {
			return true
		}
	}
	return false
}

// ParseSize parses a byte size as written in manifests and the station
// configuration: a non-negative integer number of bytes, optionally followed
// by B, KiB, MiB or GiB ("64MiB", "1GiB", "65536"). Decimal units (KB, MB,
// GB) are refused so that "64MB" cannot silently mean 64 MiB. The grammar
// is yamlx's, the same for every YAML file of the station.
func ParseSize(s string) (uint64, error) { return yamlx.ParseSize(s) }

// FormatSize renders n as ParseSize reads it, in the largest unit that
// divides it exactly ("64MiB", "1536KiB", "100B").
func FormatSize(n uint64) string { return yamlx.FormatSize(n) }

// checkEnvName validates a subprocess environment variable name. Loader and
// interpreter start-up variables are refused here already; the subprocess
// gate refuses them again.
func checkEnvName(s string) string {
	if s == "" || len(s) > 128 {
		return "must be 1 to 128 characters"
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return "must be a variable name: letters, digits and _, not starting with a digit"
		}
	}
	up := strings.ToUpper(s)
	for _, p := range []string{"LD_", "DYLD_", "PYTHON", "PERL5", "RUBY", "NODE_", "GIT_EXEC_PATH", "GIT_SSH", "GIT_CONFIG", "BASH_ENV", "GCONV_PATH", "MALLOC_"} {
		if strings.HasPrefix(up, p) {
			return "is a loader or interpreter start-up variable; a module may not pass it to a program"
		}
	}
	switch up {
	case "ENV", "IFS", "SHELLOPTS", "PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "RUBYOPT":
		return "is set by the station or changes how programs start; a module may not pass it"
	}
	return ""
}

// CompareVersions orders two valid semantic versions by semver precedence:
// -1 if a < b, 0 if they have equal precedence (build metadata is
// ignored), +1 if a > b.
func CompareVersions(a, b string) int {
	ma, mb := semver.FindStringSubmatch(a), semver.FindStringSubmatch(b)
	if ma == nil || mb == nil {
		return strings.Compare(a, b)
	}
	for i := 1; i <= 3; i++ {
		if c := compareNumeric(ma[i], mb[i]); c != 0 {
			return c
		}
	}
	pa, pb := ma[4], mb[4]
	switch {
	case pa == pb:
		return 0
	case pa == "":
		return 1 // a release is higher than its pre-releases
	case pb == "":
		return -1
	}
	fa, fb := strings.Split(pa, "."), strings.Split(pb, ".")
	for i := 0; i < len(fa) && i < len(fb); i++ {
		da, db := isDigits(fa[i]), isDigits(fb[i])
		var c int
		switch {
		case da && db:
			c = compareNumeric(fa[i], fb[i])
		case da:
			c = -1 // numeric identifiers are lower than alphanumeric ones
		case db:
			c = 1
		default:
			c = strings.Compare(fa[i], fb[i])
		}
		if c != 0 {
			return c
		}
	}
	return compareInt(len(fa), len(fb))
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// compareNumeric compares decimal strings without leading zeros of any
// length.
func compareNumeric(a, b string) int {
	if c := compareInt(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
