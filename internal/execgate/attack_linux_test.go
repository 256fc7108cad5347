package execgate

// Attacks on a child's descriptors, on what it can reach of the station,
// on the launcher's fail-closed paths and on a child outliving the station,
// from a review of the launcher. Each was a hole when found and is closed
// now, except the dynamic loader's (a known gap, docs/security.md):
//
//   - TestAttackInheritedDescriptorReachesProgram: a descriptor the station
//     inherited without close-on-exec reached every program (the launcher
//     now marks every descriptor from 3 close-on-exec).
//   - TestAttackRootChildReadsRootOnlyFiles (as root): uid 0 without
//     capabilities owned /etc/shadow and private keys (what only root may
//     read in /etc is now outside the read rules).
//   - TestAttackChildSharesStationSessionKeyring: the child read and
//     changed the station's kernel keyring (the keyring calls now fail).
//   - TestAttackNoPIDNamespaceChildChangesStationLimits: without
//     namespaces (allow_network) a child set the rlimits and priority of
//     the station (now only its own).
//   - TestAttackConcurrentStartsLeakIDMapDescriptors (normal user):
//     concurrent starts handed a program another child's uid_map opened
//     read-write (closed by the same close-on-exec sweep).
//   - TestAttackLoaderRunsPlantedBinary: the dynamic loader runs a binary
//     the module wrote (known gap).
//
// The test binary plays three parts: the station (the tests), a helper
// program run through the gate (EXECGATE_HELPER=review-<mode>, handled in
// init before TestMain), and a second station process
// (EXECGATE_REVIEW_STATION=<mode>) for the attacks that need a station
// started in a particular way.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/station-dev/station/internal/execgate/launch"
	"github.com/station-dev/station/internal/fixture"
	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

const reviewStationVar = "EXECGATE_REVIEW_STATION"

func init() {
	if m := os.Getenv(reviewStationVar); m != "" {
		os.Exit(reviewStation(m, os.Args[1:]))
	}
	if m, ok := strings.CutPrefix(os.Getenv(helperVar), "review-"); ok {
		os.Exit(reviewHelper(m, os.Args[1:]))
	}
}

// fdEntry is one of a process's descriptors.
type fdEntry struct {
	FD     int    `json:"fd"`
	Target string `json:"target"`
}

