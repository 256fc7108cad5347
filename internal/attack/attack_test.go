package attack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/internal/store"
)

// want is the outcome a case must get.
type want struct {
	ok     bool   // the last action succeeded
	status int    // for http: the status (0: any)
	body   string // for http: a prefix of the body
	data   string // for a successful read, readlink or list: its Result.Data
	msg    string // for a failed action: a substring of its error message

	code       string // error code; alternatives separated by "|"
	capability string // error capability
	target     string // substring of the error target
	reason     string // substring of the error reason

	call string         // the whole call fails with an error containing this (and naming the module)
	kind host.ErrorKind // ... of this kind (fault also accepts crash)
	neg  bool           // raw: the import returned a negative value
	exit string         // exec: "zero" or "nonzero"
	out  string         // exec: stdout
	any  bool           // no outcome beyond the side effects (for probes with no single right answer)
}

// acase is one attack: the probe actions module runs (setup results are
// ignored, the last action is the attack), the outcome, and the side effects
// it may have. Everything else must be unchanged.
type acase struct {
	name   string
	module string
	setup  []probe.Action
	act    probe.Action
	want   want
	reach  []string // fixtures that may see a connection; every other must see none
	fsMay  []string // paths under the tree (relative) the case may change
	// fsAudit, if set, is the target of a filesystem denial of the module
	// that the case must leave in the audit log.
	fsAudit string

	parallel  int        // run the case this many times concurrently ...
	companion *companion // ... alongside this
	pre       func(t *testing.T, w *world)
	during    func(t *testing.T, w *world) // with act blocked in /slow
	post      func(t *testing.T, w *world)
	knownHole string
}

type companion struct {
	module string
	act    probe.Action
	want   want
}

// norm unwraps spawn/collect results and decodes raw http_request buffers.
func norm(r probe.Result) probe.Result {
	switch {
	case r.Op == probe.OpSpawn && r.Result != nil:
		return norm(*r.Result)
	case r.Op == probe.OpCollect && len(r.Results) > 0:
		return norm(r.Results[0])
	case r.Op == probe.OpRaw && r.ABIStatus != nil && r.Buffer != nil:
		if *r.ABIStatus == 0 {
			var resp struct {
				Status int    `json:"status"`
				Body   []byte `json:"body"`
			}
			json.Unmarshal([]byte(*r.Buffer), &resp)
			return probe.Result{Op: r.Op, OK: true, Status: resp.Status, Body: string(resp.Body)}
		}
		var e probe.Error
		json.Unmarshal([]byte(*r.Buffer), &e)
		e.Status = *r.ABIStatus
		return probe.Result{Op: r.Op, Error: &e}
	}
	return r
}

