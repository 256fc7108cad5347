package execgate

import "strings"

// Kinds of program the gate refuses unless the operator grants them by
// name. Each can run code the module chooses — a script it wrote into a
// writable tree, a -c argument, another program — so allowing one would
// turn an allowlist into "anything".
const (
	kindShell       = "a shell"
	kindInterpreter = "an interpreter"
	kindWrapper     = "a program that runs other programs"
	kindPrivilege   = "a program that changes privileges"
	kindDebugger    = "a debugger or tracer"
	kindLoader      = "a dynamic loader"
	kindEditor      = "an editor that runs commands"
)

var programKinds = map[string]string{}

func init() {
	for kind, names := range map[string]string{
		kindShell: "sh bash rbash dash ash zsh ksh ksh93 mksh pdksh oksh loksh csh tcsh fish rc es yash elvish nu xonsh pwsh powershell " +
			"busybox toybox",
		kindInterpreter: "python pypy perl ruby irb jruby php lua luajit tclsh wish expect node nodejs deno bun osascript " +
			"awk gawk mawk nawk jshell jrunscript java groovy scala kotlin rscript r julia guile racket sbcl clisp ecl " +
			"gsi csi escript erl elixir iex swipl gst ghci runghc runhaskell dotnet mono qjs gjs cscript wscript " +
			"make gmake bmake ninja",
		kindWrapper: "env xargs nice nohup timeout setsid stdbuf chroot unshare nsenter ionice taskset chrt flock watch " +
			"script time parallel run-parts runcon chpst numactl prlimit cgexec systemd-run firejail bwrap capsh " +
			"setarch linux32 linux64 unbuffer faketime fakeroot proot exec",
		kindPrivilege: "sudo sudoedit su doas pkexec runuser setpriv sg newgrp",
		kindDebugger:  "strace ltrace gdb lldb valgrind perf rr",
		kindLoader:    "ld.so ld-linux.so ld-linux-x86-64.so ld-linux-aarch64.so ld64.so",
		kindEditor:    "vi vim nvim view vimdiff ex ed red emacs",
	} {
		for _, n := range strings.Fields(names) {
			programKinds[n] = kind
		}
	}
}

// familyPrefixes catch versioned and suffixed names of interpreter families
// (python3.12, perl5.36.0, node20, tclsh8.6, ld-musl-x86_64.so.1).
var familyPrefixes = []struct{ prefix, kind string }{
	{"python", kindInterpreter}, {"pypy", kindInterpreter}, {"perl", kindInterpreter},
	{"ruby", kindInterpreter}, {"php", kindInterpreter}, {"lua", kindInterpreter},
	{"tclsh", kindInterpreter}, {"wish", kindInterpreter}, {"node", kindInterpreter},
	{"ld-linux", kindLoader}, {"ld-musl", kindLoader},
}

// programKind says why a program name is refused by default, or returns ""
// for an ordinary program. Matching ignores case and a trailing version
// ("bash5.2", "guile-3.0", "python3.12").
func programKind(name string) string {
	n := strings.ToLower(name)
	if k, ok := programKinds[n]; ok {
		return k
	}
	if k, ok := programKinds[trimVersion(n)]; ok {
		return k
	}
	for _, f := range familyPrefixes {
		if strings.HasPrefix(n, f.prefix) {
			return f.kind
		}
	}
	return ""
}

// trimVersion drops a trailing version: digits and dots, optionally after
// one '-' or '.' ("guile-3.0" -> "guile", "ld-linux.so.2" -> "ld-linux.so").
func trimVersion(n string) string {
	i := len(n)
	for i > 0 && (n[i-1] >= '0' && n[i-1] <= '9' || n[i-1] == '.') {
		i--
	}
	if i == len(n) || i == 0 {
		return n
	}
	t := n[:i]
	if c := n[i]; c == '.' {
		return t
	}
	return strings.TrimSuffix(t, "-")
}