// listFDs lists this process's descriptors from 3 up, without the one
// that reads /proc/self/fd.
func listFDs() []fdEntry {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return []fdEntry{{-1, err.Error()}}
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []fdEntry
	for _, n := range names {
		fd, _ := strconv.Atoi(n)
		if fd < 3 || fd == int(d.Fd()) {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + n)
		out = append(out, fdEntry{fd, target})
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reviewHelper is the child side of the attacks (a program run through the
// gate).
func reviewHelper(mode string, args []string) int {
	out := map[string]any{}
	switch mode {
	case "fds":
		// List the descriptors; read and append to the ones that are
		// args[0] (the test's planted file, never anything else).
		fds := listFDs()
		out["fds"] = fds
		for _, e := range fds {
			if len(args) == 0 || e.Target != args[0] {
				continue
			}
			b := make([]byte, 256)
			n, err := syscall.Pread(e.FD, b, 0)
			out["read"], out["readErr"] = string(b[:max(n, 0)]), errString(err)
			_, err = syscall.Write(e.FD, []byte("child-wrote"))
			out["writeErr"] = errString(err)
		}
	case "idmapfds":
		// Descriptors of another process's uid_map, gid_map or setgroups
		// (the station's Go runtime opens them without close-on-exec while
		// it writes a concurrently started child's maps); write to them
		// what the station would.
		writes := map[string]string{}
		var fds []fdEntry
		for _, e := range listFDs() {
			f := strings.Split(e.Target, "/")
			if len(f) != 4 || f[1] != "proc" || (f[3] != "uid_map" && f[3] != "gid_map" && f[3] != "setgroups") {
				continue
			}
			fds = append(fds, e)
			line := fmt.Sprintf("0 %d 1\n", os.Getuid())
			if f[3] == "gid_map" {
				line = fmt.Sprintf("%d %d 1\n", os.Getgid(), os.Getgid())
			} else if f[3] == "setgroups" {
				line = "deny"
			}
			_, err := syscall.Write(e.FD, []byte(line))
			writes[e.Target] = errString(err)
		}
		out["fds"], out["writes"] = fds, writes
	case "keyring":
		// The station's session keyring is this process's too.
		desc := args[0]
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", desc, 0)
		out["searchErr"] = errString(err)
		if err == nil {
			b := make([]byte, 256)
			n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, b, 0)
			out["read"], out["readErr"] = string(b[:max(n, 0)]), errString(err)
		}
		_, err = unix.AddKey("user", desc+"-planted", []byte("planted by a child"), unix.KEY_SPEC_SESSION_KEYRING)
		out["plantErr"] = errString(err)
	case "proc":
		// What of process args[0] can the child read?
		pid := args[0]
		got := map[string]string{}
		if f, err := os.Open("/proc/" + pid + "/mem"); err == nil {
			got["mem"] = "opened" // reading offset 0 fails even when the open succeeds
			f.Close()
		} else {
			got["mem"] = err.Error()
		}
		for _, f := range []string{"environ", "maps", "auxv", "stack", "syscall", "personality", "io", "timerslack_ns", "fdinfo/0", "smaps", "pagemap"} {
			b, err := os.ReadFile("/proc/" + pid + "/" + f)
			if err == nil {
				err = fmt.Errorf("READ %d bytes", len(b))
			}
			got[f] = err.Error()
		}
		for _, l := range []string{"exe", "cwd", "root", "fd/0", "fd/1", "ns/net", "ns/mnt", "ns/user"} {
			t, err := os.Readlink("/proc/" + pid + "/" + l)
			if err == nil {
				got[l] = "LINK " + t
			} else {
				got[l] = err.Error()
			}
		}
		if tasks, err := os.ReadDir("/proc/" + pid + "/task"); err == nil && len(tasks) > 0 {
			_, err := os.ReadFile("/proc/" + pid + "/task/" + tasks[len(tasks)-1].Name() + "/environ")
			got["task/environ"] = errString(err)
		}
		out["proc"] = got
	case "reach":
		// Signal, limit and renice process args[0] by its host pid.
		pid, _ := strconv.Atoi(args[0])
		out["kill"] = errString(syscall.Kill(pid, 0))
		if fd, err := unix.Open("/proc/"+args[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			out["pidfd"] = "open: " + err.Error()
		} else {
			out["pidfd"] = errString(unix.PidfdSendSignal(fd, 0, nil, 0))
			unix.Close(fd)
		}
		lim := unix.Rlimit{Cur: 7, Max: 7}
		out["prlimit"] = errString(unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil))
		out["setpriority"] = errString(unix.Setpriority(unix.PRIO_PROCESS, pid, 19))
	case "status":
		b, _ := os.ReadFile("/proc/self/status")
		out["status"] = string(b)
	default:
		fmt.Fprintln(os.Stderr, "unknown review helper mode", mode)
		return 2
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// reviewHelperGate is helperGate without a *testing.T, for a second
// station process: a gate that may run this binary.
func reviewHelperGate(op Operator) (*Gate, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, "", err
	}
	name := filepath.Base(exe)
	op.SearchPath, op.GrantPrograms = []string{filepath.Dir(exe)}, append(op.GrantPrograms, name)
	progs, err := Resolve([]string{name}, op)
	if err != nil {
		return nil, "", err
	}
	g, err := New(Options{Module: "test/review", Programs: progs, Env: []string{helperVar}, Operator: op})
	return g, name, err
}

func reviewShellGate() (*Gate, error) {
	op := Operator{GrantPrograms: []string{"sh"}}
	progs, err := Resolve([]string{"sh"}, op)
	if err != nil {
		return nil, err
	}
	return New(Options{Module: "test/review", Programs: progs, Operator: op})
}

// reviewStation is a second station process; it prints one JSON object.
func reviewStation(mode string, args []string) int {
	out := map[string]any{}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "review station:", err)
		return 1
	}
	ctx := callCtxFor(60 * time.Second)
	switch mode {
	case "keyring":
		// Started with a session keyring of its own (as from a login, or
		// systemd's per-service keyring): a secret goes in it.
		desc := args[0]
		if _, err := unix.AddKey("user", desc, []byte("station-secret"), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
			return fail(err)
		}
		g, name, err := reviewHelperGate(Operator{})
		if err != nil {
			return fail(err)
		}
		resp, err := g.Run(ctx, &abi.ProcessRequest{Argv: []string{name, desc}, Env: map[string]string{helperVar: "review-keyring"}})
		if err != nil {
			return fail(err)
		}
		out["child"] = string(resp.Stdout)
		_, err = unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", desc+"-planted", 0)
		out["plantedSeen"] = err == nil
	case "sleep":
		// Runs a long child; the test kills this process meanwhile.
		g, err := reviewShellGate()
		if err != nil {
			return fail(err)
		}
		g.Run(ctx, &abi.ProcessRequest{Argv: []string{"sh", "-c", "sleep " + args[0] + "; : " + args[0]}})
		return 0
	case "replaced":
		// The test replaces and removes this binary; once it is gone,
		// children still start through the launcher, confined.
		deadline := time.Now().Add(10 * time.Second)
		for {
			exe, _ := os.Readlink("/proc/self/exe")
			if strings.HasSuffix(exe, " (deleted)") {
				break
			}
			if time.Now().After(deadline) {
				return fail(errors.New("the binary was not replaced"))
			}
			time.Sleep(10 * time.Millisecond)
		}
		g, err := reviewShellGate()
		if err != nil {
			return fail(err)
		}
		resp, err := g.Run(ctx, &abi.ProcessRequest{Argv: []string{"sh", "-c", "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; : > " + args[0] + " && echo wrote"}})
		if err != nil {
			return fail(err)
		}
		out["stdout"], out["exit"] = string(resp.Stdout), resp.ExitCode
	default:
		return fail(errors.New("unknown mode " + mode))
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// callCtxFor is callCtx for the second station process (no *testing.T).
func callCtxFor(d time.Duration) context.Context {
	// The process exits when its one call ends; the timer dies with it.
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel
	return sandbox.WithCall(ctx, &sandbox.Call{Module: "test/review", Command: "cmd"})
}

// runReviewHelper runs the helper in mode through g and decodes its output.
func runReviewHelper(t *testing.T, g *Gate, name, mode string, args ...string) map[string]any {
	t.Helper()
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: append([]string{name}, args...), Env: map[string]string{helperVar: "review-" + mode}})
	if err != nil {
		t.Fatalf("Run %s: %v", mode, err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(resp.Stdout, &out); err != nil {
		t.Fatalf("helper %s: exit %d, stdout %q, stderr %q: %v", mode, resp.ExitCode, resp.Stdout, resp.Stderr, err)
	}
	return out
}

// reviewStationCmd prepares this binary as a second station in mode.
func reviewStationCmd(t *testing.T, exe, mode string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), reviewStationVar+"="+mode)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	return cmd, &stdout
}

// inheritedFDs are the station's descriptors without close-on-exec.
func inheritedFDs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		if fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out[target] = true
	}
	return out
}

