package hubsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubserver/hubtest"
	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

func TestPermissionsToHub(t *testing.T) {
	cases := []struct {
		name string
		in   string // the station's stored approval, JSON
		want hub.Permissions
	}{
		{"nothing", `{"network":[],"subprocess":false,"filesystem_writes":[]}`,
			hub.Permissions{Network: []string{}, FilesystemWrites: []string{}}},
		{"hosts and writes", `{"network":["api.stripe.com"],"subprocess":false,"filesystem_writes":["~/out/**"],"filesystem_reads":["/data/**"]}`,
			hub.Permissions{Network: []string{"api.stripe.com"}, FilesystemWrites: []string{"~/out/**"}, FilesystemReads: []string{"/data/**"}}},
		{"programs, without their resolved paths", `{"network":[],"subprocess":{"allow":["git"]},"filesystem_writes":[],"programs":[{"name":"git","path":"/usr/bin/git","digest":"sha256:00"}],"subprocess_env":["HOME"]}`,
			hub.Permissions{Network: []string{}, FilesystemWrites: []string{}, Subprocess: hub.Subprocess{Allow: []string{"git"}}, Env: []string{"HOME"}}},
		{"any program", `{"network":[],"subprocess":true,"filesystem_writes":[]}`,
			hub.Permissions{Network: []string{}, FilesystemWrites: []string{}, Subprocess: hub.Subprocess{Any: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p station.Permissions
			if err := json.Unmarshal([]byte(c.in), &p); err != nil {
				t.Fatal(err)
			}
			if got := hubsync.ToHub(p); !reflect.DeepEqual(got, c.want) {
				t.Errorf("ToHub(%s)\n got %+v\nwant %+v", c.in, got, c.want)
			}
		})
	}
}

// env is a hub with a publisher, dave, and a station logged in as erin.
type env struct {
	h      *hubtest.Hub
	dave   *hubclient.Client
	signer *hubclient.Signer
	sess   *hubsync.Session
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	h := hubtest.Start(t)
	dave, signer := h.Publisher(t, "dave")
	st, err := station.Open(ctx, t.TempDir(), station.Options{Cache: testCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	erin := h.Account(t, "erin")
	l, err := hubsync.Login(ctx, st, h.URL, erin)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := hubsync.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Login != l {
		t.Fatalf("Open's login %+v, Login's %+v", sess.Login, l)
	}
	return &env{h: h, dave: dave, signer: signer, sess: sess}
}

// publish publishes dave/hello@version (the hello example's binary) with
// allow as its hosts, signed by s, and returns its lockfile entry with
// perms as the team's approval.
func (e *env) publish(t *testing.T, s *hubclient.Signer, version string, allow []string, perms hub.Permissions) hub.LockedModule {
	t.Helper()
	m := "id: dave/hello\nversion: \"" + version + "\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: [" + strings.Join(allow, ", ") + "]\n"
	b, err := hubclient.NewBundle([]byte(m), wasmbuild.ForTest(t, "examples/hello"), s)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.dave.Publish(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return hub.LockedModule{ID: v.Module, Version: v.Version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest, Permissions: perms}
}

func lockfile(rev int64, ms ...hub.LockedModule) hub.TeamLockfile {
	return hub.TeamLockfile{Team: "acme", Revision: rev, Lockfile: hub.Lockfile{Modules: ms, Workflows: []hub.Workflow{}}}
}

func none() hub.Permissions {
	return hub.Permissions{Network: []string{}, FilesystemWrites: []string{}}
}

// TestApplyRefusesMoreThanTheTeamApproved: a pinned version whose manifest
// asks for more than the lockfile's permissions is not installed, even with
// an approver that says yes to everything.
func TestApplyRefusesMoreThanTheTeamApproved(t *testing.T) {
	e := newEnv(t)
	lm := e.publish(t, e.signer, "1.0.0", []string{"api.stripe.com"}, none())
	yes := func(hubsync.Plan) (bool, error) { return true, nil }
	rep, err := e.sess.Apply(context.Background(), lockfile(1, lm), yes)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failed) != 1 || !strings.Contains(rep.Failed[0].Error(), "asks for more than the team's lockfile approved: it may now connect to api.stripe.com") {
		t.Errorf("failed = %v", rep.Failed)
	}
	if _, err := e.sess.Station.Store.Module(context.Background(), "dave/hello"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the module was installed: %v", err)
	}
	team, _ := e.sess.Station.Store.HubTeam(context.Background(), "acme")
	if !strings.Contains(team.LastError, "dave/hello@1.0.0") {
		t.Errorf("team's last error = %q", team.LastError)
	}
}

// TestApplyInvalidLockfileChangesNothing: a lockfile that does not validate
// is refused before anything is recorded or installed.
func TestApplyInvalidLockfileChangesNothing(t *testing.T) {
	e := newEnv(t)
	lm := e.publish(t, e.signer, "1.0.0", nil, none())
	bad := lm
	bad.WasmDigest = "sha256:nothex"
	for name, tl := range map[string]hub.TeamLockfile{
		"bad digest":   lockfile(1, bad),
		"listed twice": lockfile(1, lm, lm),
		"bad team":     {Team: "Acme!", Revision: 1},
	} {
		if _, err := e.sess.Apply(context.Background(), tl, nil); err == nil {
			t.Errorf("%s: Apply succeeded", name)
		}
	}
	teams, _ := e.sess.Station.Store.HubTeams(context.Background())
	mods, _ := e.sess.Station.Store.Modules(context.Background())
	if len(teams) != 0 || len(mods) != 0 {
		t.Errorf("a refused lockfile changed the station: teams %v, modules %v", teams, mods)
	}
}

// TestApplyPendingKeyChange: without an approver, a version signed by a
// key not pinned for its owner is recorded as pending, and the pinned
// version stays installed; an approval then installs it and pins the key.
func TestApplyPendingKeyChange(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	v1 := e.publish(t, e.signer, "1.0.0", nil, none())
	rep, err := e.sess.Apply(ctx, lockfile(1, v1), nil)
	if err != nil || len(rep.Installed) != 1 {
		t.Fatalf("apply 1.0.0 = %+v, %v", rep, err)
	}
	other, err := hubclient.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dave.AddKey(ctx, other.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v2 := e.publish(t, other, "1.1.0", nil, none())
	rep, err = e.sess.Apply(ctx, lockfile(2, v2), nil)
	if err != nil || len(rep.Pending) != 1 || !rep.Pending[0].KeyChange {
		t.Fatalf("apply 1.1.0 by another key = %+v, %v", rep, err)
	}
	ps, _ := e.sess.Station.Store.HubPendings(ctx, "acme")
	if len(ps) != 1 || ps[0].FromVersion != "1.0.0" || !strings.Contains(ps[0].Escalations[0], "IS SIGNED BY KEY "+other.PublicKey().ID.String()) {
		t.Errorf("pending = %+v", ps)
	}
	if rec, _ := e.sess.Station.Store.Module(ctx, "dave/hello"); rec.Version != "1.0.0" {
		t.Errorf("installed %s while the key change was pending", rec.Version)
	}

	rep, err = e.sess.Apply(ctx, lockfile(2, v2), func(p hubsync.Plan) (bool, error) { return p.KeyChange, nil })
	if err != nil || len(rep.Installed) != 1 {
		t.Fatalf("approved apply = %+v, %v", rep, err)
	}
	keys, _ := e.sess.Station.Store.HubKeys(ctx, e.h.URL, "dave")
	if len(keys) != 2 {
		t.Errorf("pinned keys after approval = %v, want both", keys)
	}
	if ps, _ := e.sess.Station.Store.HubPendings(ctx, "acme"); len(ps) != 0 {
		t.Errorf("pending after approval = %+v", ps)
	}
}

// TestApplyDoesNotSilentlyReplaceALocalModule: a module the operator
// installed from a directory is not replaced by a hub version of the same
// id — whoever holds that name on the hub — even when the version asks for
// nothing beyond what was approved: its code is not the code the operator
// approved. Without an approver the change waits as pending.
func TestApplyDoesNotSilentlyReplaceALocalModule(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	dir := t.TempDir()
	m := "id: dave/hello\nversion: \"1.0.0\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: [api.stripe.com]\n"
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	local, err := e.sess.Station.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil })
	if err != nil {
		t.Fatal(err)
	}

	perms := none()
	perms.Network = []string{"api.stripe.com"}
	lm := e.publish(t, e.signer, "1.1.0", []string{"api.stripe.com"}, perms)
	rep, err := e.sess.Apply(ctx, lockfile(1, lm), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Installed) != 0 || len(rep.Pending) != 1 {
		t.Fatalf("apply over a local module: installed %+v, pending %+v, failed %v", rep.Installed, rep.Pending, rep.Failed)
	}
	if got := strings.Join(rep.Pending[0].Differences(), "; "); !strings.Contains(got, "not installed from "+e.h.URL) {
		t.Errorf("differences = %q, want the origin named", got)
	}
	if rec, _ := e.sess.Station.Store.Module(ctx, "dave/hello"); rec.Digest != local.Digest || rec.Version != "1.0.0" {
		t.Errorf("the local module was replaced by %s (%s)", rec.Version, rec.Digest)
	}
}

// TestApplyAsksBeforeADowngrade: a lockfile (or a hub) that rolls a module
// back to an older version — one with a known flaw, say — is asked about,
// even when the older version asks for nothing beyond the approval.
func TestApplyAsksBeforeADowngrade(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	v1 := e.publish(t, e.signer, "1.0.0", nil, none())
	v2 := e.publish(t, e.signer, "1.1.0", nil, none())
	if rep, err := e.sess.Apply(ctx, lockfile(1, v2), nil); err != nil || len(rep.Installed) != 1 {
		t.Fatalf("apply 1.1.0 = %+v, %v", rep, err)
	}
	rep, err := e.sess.Apply(ctx, lockfile(2, v1), nil)
	if err != nil || len(rep.Installed) != 0 || len(rep.Pending) != 1 || !rep.Pending[0].Downgrade {
		t.Fatalf("apply 1.0.0 over 1.1.0 = %+v, %v; want it pending as a downgrade", rep, err)
	}
	if got := strings.Join(rep.Pending[0].Differences(), "; "); !strings.Contains(got, "IS AN OLDER VERSION (1.0.0) than the installed 1.1.0") {
		t.Errorf("differences = %q", got)
	}
	if rec, _ := e.sess.Station.Store.Module(ctx, "dave/hello"); rec.Version != "1.1.0" {
		t.Errorf("rolled back to %s without approval", rec.Version)
	}
	if rep, err := e.sess.Apply(ctx, lockfile(2, v1), func(p hubsync.Plan) (bool, error) { return p.Downgrade, nil }); err != nil || len(rep.Installed) != 1 {
		t.Fatalf("approved downgrade = %+v, %v", rep, err)
	}
}

// TestApplySecretBindings: a lockfile carries a module's secret names and
// hosts, never a value; applying it names the secrets this station has
// no value for, and a version whose secret goes to a host the team did
// not approve is not installed.
func TestApplySecretBindings(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	publish := func(version, hosts string) hub.LockedModule {
		m := "id: dave/hello\nversion: \"" + version + "\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: [api.stripe.com, api.groq.com]\n" +
			"  secrets:\n    STRIPE_KEY: {hosts: [" + hosts + "]}\n"
		b, err := hubclient.NewBundle([]byte(m), wasmbuild.ForTest(t, "examples/hello"), e.signer)
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.dave.Publish(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return hub.LockedModule{ID: v.Module, Version: v.Version, ManifestDigest: v.ManifestDigest, WasmDigest: v.WasmDigest,
			Permissions: hub.Permissions{Network: []string{"api.stripe.com", "api.groq.com"}, FilesystemWrites: []string{},
				Secrets: []hub.SecretBinding{{Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}, In: []string{"headers"}}}}}
	}
	yes := func(hubsync.Plan) (bool, error) { return true, nil }
	lm := publish("1.0.0", "api.stripe.com")
	rep, err := e.sess.Apply(ctx, lockfile(1, lm), yes)
	if err != nil || len(rep.Installed) != 1 {
		t.Fatalf("apply = %+v, %v", rep, err)
	}
	if want := []hubsync.SecretNeed{{Module: "dave/hello", Name: "STRIPE_KEY", Hosts: []string{"api.stripe.com"}}}; !reflect.DeepEqual(rep.SecretsNeeded, want) {
		t.Fatalf("SecretsNeeded = %+v, want %+v", rep.SecretsNeeded, want)
	}
	if err := e.sess.Station.SetSecret(ctx, "dave/hello", "STRIPE_KEY", []byte("sk_live_x")); err != nil {
		t.Fatal(err)
	}
	if rep, err = e.sess.Apply(ctx, lockfile(2, lm), yes); err != nil || len(rep.SecretsNeeded) != 0 {
		t.Fatalf("after secret set: %+v, %v", rep, err)
	}

	// 1.1.0 also sends the key to api.groq.com, which the team did not
	// approve for it (though the team approved the host).
	wider := publish("1.1.0", "api.stripe.com, api.groq.com")
	rep, err = e.sess.Apply(ctx, lockfile(3, wider), yes)
	if len(rep.Failed) != 1 || !strings.Contains(rep.Failed[0].Error(), "may now have secret STRIPE_KEY sent to api.groq.com") {
		t.Fatalf("a wider secret binding: %+v, %v", rep, err)
	}
	if in, _ := e.sess.Station.Store.Module(ctx, "dave/hello"); in.Version != "1.0.0" {
		t.Errorf("installed %s after a refused upgrade", in.Version)
	}
}
