package execgate

import (
	"fmt"
	"strings"
)

// baseEnv names the variables the station sets for every child. A manifest
// cannot declare them.
var baseEnv = map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TMPDIR": true}

// Variables that make a program load or run code, choose a helper program,
// reach a socket, or change how the loader, libc or a shell behaves, and the
// station's own (STATION_HOME, the launcher's marker). They are
// never passed, even when declared; New refuses a manifest that declares one.
// Matching ignores case.
var (
	forbiddenEnvNames = words(`
		GCONV_PATH LOCPATH NLSPATH HOSTALIASES RES_OPTIONS LOCALDOMAIN GLIBC_TUNABLES TZDIR
		BASH_ENV ENV IFS SHELLOPTS BASHOPTS PS4 PROMPT_COMMAND ZDOTDIR CDPATH GLOBIGNORE SHELL
		RUBYOPT RUBYLIB NODE_OPTIONS CLASSPATH
		GIT_EXEC_PATH GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_PAGER GIT_ASKPASS SSH_ASKPASS GIT_EXTERNAL_DIFF
		GIT_PROXY_COMMAND GIT_TEMPLATE_DIR GIT_DIR GIT_WORK_TREE GIT_COMMON_DIR GIT_INDEX_FILE
		GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_NAMESPACE GIT_DIFF_OPTS
		PAGER EDITOR VISUAL BROWSER TERMINAL LESSOPEN LESSCLOSE MANOPT
		OPENSSL_CONF OPENSSL_ENGINES OPENSSL_MODULES TERMINFO TERMINFO_DIRS TERMCAP
		JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS
		SSH_AUTH_SOCK GPG_AGENT_INFO DBUS_SESSION_BUS_ADDRESS DBUS_SYSTEM_BUS_ADDRESS XDG_RUNTIME_DIR
		DISPLAY WAYLAND_DISPLAY XAUTHORITY DOCKER_HOST CONTAINER_HOST`)
	forbiddenEnvPrefixes = words(`
		LD_ DYLD_ MALLOC_ GCONV_ PYTHON PERL5 PERL_ RUBY NODE_ BASH_ GIT_SSH GIT_CONFIG GIT_TRACE
		LUA_ DOTNET_ CORECLR_ COR_ COMPLUS_ MONO_ NPM_CONFIG_ LESSKEY STATION_`)
	forbiddenEnvSuffixes = words(`
		PATH _OPTIONS OPTS OPT LIB _PRELOAD _COMMAND _CMD PAGER EDITOR ASKPASS _PROXY _HOOK _HOOKS
		_SOCK _SOCKET`)
)

func words(s string) []string { return strings.Fields(s) }

// CheckEnv reports whether a manifest may declare the variable name in
// `subprocess.env`. New applies the same check, so install can refuse,
// with the manifest's file and line, what linking would.
func CheckEnv(name string) error {
	if !validEnvName(name) {
		return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit, at most 128 bytes)", name)
	}
	if why := envRefusal(name); why != "" {
		return fmt.Errorf("%s %s", name, why)
	}
	return nil
}

// envRefusal says why a variable may never be declared or passed, or returns
// "" if it may be.
func envRefusal(name string) string {
	u := strings.ToUpper(name)
	if baseEnv[u] {
		return "is set by the station (PATH, HOME, LANG and TMPDIR are fixed)"
	}
	const reason = "is a variable that can make a program load or run other code, or reach a local service; the station never passes it"
	for _, n := range forbiddenEnvNames {
		if u == n {
			return reason
		}
	}
	for _, p := range forbiddenEnvPrefixes {
		if strings.HasPrefix(u, p) {
			return reason
		}
	}
	for _, s := range forbiddenEnvSuffixes {
		if strings.HasSuffix(u, s) {
			return reason
		}
	}
	return ""
}

// validEnvName reports whether s is a portable variable name.
func validEnvName(s string) bool {
	if s == "" || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