// Was a hole. A descriptor the station holds without close-on-exec — one it
// inherited from whatever started it (a shell's `9<>file`, a supervisor, a
// terminal multiplexer; this very test harness passes fds 10 and 251) —
// reaches every program: the launcher closes only its own 4 and 5 and
// marks 3 close-on-exec. Landlock does not check reads and writes on a
// descriptor that is already open, so the program reads and writes a file
// outside every rule. Fix: the launcher marks every descriptor from 3 up
// close-on-exec before exec (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC),
// Linux 5.11, older than every kernel with Landlock; fall back to
// fcntl(FD_CLOEXEC) over /proc/self/fd).
func TestAttackInheritedDescriptorReachesProgram(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	requireLandlock(t, g)
	secret := filepath.Join(realPath(t, t.TempDir()), "secret")
	if err := os.WriteFile(secret, []byte("station-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As the station's parent would hand it: no O_CLOEXEC.
	fd, err := unix.Open(secret, unix.O_RDWR|unix.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	// The same file by path is refused (control).
	if out := runReviewHelperRaw(t, g, name, "read", secret); out.ExitCode == 0 {
		t.Fatalf("control: the child read %s by path", secret)
	}
	out := runReviewHelper(t, g, name, "fds", secret)
	after, _ := os.ReadFile(secret)
	if out["read"] == "station-secret" || string(after) != "station-secret" {
		t.Errorf("the program read %q and wrote (file now %q) through inherited fd %d, outside its Landlock rules", out["read"], after, fd)
	}
	// What a program holds besides 0-2 (listed by ls, which inherits the
	// shell's descriptors; the helper's own Go runtime opens some).
	if fds := programFDs(t, shellGate(t, nil)); len(fds) > 0 {
		t.Errorf("the program holds descriptors besides 0-2: %v", fds)
	}
}

// programFDs lists the descriptors from 3 up that `sh -c 'ls -l
// /proc/self/fd/'` run through g inherits: those the program got.
func programFDs(t *testing.T, g *Gate) []fdEntry {
	t.Helper()
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", "exec ls -l /proc/self/fd/"}})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("ls: %+v, %v", resp, err)
	}
	var out []fdEntry
	for _, l := range strings.Split(string(resp.Stdout), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue
		}
		fd, _ := strconv.Atoi(f[len(f)-3])
		target := f[len(f)-1]
		if fd < 3 || strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd") {
			continue // 0-2, and ls's own directory
		}
		out = append(out, fdEntry{fd, target})
	}
	return out
}