// check returns what is wrong with a call's outcome.
func check(module string, w want, res []probe.Result, n int, err error) string {
	if w.call != "" || w.kind != "" {
		var ce *host.CallError
		switch {
		case err == nil:
			return fmt.Sprintf("call succeeded (%+v), want it to fail with %q", res, w.call)
		case !strings.Contains(err.Error(), "module "+module):
			return fmt.Sprintf("call error %q does not name module %s", err, module)
		case !strings.Contains(err.Error(), w.call):
			return fmt.Sprintf("call error %q does not contain %q", err, w.call)
		case w.kind != "" && (!errors.As(err, &ce) || (ce.Kind != w.kind && !(w.kind == host.KindFault && ce.Kind == host.KindCrash))):
			return fmt.Sprintf("call error %q (%#v), want kind %s", err, ce, w.kind)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("call failed: %v", err)
	}
	if len(res) != n {
		return fmt.Sprintf("got %d results, want %d", len(res), n)
	}
	r := norm(res[n-1])
	if w.any {
		return ""
	}
	if w.neg {
		if r.Value == nil || *r.Value >= 0 {
			return fmt.Sprintf("raw returned %+v, want a negative value", r)
		}
		return ""
	}
	if w.exit != "" {
		if !r.OK || r.ExitCode == nil {
			return fmt.Sprintf("exec did not run: %+v (error %+v)", r, r.Error)
		}
		if (w.exit == "zero") != (*r.ExitCode == 0) {
			return fmt.Sprintf("exec exit code %d, want %s (stderr %q)", *r.ExitCode, w.exit, r.Stderr)
		}
		if w.out != "" && r.Stdout != w.out {
			return fmt.Sprintf("exec stdout %q, want %q", r.Stdout, w.out)
		}
		return ""
	}
	if w.ok {
		if !r.OK {
			return fmt.Sprintf("failed: %+v, want success", r.Error)
		}
		if w.status != 0 && r.Status != w.status {
			return fmt.Sprintf("status %d, want %d", r.Status, w.status)
		}
		if w.body != "" && !strings.HasPrefix(r.Body, w.body) {
			return fmt.Sprintf("body %q, want prefix %q", r.Body, w.body)
		}
		if w.data != "" && r.Data != w.data {
			return fmt.Sprintf("data %q, want %q", r.Data, w.data)
		}
		return ""
	}
	if r.OK || r.Error == nil {
		return fmt.Sprintf("succeeded (%+v), want a refusal", r)
	}
	e := r.Error
	if w.code != "" && !contains(strings.Split(w.code, "|"), e.Code) {
		return fmt.Sprintf("error %+v, want code %s", e, w.code)
	}
	if w.capability != "" && e.Capability != w.capability {
		return fmt.Sprintf("error %+v, want capability %s", e, w.capability)
	}
	if w.target != "" && !strings.Contains(e.Target, w.target) {
		return fmt.Sprintf("error %+v, want target containing %q", e, w.target)
	}
	if w.reason != "" && !strings.Contains(e.Reason, w.reason) {
		return fmt.Sprintf("error %+v, want reason containing %q", e, w.reason)
	}
	if w.msg != "" && !strings.Contains(e.Message, w.msg) {
		return fmt.Sprintf("error %q, want one containing %q", e.Message, w.msg)
	}
	if e.Code == "denied" && !strings.Contains(e.Message, "module "+module+":") {
		return fmt.Sprintf("denial %q does not name module %s", e.Message, module)
	}
	return ""
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (w *world) deniedSince(t *testing.T, since time.Time) []store.AuditRecord {
	t.Helper()
	if err := w.st.Audit.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := w.st.Store.Audit(context.Background(), store.AuditFilter{DeniedOnly: true, Since: since, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// runCase runs c in w and checks its outcome and side effects.
func runCase(t *testing.T, w *world, c acase) {
	if c.knownHole != "" {
		t.Skip("known hole: " + c.knownHole)
	}
	if c.module == "" {
		c.module = modStripe
	}
	w.resetOut()
	if c.pre != nil {
		c.pre(t, w)
	}
	before, files, queries := w.accepted(), snapshot(w.d), w.dns.n.Load()
	since := time.Now()
	actions := append(append([]probe.Action{}, c.setup...), c.act)

	n := max(c.parallel, 1)
	var wg sync.WaitGroup
	errs := make(chan string, 2*n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.run(c.module, actions...)
			if msg := check(c.module, c.want, res, len(actions), err); msg != "" {
				errs <- msg
			}
		}()
		if c.companion != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := w.run(c.companion.module, c.companion.act)
				if msg := check(c.companion.module, c.companion.want, res, 1, err); msg != "" {
					errs <- "companion " + c.companion.module + ": " + msg
				}
			}()
		}
	}
	if c.during != nil {
		select {
		case <-w.slowIn:
		case <-time.After(20 * time.Second):
			t.Fatal("the module's request never reached /slow")
		}
		c.during(t, w)
		close(w.slowRelease)
	}
	wg.Wait()
	close(errs)
	seen := map[string]bool{}
	for msg := range errs {
		if !seen[msg] {
			seen[msg] = true
			t.Error(msg)
		}
	}

	// Side effects: connections, files, audit attribution.
	after := w.accepted()
	for name, b := range before {
		if !contains(c.reach, name) && after[name] != b {
			t.Errorf("fixture %s accepted %d connection(s), want none", name, after[name]-b)
		}
	}
	sameTree(t, w.d, files, snapshot(w.d), c.fsMay)
	if q := w.dns.n.Load() - queries; q != 0 {
		t.Errorf("%d DNS queries were made; every name is either in the resolve map or refused before resolution", q)
	}
	for _, r := range w.deniedSince(t, since) {
		if r.Module != c.module && (c.companion == nil || r.Module != c.companion.module) {
			t.Errorf("denial %+v attributed to %s, want %s", r.Decision, r.Module, c.module)
		}
	}
	if c.want.code == "denied" && c.want.capability != "" {
		found := false
		for _, r := range w.deniedSince(t, since) {
			found = found || (r.Module == c.module && string(r.Capability) == c.want.capability)
		}
		if !found {
			t.Errorf("no %s denial of %s in the audit log", c.want.capability, c.module)
		}
	}
	if c.fsAudit != "" {
		found := false
		for _, r := range w.deniedSince(t, since) {
			found = found || (r.Module == c.module && r.Capability == "filesystem" && r.Target == c.fsAudit)
		}
		if !found {
			t.Errorf("no filesystem denial of %s for %s in the audit log", c.module, c.fsAudit)
		}
	}
	if c.post != nil {
		c.post(t, w)
	}
	// The module itself still runs (a fresh instance if the last was discarded).
	if res, err := w.run(c.module, probe.Env()); err != nil || len(res) != 1 || !res[0].OK {
		t.Errorf("module %s no longer runs: %v %+v", c.module, err, res)
	}
}

func TestAttacks(t *testing.T) {
	start := time.Now()
	main, strict := newWorld(t, false), newWorld(t, true)
	t.Logf("setup took %v", time.Since(start))

	net := netCases(main)
	bh := boundaryCases()
	inst := installCases()
	for i := range bh["G"] {
		bh["G"][i].module = modRun
	}
	for i := range bh["H"] {
		bh["H"][i].module = modRun
	}
	classes := []struct {
		class string
		w     *world
		cases []acase
	}{
		{"A", main, net["A"]},
		{"B", main, net["B"]},
		{"C", main, net["C"]},
		{"C-strict", strict, strictCases(strict)},
		{"D", main, net["D"]},
		{"E", main, fsCases(main)},
		{"F", main, execCases(main)},
		{"G", main, bh["G"]},
		{"H", main, bh["H"]},
	}
	counts := map[string]int{}
	for _, cl := range classes {
		t.Run(cl.class, func(t *testing.T) {
			for _, c := range cl.cases {
				if c.knownHole == "" {
					counts[cl.class[:1]]++
				}
				t.Run(c.name, func(t *testing.T) { runCase(t, cl.w, c) })
			}
			if cl.class == "F" {
				for _, l := range strings.Split(cl.w.log.String(), "\n") {
					if strings.Contains(l, "subprocess") && strings.Contains(strings.ToLower(l), "confine") {
						t.Log(l)
					}
				}
			}
			cl.w.alive(t)
			main.alive(t)
		})
	}
	for _, cl := range []string{"G", "I"} {
		t.Run(cl+"-install", func(t *testing.T) {
			for _, c := range inst[cl] {
				counts[cl]++
				t.Run(c.name, func(t *testing.T) { runInstallCase(t, main, c) })
			}
			main.alive(t)
			strict.alive(t)
		})
	}
	t.Logf("cases per class: %v; took %v", counts, time.Since(start))
}
