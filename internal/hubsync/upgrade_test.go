package hubsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/hubsync"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/internal/wasmbuild"
)

// localHello writes dave/hello@version as a module directory: the bytes
// env.publish publishes for it with no hosts.
func localHello(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	m := "id: dave/hello\nversion: \"" + version + "\"\nwasm: module.wasm\ncommands:\n  - name: greet\nrequires:\n  network:\n    allow: []\n"
	if err := os.WriteFile(filepath.Join(dir, "module.yaml"), []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.wasm"), wasmbuild.ForTest(t, "examples/hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func upgradeOne(t *testing.T, e *env, refs []string, approve hubsync.Approver) (*hubsync.UpgradeResult, error) {
	t.Helper()
	rs, err := e.sess.Upgrade(context.Background(), refs, approve)
	if len(rs) != 1 {
		t.Fatalf("Upgrade(%v) = %+v, %v; want one result", refs, rs, err)
	}
	return rs[0], err
}

// TestUpgrade: to the latest version, to exactly a version (an older one
// asks), up to date, declined while the installed version keeps running;
// and a module that is not from the hub is not upgraded.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.publish(t, e.signer, "1.0.0", nil, none())
	e.publish(t, e.signer, "1.1.0", nil, none())
	if _, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0"}, nil); err != nil {
		t.Fatal(err)
	}
	installed := func() string {
		t.Helper()
		rec, err := e.sess.Station.Store.Module(ctx, "dave/hello")
		if err != nil {
			t.Fatal(err)
		}
		return rec.Version
	}

	if r, err := upgradeOne(t, e, nil, nil); err != nil || *r != (hubsync.UpgradeResult{Module: "dave/hello", From: "1.0.0", To: "1.1.0", Status: hubsync.Upgraded}) {
		t.Errorf("upgrade to the latest: %+v, %v", r, err)
	}
	if r, err := upgradeOne(t, e, []string{"dave/hello"}, nil); err != nil || r.Status != hubsync.UpToDate || r.To != "1.1.0" {
		t.Errorf("up to date: %+v, %v", r, err)
	}
	if r, err := upgradeOne(t, e, []string{"dave/hello@1.1.0"}, nil); err != nil || r.Status != hubsync.UpToDate {
		t.Errorf("to the installed version: %+v, %v", r, err)
	}

	// An older version is a downgrade: it waits, then applies approved.
	r, err := upgradeOne(t, e, []string{"dave/hello@1.0.0"}, nil)
	var pending *hubsync.PendingError
	if r.Status != hubsync.Declined || !errors.As(err, &pending) || !pending.Plan.Downgrade || installed() != "1.1.0" {
		t.Errorf("downgrade without approval: %+v, %v; installed %s", r, err, installed())
	}
	var asked []hubsync.Plan
	yes := func(p hubsync.Plan) (bool, error) { asked = append(asked, p); return true, nil }
	if r, err := upgradeOne(t, e, []string{"dave/hello@1.0.0"}, yes); err != nil || r.Status != hubsync.Upgraded || r.From != "1.1.0" || r.To != "1.0.0" || installed() != "1.0.0" || len(asked) != 1 {
		t.Errorf("approved downgrade: %+v, %v; installed %s, asked %d times", r, err, installed(), len(asked))
	}

	// More than approved: declined, the installed version stays.
	e.publish(t, e.signer, "1.2.0", []string{"api.stripe.com"}, none())
	no := func(hubsync.Plan) (bool, error) { return false, nil }
	r, err = upgradeOne(t, e, []string{"dave/hello"}, no)
	if r.Status != hubsync.Declined || !errors.Is(err, station.ErrNotApproved) || r.To != "1.2.0" || installed() != "1.0.0" {
		t.Errorf("declined upgrade: %+v, %v; installed %s", r, err, installed())
	}

	// Not installed, and not from a hub.
	if r, err := upgradeOne(t, e, []string{"dave/other"}, yes); r.Status != hubsync.Failed || err == nil || !strings.Contains(err.Error(), "dave/other: it is not installed") {
		t.Errorf("upgrade of a module not installed: %+v, %v", r, err)
	}
	if _, err := e.sess.Upgrade(ctx, []string{"not a ref"}, yes); err == nil {
		t.Error("Upgrade of a bad reference succeeded")
	}
	if _, err := e.sess.Station.Install(ctx, localHello(t, "9.0.0"), func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if r, err := upgradeOne(t, e, []string{"dave/hello"}, yes); r.Status != hubsync.Failed || !errors.Is(err, hubsync.ErrNotFromHub) || installed() != "9.0.0" {
		t.Errorf("upgrade of a module from a directory: %+v, %v", r, err)
	}
	if rs, err := e.sess.Upgrade(ctx, nil, yes); err != nil || len(rs) != 0 {
		t.Errorf("upgrade of everything from the hub: %+v, %v; want the directory's module left alone", rs, err)
	}
}

// TestOriginAndRemove: show says where a module came from — a directory,
// or the hub with its key — and the hub's version replaces a directory's
// with one install that asks first, even when its bytes are the same.
// Remove forgets the origin.
func TestOriginAndRemove(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st := e.sess.Station
	e.publish(t, e.signer, "1.0.0", nil, none())
	dir := localHello(t, "1.0.0") // the same bytes as the hub's 1.0.0
	if _, err := st.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	in, err := hubsync.Describe(ctx, st, "dave/hello")
	if err != nil {
		t.Fatal(err)
	}
	if in.Origin != (hubsync.Origin{Kind: hubsync.FromDirectory, Dir: dir}) || in.Manifest.ID != "dave/hello" || in.Limits.Timeout != "30s" {
		t.Errorf("Describe of a directory install: %+v", in)
	}

	var asked []hubsync.Plan
	yes := func(p hubsync.Plan) (bool, error) { asked = append(asked, p); return true, nil }
	res, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0", Ask: true}, yes)
	if err != nil || !res.Changed || len(asked) != 1 || !asked[0].OriginChange {
		t.Fatalf("the hub's version in place of the directory's: %+v, %v; asked %+v", res, err, asked)
	}
	if d := strings.Join(asked[0].Differences(), "; "); !strings.Contains(d, "REPLACES dave/hello@1.0.0, which was not installed from "+e.h.URL) {
		t.Errorf("differences: %s", d)
	}
	in, err = hubsync.Describe(ctx, st, "dave/hello")
	if err != nil {
		t.Fatal(err)
	}
	if in.Origin != (hubsync.Origin{Kind: hubsync.FromHub, Hub: e.h.URL, KeyID: e.signer.PublicKey().ID.String()}) {
		t.Errorf("Describe of a hub install: %+v", in.Origin)
	}
	// Now it is from the hub: asked again, nothing changes.
	if res, err := e.sess.Install(ctx, hubsync.Request{ID: "dave/hello", Version: "1.0.0", Ask: true}, yes); err != nil || res.Changed || len(asked) != 1 {
		t.Errorf("the same version again: %+v, %v", res, err)
	}

	// The same bytes from a directory again: from that directory.
	if _, err := st.Install(ctx, dir, func(station.Plan) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if in, _ := hubsync.Describe(ctx, st, "dave/hello"); in.Origin.Kind != hubsync.FromDirectory {
		t.Errorf("reinstalled from a directory: %+v", in.Origin)
	}

	if err := hubsync.Remove(ctx, st, "dave/hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := hubsync.Describe(ctx, st, "dave/hello"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Describe after Remove: %v", err)
	}
	if _, err := st.Store.HubOrigin(ctx, "dave/hello"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the origin outlived the module: %v", err)
	}
	if err := hubsync.Remove(ctx, st, "dave/hello"); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("Remove of a module not installed: %v", err)
	}
}

// TestPublish: Publish signs with the key file, which must exist.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.sess.Publish(ctx, localHello(t, "1.0.0"), filepath.Join(t.TempDir(), "none.pem")); !errors.Is(err, hubsync.ErrNoSigningKey) {
		t.Errorf("publish without a key: %v", err)
	}
}