func runReviewHelperRaw(t *testing.T, g *Gate, name, mode string, args ...string) *abi.ProcessResponse {
	t.Helper()
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: append([]string{name}, args...), Env: map[string]string{helperVar: mode}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Passing. The launcher's own descriptors — the report pipe (3), the spec
// memfd (4), the ruleset (5) — and those of launchers starting at the same
// time never reach a program: every descriptor a program holds besides 0-2
// is one the station itself inherited (the first hole above), or a uid/gid
// map descriptor (the hole below), which this test leaves to that one.
func TestAttackLauncherDescriptorsClosed(t *testing.T) {
	g := shellGate(t, nil)
	requireLandlock(t, g)
	inherited := inheritedFDs(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range programFDs(t, g) {
				if !inherited[e.Target] {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d -> %s", e.FD, e.Target))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("programs hold launcher descriptors: %v", bad)
	}
}

// Was a hole (as a normal user, concurrent runs). Go's os/exec writes a user-
// namespace child's uid_map, setgroups and gid_map from the station with
// syscall.Open(path, O_RDWR) — no O_CLOEXEC — and since Go 1.21 several
// goroutines fork at once. A child forked in that instant inherits another
// child's /proc/<pid>/uid_map (setgroups, gid_map) opened read-write, and
// the launcher passes it on to the program. The station's thread can stall
// for milliseconds between that open and its write (a locked goroutine
// waiting for a P), so the program sometimes writes first: here it writes
// "0 <uid> 1" into another child's uid_map within a few dozen concurrent
// runs. Go then fails that child's start (its own write gets EINVAL), so
// the effect is a write to another process's /proc file and starts that
// fail — any module's, the race is process-wide. Fix: the launcher's
// close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) (the first hole's fix) closes
// these too before any program runs; the launcher itself writes nothing.
func TestAttackConcurrentStartsLeakIDMapDescriptors(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	requireLandlock(t, g)
	if !g.conf.ns.userns {
		t.Skip("no user namespace here (root): the station writes no id maps")
	}
	var mu sync.Mutex
	var leaked []string
	for round := 0; round < 12 && len(leaked) == 0; round++ {
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{name}, Env: map[string]string{helperVar: "review-idmapfds"}})
				if err != nil {
					return // a start the leak made fail (the helper won the race), or the like
				}
				var out struct {
					FDs    []fdEntry
					Writes map[string]string
				}
				if json.Unmarshal(resp.Stdout, &out) == nil && len(out.FDs) > 0 {
					mu.Lock()
					leaked = append(leaked, fmt.Sprintf("%v (writes: %v)", out.FDs, out.Writes))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	if len(leaked) > 0 {
		t.Errorf("programs got read-write descriptors of other processes' id maps (a write that succeeded shows an empty error): %v", leaked)
	}
}

// Was a hole (as root). uid 0 without capabilities still owns every root-owned
// file, so a granted `cat` reads what /etc keeps from other users:
// /etc/shadow, /etc/gshadow, TLS and SSH host private keys, service
// configuration with passwords (0600/0640 root). As a normal user the same
// call is refused, so "the same as root and as a normal user" does not
// hold. Fix: as root, leave out of the read rules every entry of the
// system and readable roots that is not world-readable (cover() with those
// as avoided trees), or run children as an unprivileged uid (a user
// namespace mapping 0 to an unused uid, with the work dirs reachable
// through an id-mapped mount).
func TestAttackRootChildReadsRootOnlyFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only: as another user DAC refuses these reads")
	}
	var targets []string
	for _, p := range []string{"/etc/shadow", "/etc/gshadow", "/etc/ssl/private/ssl-cert-snakeoil.key", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o004 != 0 {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
			targets = append(targets, p)
		}
	}
	if len(targets) == 0 {
		t.Skip("no root-only file to try")
	}
	g := systemGate(t, nil, []string{"cat"}, Options{})
	requireLandlock(t, g)
	for _, p := range targets {
		resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"cat", p}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.ExitCode == 0 {
			t.Errorf("as root, granted cat read %s (%d bytes), which only root may read", p, len(resp.Stdout))
		}
	}
}

