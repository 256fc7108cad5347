package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/station-dev/station/internal/netgate"
)

const value = "sk_live_51HUGEvalueThatMustNeverBeSeen"

var ctx = context.Background()

func TestSetLookupRemove(t *testing.T) {
	home := t.TempDir()
	s := Open(home)
	if _, err := s.SecretValue(ctx, "dave/stripe", "STRIPE_KEY"); !errors.Is(err, netgate.ErrSecretNotSet) || !strings.Contains(err.Error(), "station secret set STRIPE_KEY --module dave/stripe") {
		t.Fatalf("unset: %v", err)
	}
	if err := s.Set("", "STRIPE_KEY", []byte("station-wide")); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("dave/stripe", "STRIPE_KEY", []byte(value)); err != nil {
		t.Fatal(err)
	}
	// The module's own value wins; another module gets the station's.
	if v, err := s.SecretValue(ctx, "dave/stripe", "STRIPE_KEY"); err != nil || string(v) != value {
		t.Fatalf("module value = %q, %v", v, err)
	}
	if v, err := s.SecretValue(ctx, "eve/other", "STRIPE_KEY"); err != nil || string(v) != "station-wide" {
		t.Fatalf("station value = %q, %v", v, err)
	}
	// Another process (a second Store) sees a change at once.
	if err := Open(home).Set("dave/stripe", "STRIPE_KEY", []byte(value+"2")); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SecretValue(ctx, "dave/stripe", "STRIPE_KEY"); string(v) != value+"2" {
		t.Fatalf("after another store's Set: %q", v)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].Module != "" || list[1].Module != "dave/stripe" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if ok, err := s.Remove("dave/stripe", "STRIPE_KEY"); !ok || err != nil {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
	if v, _ := s.SecretValue(ctx, "dave/stripe", "STRIPE_KEY"); string(v) != "station-wide" {
		t.Fatalf("after Remove: %q", v)
	}
	if ok, _ := s.Remove("dave/stripe", "STRIPE_KEY"); ok {
		t.Fatal("removed twice")
	}
}

// TestAtRest: no byte of the value is in STATION_HOME, the key and the
// data are apart and private, and a sealed value moved to another name or
// module does not open.
func TestAtRest(t *testing.T) {
	home := t.TempDir()
	s := Open(home)
	if err := s.Set("dave/stripe", "STRIPE_KEY", []byte(value)); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(value)) || bytes.Contains(b, []byte(value[8:20])) {
				t.Errorf("%s holds the value", p)
			}
			fi, _ := os.Stat(p)
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
			}
		}
		return nil
	})
	// Move the sealed value to another module's name.
	p := filepath.Join(home, DataFile)
	b, _ := os.ReadFile(p)
	var f file
	json.Unmarshal(b, &f)
	f.Secrets[0].Module = "eve/thief"
	b, _ = json.Marshal(f)
	os.WriteFile(p, b, 0o600)
	_, err := Open(home).SecretValue(ctx, "eve/thief", "STRIPE_KEY")
	if err == nil || strings.Contains(err.Error(), value) {
		t.Fatalf("a moved value opened: %v", err)
	}
}

func TestKeyFileChecks(t *testing.T) {
	home := t.TempDir()
	if err := Open(home).Set("", "K", []byte("value")); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(home, KeyFile)
	os.Chmod(key, 0o644)
	if _, err := Open(home).SecretValue(ctx, "m/o", "K"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a readable key was used: %v", err)
	}
	os.Chmod(key, 0o600)
	os.Remove(key)
	if _, err := Open(home).SecretValue(ctx, "m/o", "K"); err == nil || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("no key: %v", err)
	}
	// A symbolic link is not a key.
	other := filepath.Join(t.TempDir(), "k")
	os.WriteFile(other, bytes.Repeat([]byte{1}, 32), 0o600)
	os.Symlink(other, key)
	if _, err := Open(home).SecretValue(ctx, "m/o", "K"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a symlinked key: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	s := Open(t.TempDir())
	for _, tt := range []struct{ name, value, want string }{
		{"stripe_key", "v", "upper-case"},
		{"K", "", "empty"},
		{"K", "abc", "at least 4"},
		{"K", "ab\ncd", "control character"},
		{"K", strings.Repeat("v", MaxValue+1), "at most"},
	} {
		err := s.Set("", tt.name, []byte(tt.value))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Set(%q, %.10q) = %v, want %q", tt.name, tt.value, err, tt.want)
		}
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, DataFile), []byte("{not json"), 0o600)
	if _, err := Open(home).List(); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("garbage: %v", err)
	}
}

// TestConcurrentSets: stores of two processes (two Stores on one home)
// setting different secrets at once lose none of them.
func TestConcurrentSets(t *testing.T) {
	home := t.TempDir()
	a, b := Open(home), Open(home)
	errs := make(chan error, 40)
	for i := range 20 {
		go func() { errs <- a.Set("m/a", "A"+strconv.Itoa(i), []byte("value")) }()
		go func() { errs <- b.Set("m/b", "B"+strconv.Itoa(i), []byte("value")) }()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	list, err := Open(home).List()
	if err != nil || len(list) != 40 {
		t.Fatalf("List = %d entries, %v; want 40", len(list), err)
	}
}
