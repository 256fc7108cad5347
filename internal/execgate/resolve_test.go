package execgate

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveFixture builds a search directory and an excluded (module-writable)
// tree in a temp dir.
type resolveFixture struct {
	bin, writable string
	op            Operator
	sh            string // /bin/sh with symlinks resolved (dash here)
	exe           string // the test binary, resolved
	trueDigest    string
}

func newResolveFixture(t *testing.T) *resolveFixture {
	t.Helper()
	tmp := t.TempDir()
	f := &resolveFixture{
		bin:      filepath.Join(tmp, "bin"),
		writable: filepath.Join(tmp, "writable"),
		sh:       realPath(t, "/bin/sh"),
		exe:      realPath(t, must(os.Executable())),
	}
	for _, d := range []string{f.bin, f.writable, filepath.Join(f.bin, "dirprog")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	trueBin := realPath(t, "/bin/true")
	copyFile(t, trueBin, filepath.Join(f.bin, "tool"), 0o755)
	copyFile(t, trueBin, filepath.Join(f.writable, "evil"), 0o755)
	copyFile(t, trueBin, filepath.Join(f.writable, "only"), 0o755)
	copyFile(t, trueBin, filepath.Join(f.bin, "noexec"), 0o644)
	copyFile(t, f.sh, filepath.Join(f.bin, "notashell"), 0o755)
	for link, target := range map[string]string{
		"planted": filepath.Join(f.writable, "evil"),
		"shlink":  "/bin/sh",
		"self":    f.exe,
	} {
		if err := os.Symlink(target, filepath.Join(f.bin, link)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(trueBin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	f.trueDigest = "sha256:" + hex.EncodeToString(sum[:])
	f.op = Operator{SearchPath: []string{f.bin, "/usr/bin", "/bin"}, Excluded: []string{f.writable}}
	return f
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestResolve(t *testing.T) {
	f := newResolveFixture(t)
	trueBin := realPath(t, "/bin/true")
	cases := []struct {
		name    string
		entry   string
		grant   bool
		want    string // resolved path, or "" when an error is wanted
		wantErr string
	}{
		{name: "bare name in a search dir", entry: "tool", want: filepath.Join(f.bin, "tool")},
		{name: "bare name on the system path", entry: "true", want: trueBin},
		{name: "absolute path through a symlinked dir", entry: "/bin/true", want: trueBin},
		{name: "not found", entry: "nosuch-program", wantErr: "not found on the search path (" + f.bin + ":/usr/bin:/bin)"},
		{name: "not executable is not found", entry: "noexec", wantErr: "not found on the search path"},
		{name: "directory is not found", entry: "dirprog", wantErr: "not found on the search path"},
		{name: "found only in an excluded tree", entry: filepath.Join(f.writable, "only"), wantErr: "is inside the excluded tree " + f.writable},
		{name: "symlink into an excluded tree", entry: "planted", wantErr: "resolves to " + filepath.Join(f.writable, "evil") + ", inside the excluded tree " + f.writable},
		{name: "absolute symlink into an excluded tree", entry: filepath.Join(f.bin, "planted"), wantErr: "inside the excluded tree"},
		{name: "shell refused", entry: "sh", wantErr: "/usr/bin/sh is a shell; refused unless the operator grants it by name"},
		{name: "shell granted", entry: "sh", grant: true, want: f.sh},
		{name: "shell by absolute path", entry: "/bin/sh", wantErr: "/bin/sh is a shell"},
		{name: "symlink to a shell", entry: "shlink", wantErr: "resolves to " + f.sh + ", a shell"},
		{name: "copy of a shell under another name", entry: "notashell", wantErr: "is the same program as " + f.sh + ", a shell"},
		{name: "wrapper refused", entry: "env", wantErr: "is a program that runs other programs"},
		{name: "wrapper by absolute path", entry: "/usr/bin/env", wantErr: "is a program that runs other programs"},
		{name: "wrapper granted", entry: "env", grant: true, want: realPath(t, "/usr/bin/env")},
		{name: "station binary through a symlink", entry: "self", wantErr: "is the station binary"},
		{name: "station binary by path", entry: f.exe, wantErr: "is the station binary"},
		{name: "station binary granted", entry: "self", grant: true, want: f.exe},
		{name: "absolute non-executable", entry: filepath.Join(f.bin, "noexec"), wantErr: "is not executable"},
		{name: "absolute directory", entry: "/usr/bin", wantErr: "is not a regular file"},
		{name: "absolute missing", entry: "/usr/bin/nosuch-program", wantErr: "does not exist"},
		{name: "relative path", entry: "bin/true", wantErr: "must be an absolute, clean path"},
		{name: "dot-dot path", entry: "../true", wantErr: "must be an absolute, clean path"},
		{name: "unclean path", entry: "/bin/../bin/true", wantErr: "must be an absolute, clean path"},
		{name: "empty", entry: "", wantErr: "not a program name"},
		{name: "option-like", entry: "-rf", wantErr: "not a program name"},
		{name: "dot name", entry: ".hidden", wantErr: "not a program name"},
		{name: "NUL", entry: "tr\x00ue", wantErr: "not a program name"},
		{name: "space", entry: "git status", wantErr: "not a program name"},
		{name: "control byte in path", entry: "/usr/bin/\ntrue", wantErr: "control byte"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := f.op
			if c.grant {
				op.GrantPrograms = []string{c.entry}
			}
			got, err := Resolve([]string{c.entry}, op)
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("Resolve(%q) = %+v, want an error containing %q", c.entry, got, c.wantErr)
				}
				if !strings.Contains(err.Error(), c.wantErr) || !strings.HasPrefix(err.Error(), "allow entry ") {
					t.Fatalf("Resolve(%q) error = %q, want one naming the entry and containing %q", c.entry, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", c.entry, err)
			}
			if len(got) != 1 || got[0].Name != c.entry || got[0].Path != c.want || !validDigest(got[0].Digest) {
				t.Fatalf("Resolve(%q) = %+v, want name %q path %q and a digest", c.entry, got, c.entry, c.want)
			}
		})
	}
}

func TestResolveDigest(t *testing.T) {
	f := newResolveFixture(t)
	got, err := Resolve([]string{"tool", "/bin/true"}, f.op)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		if p.Digest != f.trueDigest {
			t.Errorf("%s: digest %s, want %s", p.Name, p.Digest, f.trueDigest)
		}
	}
}

func TestResolveSettings(t *testing.T) {
	f := newResolveFixture(t)
	linkToWritable := filepath.Join(t.TempDir(), "bin")
	if err := os.Symlink(f.writable, linkToWritable); err != nil {
		t.Fatal(err)
	}
	many := make([]string, maxPrograms+1)
	for i := range many {
		many[i] = "true"
	}
	cases := []struct {
		name    string
		allow   []string
		op      Operator
		wantErr string
	}{
		{"search path inside an excluded tree", []string{"true"}, Operator{SearchPath: []string{f.writable, "/usr/bin"}, Excluded: []string{f.writable}}, "search path entry " + f.writable + " is inside the excluded tree"},
		{"search path symlinked into an excluded tree", []string{"true"}, Operator{SearchPath: []string{linkToWritable}, Excluded: []string{f.writable}}, "is inside the excluded tree " + realPath(t, f.writable)},
		{"search path below an excluded tree", []string{"true"}, Operator{SearchPath: []string{"/usr/bin"}, Excluded: []string{"/usr"}}, "is inside the excluded tree /usr"},
		{"relative search path", []string{"true"}, Operator{SearchPath: []string{"bin"}}, "want an absolute, clean path"},
		{"search path with a colon", []string{"true"}, Operator{SearchPath: []string{"/usr/bin:/tmp"}}, "without ':'"},
		{"relative excluded tree", []string{"true"}, Operator{Excluded: []string{"home"}}, "excluded tree \"home\""},
		{"bad grant", []string{"true"}, Operator{GrantPrograms: []string{"a b"}}, "granted program \"a b\""},
		{"no entries", nil, Operator{}, "no programs listed"},
		{"duplicate entry", []string{"true", "true"}, Operator{}, "allow entry \"true\": listed twice"},
		{"too many entries", many, Operator{}, "exceed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.allow, c.op)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Resolve = %+v, %v; want an error containing %q", got, err, c.wantErr)
			}
		})
	}
}