// Was a hole. A child shares the station's session keyring (and, as root, root's
// user and persistent keyrings): keyrings are not namespaced, and neither
// Landlock nor the seccomp filter covers keyctl(2). A granted program reads
// the secrets the station's session holds (Kerberos tickets in KEYRING:
// caches, ecryptfs/fscrypt-related user keys, anything `keyctl add` put
// there) and plants, revokes or clears keys. Docker's default profile
// blocks these calls for this reason. Fix: the seccomp filter denies
// keyctl, add_key and request_key (EPERM); optionally the launcher first
// joins a fresh anonymous session keyring.
func TestAttackChildSharesStationSessionKeyring(t *testing.T) {
	g, _ := helperGate(t, nil, nil)
	requireLandlock(t, g)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	desc := fmt.Sprintf("station-review-%d", os.Getpid())
	cmd, stdout := reviewStationCmd(t, exe, "keyring", desc)
	// Start the second station from a thread with a session keyring of its
	// own, as a login session or a systemd service would give it. The
	// thread ends with the goroutine (it stays locked).
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if _, err := unix.KeyctlJoinSessionKeyring(desc + "-session"); err != nil {
			errc <- err
			return
		}
		errc <- cmd.Start()
	}()
	if err := <-errc; err != nil {
		t.Skipf("cannot give the station a session keyring: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("second station: %v (%s)", err, stdout)
	}
	var out struct {
		Child       string
		PlantedSeen bool
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("second station printed %q: %v", stdout, err)
	}
	var child map[string]string
	json.Unmarshal([]byte(out.Child), &child)
	if child["read"] == "station-secret" {
		t.Errorf("a child read the station's key %q from its session keyring", desc)
	}
	if out.PlantedSeen {
		t.Errorf("a child added a key to the station's session keyring")
	}
	if t.Failed() {
		t.Logf("child: %s", out.Child)
	}
}

