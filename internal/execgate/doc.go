// Package execgate is the subprocess gate of the module sandbox: the one
// path through which a module starts a program. The host exposes it to
// guests as the process_run import, and links that import only into modules
// whose manifest grants subprocess; with `subprocess: false` there is no
// gate and no import.
//
// # Install: Resolve
//
// `subprocess: {allow: [git, pandoc]}` is resolved once, at install, by
// Resolve. A bare name is looked up on the operator's fixed search path
// (default /usr/local/bin:/usr/bin:/bin), never on the station's PATH; an
// entry with a '/' must be an absolute, clean path. The file that would run
// is found with its symlinks resolved, and refused when:
//
//   - it, or the path that led to it, lies inside an excluded tree (every
//     module-writable root and the station home; a search path entry inside
//     one is a configuration error);
//   - it is a shell, an interpreter, a program-running wrapper (env, xargs,
//     nice, timeout, sudo, ...), a debugger, a dynamic loader or the station
//     binary — judged by the entry's name, by the resolved file's name (so
//     /bin/sh -> dash is caught), and by identity (a hard link or a
//     byte-identical copy of such a program under another name) — unless
//     the operator grants that entry by name (Operator.GrantPrograms).
//
// Each Program records the resolved path and its sha256 digest; the station
// stores them with the module.
//
// # Link: New
//
// New binds a module's Programs, declared variables, work dirs and the
// operator's settings into a Gate, re-checking the stored programs against
// the current settings. `subprocess: true` (Options.Any) is accepted only
// with Operator.GrantAny; then any program on the search path may run,
// resolved there at run time with the same refusals. New refuses a manifest
// that declares a variable the station sets (PATH, HOME, LANG, TMPDIR) or
// one that changes how programs load or run (LD_*, DYLD_*, GCONV_PATH,
// MALLOC_*, PYTHON*, PERL5*, NODE_OPTIONS, BASH_ENV, IFS, GIT_SSH*,
// GIT_CONFIG*, ...; see env.go). CheckEnv applies the same rule so that
// install can refuse such a manifest first.
//
// # Run
//
// argv[0] must be a granted name. The gate executes the resolved path
// directly — no shell — with argv[0] set to the granted name and every other
// argument passed as written. Before each run the file is digested again; a
// program that changed since install is refused. Arguments may not contain
// NUL bytes; their number and size, the variables, and stdin are capped.
//
// The environment is PATH (the search path), LANG=C.UTF-8, HOME (the working
// directory), TMPDIR (a scratch directory created for the call and removed
// after it), plus the declared variables the request sets. Nothing is
// inherited from the station.
//
// The working directory must be inside one of the module's work dirs
// (checked with symlinks resolved, then opened beneath the work dir so a
// swapped path component cannot redirect it); without one, the child runs
// in the scratch directory.
//
// Stdout and stderr are each kept up to Options.MaxOutput (1 MiB by
// default); the rest is read and discarded, and Truncated, Limit,
// StdoutDropped and StderrDropped say so.
//
// # Confinement
//
// The child starts in a new session (so a new process group, and no
// controlling terminal). When the program exits, or the call's context
// ends, SIGKILL goes to the whole group; Run stops waiting for output pipes
// that a descendant keeps open shortly after. Where the platform allows
// (Linux, probed once per process):
//
//   - a network namespace with only a loopback interface that is down, and
//     pid and ipc namespaces: when the program exits the kernel kills every
//     process it left behind, whatever session or group they moved to. As
//     root no user namespace is needed; otherwise one maps the station's uid
//     and gid to themselves. Without namespaces New fails unless
//     Operator.AllowNetwork is set; Isolated reports the outcome.
//   - no_new_privs, no ambient capabilities, and as root an empty bounding
//     and inheritable set: the child runs as uid 0 without capabilities.
//   - Landlock: the child may read only beneath the system directories,
//     /etc, /proc, /sys, the harmless devices, the search path, the granted
//     programs' directories and the module's own trees (never the station
//     home or another module's writable tree); may write only beneath the
//     work dirs, its scratch directory and /dev/null, /dev/zero and
//     /dev/full; may execute files only from system directories, the search
//     path and the granted programs' directories (never a program it
//     wrote); and, from ABI 6, may not signal or reach abstract sockets of
//     processes outside it.
//   - seccomp: no metadata changes (times, owner, mode, xattrs) and no
//     AF_UNIX sockets.
//
// The child applies these to itself: it starts as the station binary,
// re-executed as a launcher (package launch) inside the new namespaces,
// which confines its own process with the ruleset the gate prepared and
// then execs the program. No station thread is ever confined. The platform
// is probed once per process through the same launcher, with rules built
// by the same constructor as a call's.
//
// The station fails closed: where children cannot get a network namespace
// New fails unless Operator.AllowNetwork is set; where they cannot be
// confined to files (no Landlock, or Landlock that cannot be applied)
// every Run is refused, with a recorded denial naming the setting, unless
// Operator.AllowUnconfinedFiles is set; a launcher that cannot apply any
// part of the confinement reports it and the program does not start.
// Confinement describes the result for the log, Describe in one line for
// the operator's approval. docs/subprocess.md explains the choices.
//
// # Decisions
//
// Every decision goes to the Recorder, naming the module, the command from
// the call's context, the capability sandbox.Subprocess, a target such as
// "git (/usr/bin/git) argc=3" (never the arguments), and the reason. A
// denial is returned as a *sandbox.Violation, rendered as
//
//	sandbox violation: module dave/docs: subprocess: "curl" is not in its subprocess allowlist (git, pandoc)
//
// A malformed request wraps ErrInvalid and one over a limit ErrTooLarge;
// both are recorded as refusals.
package execgate
