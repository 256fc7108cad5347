package execgate

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/station-dev/station/internal/sandbox"
	"github.com/station-dev/station/sdk/abi"
)

// FuzzRequest: whatever the request, Run never panics, records exactly one
// decision that agrees with its result, and runs a program only when every
// rule allows it: argv[0] is a granted name, no string holds a NUL, every
// variable is declared and allowed, the directory is inside the work dir.
func FuzzRequest(f *testing.F) {
	wd := f.TempDir()
	rwd, err := filepath.EvalSymlinks(wd)
	if err != nil {
		f.Fatal(err)
	}
	rec := &recorder{}
	progs, err := Resolve([]string{"true"}, Operator{})
	if err != nil {
		f.Fatal(err)
	}
	g, err := New(Options{Module: "fuzz/mod", Programs: progs, Env: []string{"FOO"}, WorkDirs: []string{wd}, Recorder: rec})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { g.Close() })
	seeds := []struct {
		argv0, arg, key, val, dir string
		stdin                     []byte
	}{
		{"true", "", "", "", "", nil},
		{"true", "$(id)", "FOO", "bar", wd, []byte("in")},
		{"curl", "https://evil.example", "", "", "", nil},
		{"/bin/true", "", "", "", "", nil},
		{"sh", "-c", "", "", "", nil},
		{"", "", "", "", "", nil},
		{"true", "a\x00b", "", "", "", nil},
		{"true", "", "LD_PRELOAD", "/tmp/x.so", "", nil},
		{"true", "", "BAR", "1", "", nil},
		{"true", "", "PATH", "/tmp", "", nil},
		{"true", "", "A=B", "1", "", nil},
		{"true", "", "FOO", "a\x00b", "", nil},
		{"true", "", "", "", "/etc", nil},
		{"true", "", "", "", wd + "/../etc", nil},
		{"true", "", "", "", wd + "/missing", nil},
		{"true", "", "", "", "relative", nil},
		{"tr\x1bue", "", "", "", "", nil},
	}
	for _, s := range seeds {
		f.Add(s.argv0, s.arg, s.key, s.val, s.dir, s.stdin)
	}
	f.Fuzz(func(t *testing.T, argv0, arg, key, val, dir string, stdin []byte) {
		req := &abi.ProcessRequest{Argv: []string{argv0}, Dir: dir, Stdin: stdin}
		if arg != "" {
			req.Argv = append(req.Argv, arg)
		}
		if key != "" {
			req.Env = map[string]string{key: val}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ctx = sandbox.WithCall(ctx, &sandbox.Call{Module: "fuzz/mod", Command: "fuzz"})

		n := len(rec.All())
		resp, err := g.Run(ctx, req)
		ds := rec.All()[n:]
		if len(ds) != 1 {
			t.Fatalf("Run(%+v) recorded %d decisions, want 1: %+v", req, len(ds), ds)
		}
		d := ds[0]
		if d.Module != "fuzz/mod" || d.Command != "fuzz" || d.Capability != sandbox.Subprocess || d.Target == "" {
			t.Fatalf("decision %+v lacks attribution", d)
		}
		if len(d.Target) > sandbox.MaxTargetLen || strings.ContainsAny(d.Target, "\x00\n\r\x1b") {
			t.Fatalf("decision target %q is not sanitized", d.Target)
		}
		var v *sandbox.Violation
		switch {
		case err == nil:
			if !d.Allowed || !strings.HasPrefix(d.Target, "true (") || resp == nil {
				t.Fatalf("Run(%+v) succeeded with decision %+v", req, d)
			}
			used := arg + dir
			if key != "" {
				used += key + val // val is only sent with a key
			}
			if argv0 != "true" || strings.Contains(used, "\x00") || (key != "" && key != "FOO") {
				t.Fatalf("Run(%+v) ran a request the policy refuses", req)
			}
			if dir != "" && !within(realish(dir), rwd) {
				t.Fatalf("Run(%+v) ran outside the work dir", req)
			}
		case errors.As(err, &v):
			if d.Allowed || d.Target != v.Target || d.Reason != v.Reason || v.Module != "fuzz/mod" {
				t.Fatalf("violation %+v recorded as %+v", v, d)
			}
		case errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge):
			if d.Allowed || d.Reason != err.Error() {
				t.Fatalf("refusal %v recorded as %+v", err, d)
			}
		default:
			t.Fatalf("Run(%+v): unexpected error %v (decision %+v)", req, err, d)
		}
	})
}