// Was a hole (config-dependent). Where children get no namespaces (no user
// namespaces for a normal user — e.g. Ubuntu's AppArmor restriction — with
// subprocess.allow_network set), a child can name any process of the
// station's user by pid, the station's is in /proc, and prlimit(2) and
// setpriority(2) are neither a Landlock right nor in the seccomp filter: a
// granted program sets the station's RLIMIT_NOFILE to 7 (the station can no
// longer accept or open anything) or renices it. With Landlock before ABI 6
// it can also kill it. Confinement() says only "own session and process
// group". Fix: in that mode deny prlimit64/setrlimit-on-others,
// setpriority, ioprio_set (and kill/tgkill/pidfd_send_signal below ABI 6)
// in the seccomp program unless the target is the caller — the launcher
// knows nothing of its descendants, so in practice deny prlimit64 with a
// non-zero pid and setpriority/ioprio_set with a non-zero who — or say in
// Confinement() and Describe() that children can reach the station's
// processes.
func TestAttackNoPIDNamespaceChildChangesStationLimits(t *testing.T) {
	withoutNamespaces(t, "simulated")
	name, op := helperProgram(t)
	op.AllowNetwork = true
	g, err := New(Options{Module: "test/mod", Programs: must(Resolve([]string{name}, op)), Env: []string{helperVar}, Operator: op})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	requireLandlock(t, g)
	// A stand-in for the station: a process of the same user, outside the
	// sandbox.
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	pid := strconv.Itoa(victim.Process.Pid)
	out := runReviewHelper(t, g, name, "reach", pid)
	limits, _ := os.ReadFile("/proc/" + pid + "/limits")
	for _, l := range strings.Split(string(limits), "\n") {
		if strings.HasPrefix(l, "Max open files") && strings.Fields(l)[3] == "7" {
			t.Errorf("a child set RLIMIT_NOFILE of process %s outside its sandbox to 7: %q", pid, l)
		}
	}
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, victim.Process.Pid); err == nil && prio == 20-19 {
		t.Errorf("a child reniced process %s outside its sandbox to 19", pid)
	}
	if t.Failed() {
		t.Logf("child: %v", out)
	}
}

// Passing. With the pid namespace, a child cannot name a process outside
// it: kill, a /proc/<pid> directory used as a pidfd, prlimit and
// setpriority all fail, and the process is unchanged.
func TestAttackChildCannotReachOutsideProcesses(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	requireLandlock(t, g)
	if !g.Isolated() {
		t.Skip("no namespaces here")
	}
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	before, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", victim.Process.Pid))
	out := runReviewHelper(t, g, name, "reach", strconv.Itoa(victim.Process.Pid))
	for _, k := range []string{"kill", "pidfd", "prlimit", "setpriority"} {
		if out[k] == "" {
			t.Errorf("%s on process %d outside the sandbox succeeded", k, victim.Process.Pid)
		}
	}
	after, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", victim.Process.Pid))
	if !bytes.Equal(before, after) {
		t.Errorf("limits changed:\n%s\n%s", before, after)
	}
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, victim.Process.Pid); err != nil || prio != 20 {
		t.Errorf("priority of the process is %d (%v), want 0", 20-prio, err)
	}
}

// Passing. A child cannot read what /proc exposes of the station only to
// a ptracer — its environment, memory, maps, descriptors' targets, cwd,
// root, binary, namespaces — as root or as a normal user (Landlock's ptrace
// scope; the existing tests cover only writes).
func TestAttackChildCannotReadStationProc(t *testing.T) {
	g, name := helperGate(t, nil, nil)
	requireLandlock(t, g)
	out := runReviewHelper(t, g, name, "proc", strconv.Itoa(os.Getpid()))
	got, _ := out["proc"].(map[string]any)
	if len(got) == 0 {
		t.Fatalf("helper output %v", out)
	}
	for k, v := range got {
		s, _ := v.(string)
		if strings.HasPrefix(s, "READ ") || strings.HasPrefix(s, "LINK ") || s == "opened" || s == "" {
			t.Errorf("the child reached /proc/<station>/%s: %s", k, s)
		}
	}
}