func TestProgramKind(t *testing.T) {
	cases := []struct{ name, want string }{
		{"sh", kindShell}, {"bash", kindShell}, {"dash", kindShell}, {"zsh", kindShell}, {"fish", kindShell},
		{"busybox", kindShell}, {"Bash", kindShell}, {"bash5.2", kindShell},
		{"python", kindInterpreter}, {"python3", kindInterpreter}, {"python3.12", kindInterpreter},
		{"pypy3", kindInterpreter}, {"perl", kindInterpreter}, {"perl5.36.0", kindInterpreter},
		{"ruby3.1", kindInterpreter}, {"node", kindInterpreter}, {"nodejs", kindInterpreter}, {"node20", kindInterpreter},
		{"deno", kindInterpreter}, {"bun", kindInterpreter}, {"php8.2", kindInterpreter}, {"lua5.4", kindInterpreter},
		{"tclsh8.6", kindInterpreter}, {"osascript", kindInterpreter}, {"guile-3.0", kindInterpreter}, {"awk", kindInterpreter},
		{"env", kindWrapper}, {"xargs", kindWrapper}, {"nice", kindWrapper}, {"nohup", kindWrapper},
		{"timeout", kindWrapper}, {"setsid", kindWrapper}, {"stdbuf", kindWrapper},
		{"sudo", kindPrivilege}, {"su", kindPrivilege}, {"doas", kindPrivilege}, {"pkexec", kindPrivilege},
		{"strace", kindDebugger}, {"gdb", kindDebugger},
		{"ld-linux-x86-64.so.2", kindLoader}, {"ld.so", kindLoader}, {"ld-musl-x86_64.so.1", kindLoader},
		{"vim", kindEditor},
		{"git", ""}, {"pandoc", ""}, {"true", ""}, {"echo", ""}, {"ssh", ""}, {"shred", ""}, {"envsubst", ""},
		{"gitk", ""}, {"2to3", ""}, {"x", ""},
	}
	for _, c := range cases {
		if got := programKind(c.name); got != c.want {
			t.Errorf("programKind(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestEnvRefusal(t *testing.T) {
	refused := []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ld_preload", "DYLD_INSERT_LIBRARIES", "GCONV_PATH", "LOCPATH",
		"MALLOC_CHECK_", "MALLOC_ARENA_MAX", "NLSPATH", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "GLIBC_TUNABLES",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB", "PERL5OPT", "RUBYOPT", "NODE_OPTIONS",
		"BASH_ENV", "ENV", "IFS", "SHELLOPTS", "PS4", "BASH_FUNC_x%%", "PROMPT_COMMAND",
		"GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT",
		"GIT_CONFIG_PARAMETERS", "GIT_ASKPASS", "GIT_PAGER", "GIT_EDITOR", "GIT_TRACE", "GIT_DIR", "GIT_PROXY_COMMAND",
		"PAGER", "EDITOR", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "http_proxy", "HTTPS_PROXY",
		"JAVA_TOOL_OPTIONS", "CLASSPATH", "OPENSSL_CONF", "TERMINFO", "LESSOPEN", "GOFLAGS_PATH",
		"PATH", "HOME", "LANG", "TMPDIR", "STATION_HOME", "STATION_EXECGATE_LAUNCH",
	}
	for _, n := range refused {
		if envRefusal(n) == "" {
			t.Errorf("envRefusal(%q) = \"\", want a refusal", n)
		}
	}
	for _, n := range []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_EMAIL", "TZ", "LC_ALL", "NO_COLOR", "SOURCE_DATE_EPOCH", "PANDOC_VERSION"} {
		if r := envRefusal(n); r != "" {
			t.Errorf("envRefusal(%q) = %q, want none", n, r)
		}
		if err := CheckEnv(n); err != nil {
			t.Errorf("CheckEnv(%q) = %v, want nil", n, err)
		}
	}
	for name, want := range map[string]string{
		"LD_PRELOAD": "LD_PRELOAD is a variable that can make a program load or run other code",
		"HOME":       "HOME is set by the station",
		"1X":         `"1X" is not a variable name`,
		"A-B":        `"A-B" is not a variable name`,
		"":           `"" is not a variable name`,
	} {
		if err := CheckEnv(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckEnv(%q) = %v, want an error containing %q", name, err, want)
		}
	}
}
