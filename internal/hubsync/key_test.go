package hubsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/hubsync"
)

// TestCreateKeyAndRotate: the first key is made, saved 0600 and
// registered; a second create changes nothing and names the key there; with
// replace, a new key is registered first, the old file is kept beside the
// new one, and both keys stay on the hub.
func TestCreateKeyAndRotate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	file := filepath.Join(e.sess.Station.Home, hubsync.SigningKeyFile)
	k, err := e.sess.CreateKey(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if k.File != file || k.Key.Account != "erin" || k.Replaced != "" || k.Backup != "" {
		t.Errorf("created %+v", k)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	first, err := hubclient.LoadSigner(file)
	if err != nil || first.PublicKey().ID.String() != k.Key.ID {
		t.Fatalf("the file holds %v (%v), the hub registered %s", first, err, k.Key.ID)
	}

	_, err = e.sess.CreateKey(ctx, "", false)
	var ke *hubsync.KeyExistsError
	if !errors.As(err, &ke) || ke.File != file || ke.KeyID != k.Key.ID || !strings.Contains(err.Error(), "already holds signing key "+k.Key.ID) {
		t.Fatalf("second create: %v", err)
	}
	if again, _ := hubclient.LoadSigner(file); again.PublicKey().ID != first.PublicKey().ID {
		t.Error("the second create changed the key file")
	}

	r, err := e.sess.CreateKey(ctx, "", true)
	if err != nil {
		t.Fatal(err)
	}
	backup := file + "." + k.Key.ID + ".old"
	if r.Replaced != k.Key.ID || r.Backup != backup || r.Key.ID == k.Key.ID {
		t.Errorf("rotation: %+v", r)
	}
	if now, err := hubclient.LoadSigner(file); err != nil || now.PublicKey().ID.String() != r.Key.ID {
		t.Errorf("after rotation the file holds %v (%v), want %s", now, err, r.Key.ID)
	}
	if old, err := hubclient.LoadSigner(backup); err != nil || old.PublicKey().ID != first.PublicKey().ID {
		t.Errorf("the old key is not kept in %s: %v", backup, err)
	}
	l, err := e.sess.Keys(ctx, "")
	if err != nil || len(l.Keys) != 2 || l.LocalID != r.Key.ID || l.Account != "erin" || l.File != file {
		t.Errorf("keys after rotation: %+v, %v", l, err)
	}
	for _, k := range l.Keys {
		if k.RevokedAt != nil {
			t.Errorf("key %s was revoked by the rotation", k.ID)
		}
	}
	// A second rotation would overwrite nothing: the backup of the current
	// key is a new name; but a leftover with that name stops it first.
	if err := os.WriteFile(file+"."+r.Key.ID+".old", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sess.CreateKey(ctx, "", true); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("rotation onto an existing backup: %v", err)
	}
	if l, _ := e.sess.Keys(ctx, ""); len(l.Keys) != 2 {
		t.Errorf("a refused rotation registered a key: %d keys", len(l.Keys))
	}
}

// TestCreateKeyTheHubRefuses leaves no key file, and a rotation the hub
// refuses leaves the old key where it was.
func TestCreateKeyTheHubRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	other := filepath.Join(t.TempDir(), "other.pem")
	good := *e.sess
	bad := good
	bad.Client = e.sess.Client.WithToken(hub.TokenPrefix + strings.Repeat("A", 43))
	if _, err := bad.CreateKey(ctx, other, false); hub.CodeOf(err) != hub.CodeUnauthenticated {
		t.Fatalf("create with a refused token: %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key the hub refused was left in %s: %v", other, err)
	}
	k, err := good.CreateKey(ctx, other, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.CreateKey(ctx, other, true); hub.CodeOf(err) != hub.CodeUnauthenticated {
		t.Fatalf("rotation with a refused token: %v", err)
	}
	if s, err := hubclient.LoadSigner(other); err != nil || s.PublicKey().ID.String() != k.Key.ID {
		t.Errorf("a refused rotation changed the key file: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(other), ".*")); len(m) != 0 {
		t.Errorf("a refused rotation left %v", m)
	}
	// Not a key at all: said so, and --force replaces it.
	junk := filepath.Join(t.TempDir(), "junk.pem")
	os.WriteFile(junk, []byte("not a key"), 0o600)
	var ke *hubsync.KeyExistsError
	if _, err := good.CreateKey(ctx, junk, false); !errors.As(err, &ke) || ke.KeyID != "" || !strings.Contains(err.Error(), "is not a signing key") {
		t.Errorf("create over a file that is not a key: %v", err)
	}
	if r, err := good.CreateKey(ctx, junk, true); err != nil || r.Backup != junk+".old" || r.Replaced != "" {
		t.Errorf("replace a file that is not a key: %+v, %v", r, err)
	}
	l, err := good.Keys(ctx, junk+".old")
	if err != nil || l.LocalID != "" || !strings.Contains(l.LocalError, "signing key") {
		t.Errorf("keys with an unreadable key file: %+v, %v", l, err)
	}
}