// Passing. When the station dies (SIGKILL, no chance to clean up), its
// children die with it: Pdeathsig set on the forking thread survives both
// execs (launcher, program) and kills the pid namespace's init.
func TestAttackChildDiesWithStation(t *testing.T) {
	g := shellGate(t, nil)
	if !g.Isolated() {
		t.Skip("no pid namespace here")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("97.%d", os.Getpid())
	t.Cleanup(func() { killByCmdline("sleep\x00" + marker + "\x00") })
	cmd, _ := reviewStationCmd(t, exe, "sleep", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	fixture.Eventuallyf(t, 10*time.Second, func() bool { return len(pidsByCmdline("sleep\x00"+marker+"\x00")) > 0 }, "the child's sleep")
	cmd.Process.Kill()
	fixture.Eventuallyf(t, 10*time.Second, func() bool {
		return len(pidsByCmdline("sleep\x00"+marker+"\x00")) == 0 && len(pidsByCmdline(marker)) == 0
	}, "the child to die with the station")
}

// pidsByCmdline lists processes whose command line contains s.
func pidsByCmdline(s string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(b, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

// Passing. The station's binary replaced on disk (an upgrade renames a new
// file over it) and then removed: children still start through the
// launcher of the running binary (/proc/self/exe), confined — not through
// whatever now has its name, and not unconfined.
func TestAttackLauncherFromReplacedBinary(t *testing.T) {
	requireLandlock(t, shellGate(t, nil))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFile(t, exe, filepath.Join(dir, "station"), 0o755)
	outside := filepath.Join(realPath(t, t.TempDir()), "outside")
	cmd, stdout := reviewStationCmd(t, filepath.Join(dir, "station"), "replaced", outside)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The upgrade: another program renamed over it, then that removed.
	copyFile(t, "/bin/true", filepath.Join(dir, "new"), 0o755)
	if err := os.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "station")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "station")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("second station: %v (%s)", err, stdout)
	}
	var out struct {
		Stdout string
		Exit   int
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("second station printed %q: %v", stdout, err)
	}
	if !strings.Contains(out.Stdout, "NoNewPrivs:\t1") || !strings.Contains(out.Stdout, "Seccomp:\t2") || strings.Contains(out.Stdout, "wrote") || out.Exit == 0 {
		t.Fatalf("child of a replaced station: exit %d, %q; want no_new_privs, seccomp and the write refused", out.Exit, out.Stdout)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the child wrote outside its work dirs")
	}
}

// Passing. The launcher, started by hand as the gate starts it, fails
// closed on every malformed or incomplete spec: a report on fd 3 and exit
// 125, and the program never runs. (TestLauncherFailureStartsNothing covers
// a ruleset that is not one.)
func TestAttackLauncherFailsClosed(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch")
	}
	filter, err := seccompBytes()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	argv := []string{"touch", marker}
	cases := []struct {
		name      string
		spec      []byte
		noReport  bool // no fd 3 at all
		wantStage string
	}{
		{"no seccomp program", launch.Encode(nil, nil, touch, nil, argv), false, "confine"},
		{"a seccomp program of a wrong size", launch.Encode(filter[:len(filter)-3], nil, touch, nil, argv), false, "confine"},
		{"landlock without a ruleset on fd 5", launch.Encode(filter, []string{"landlock"}, touch, nil, argv), false, "confine"},
		{"an unknown flag", launch.Encode(filter, []string{"nolandlock"}, touch, nil, argv), false, "launcher"},
		{"a truncated spec", launch.Encode(filter, nil, touch, nil, argv)[:len(filter)+10], false, "launcher"},
		{"no report pipe", launch.Encode(nil, nil, touch, nil, argv), true, ""},
	}
	for _, c := range cases {
		memfd, err := unix.MemfdCreate("review-spec", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		spec := os.NewFile(uintptr(memfd), "spec")
		spec.Write(c.spec)
		spec.Seek(0, io.SeekStart)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe)
		cmd.Args = []string{"station-launch"}
		cmd.Env = []string{launch.Env + "=1"}
		if c.noReport {
			// fd 3 is the spec: the launcher cannot make a report pipe of it
			// either way, and must not run anything.
			cmd.ExtraFiles = []*os.File{nil, spec}
		} else {
			cmd.ExtraFiles = []*os.File{pw, spec}
		}
		err = cmd.Start()
		pw.Close()
		spec.Close()
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := io.ReadAll(pr)
		pr.Close()
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != launch.Failed {
			t.Errorf("%s: launcher exit %v, want %d", c.name, err, launch.Failed)
		}
		if c.wantStage != "" {
			if r, ok := launch.ParseReport(rep); !ok || r.Stage != c.wantStage {
				t.Errorf("%s: report %q, want stage %s", c.name, rep, c.wantStage)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the program ran", c.name)
		}
	}
}

// Passing. An argument beyond the kernel's per-string limit (but within
// the gate's MaxArgBytes) makes the launcher's exec fail: Run returns an
// error, the program does not run, nothing runs unconfined.
func TestAttackHugeArgumentFailsAtExec(t *testing.T) {
	dir := realPath(t, t.TempDir())
	marker := filepath.Join(dir, "ran")
	g := systemGate(t, nil, []string{"touch"}, Options{WorkDirs: []string{dir}, Operator: Operator{Excluded: []string{dir}}})
	requireLandlock(t, g)
	_, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"touch", marker, strings.Repeat("x", 200<<10)}, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "argument list too long") {
		t.Fatalf("Run with a 200 KiB argument = %v, want exec's E2BIG", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the program ran")
	}
}

// Known gap (low). "It may execute files only from system directories ... so it
// cannot run a program it (or the module) wrote": Landlock checks
// execve(2), not mmap(PROT_EXEC), so the dynamic loader — a system file —
// runs a binary the module wrote into its work dir. Any granted program
// that runs commands (sh, git through an alias or core.sshCommand the
// module writes) gets native code of the module's choosing; it stays
// inside the rest of the confinement. Fix: give children a mount namespace
// in which the work dirs and the scratch dir are remounted MS_NOEXEC (the
// launcher can do it before Landlock forbids mounts; as a normal user the
// user namespace owns that mount namespace), so the loader's PROT_EXEC
// mapping fails; or stop promising it in docs/subprocess.md.
func TestAttackLoaderRunsPlantedBinary(t *testing.T) {
	loader := "/lib64/ld-linux-x86-64.so.2"
	if runtime.GOARCH == "arm64" {
		loader = "/lib/ld-linux-aarch64.so.1"
	}
	if _, err := os.Stat(loader); err != nil {
		t.Skipf("no %s", loader)
	}
	wd := realPath(t, t.TempDir())
	copyFile(t, "/bin/echo", filepath.Join(wd, "planted"), 0o755) // what the module wrote
	g := shellGate(t, nil, wd)
	requireLandlock(t, g)
	resp, err := g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", "./planted direct"}, Dir: wd})
	if err != nil || resp.ExitCode == 0 {
		t.Fatalf("control: the planted file ran directly: %+v, %v", resp, err)
	}
	resp, err = g.Run(callCtx(t), &abi.ProcessRequest{Argv: []string{"sh", "-c", loader + " ./planted planted-ran"}, Dir: wd})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(resp.Stdout), "planted-ran") {
		// Known gap (docs/security.md): Landlock checks execve, not a
		// PROT_EXEC mapping. Closing it needs a mount namespace with the
		// writable trees remounted noexec.
		t.Skipf("known gap: the dynamic loader ran a binary from the work dir: %q", resp.Stdout)
	}
}
