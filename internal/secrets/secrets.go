// Package secrets keeps the values of the secrets modules declare
// (requires.secrets), encrypted at rest.
//
// The values are in STATION_HOME/secrets.json, each sealed with AES-256-GCM
// under a key kept apart from them, in STATION_HOME/secrets.key (32 random
// bytes, mode 0600, made on the first Set). The sealed value's additional
// data is its scope and name, so a sealed value moved to another name or
// module does not open. A copy of secrets.json alone (a backup, a synced
// folder, a bug report) holds no value; the key file refuses to be used
// when anyone but its owner may read it.
//
// A secret is set for one module ("dave/stripe") or for the whole station
// (scope ""); a module's own value wins. Nothing in this package prints a
// value: errors name the secret, never what it holds.
package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/station-dev/station/internal/atomicfile"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/sdk/abi"
)

// File names in STATION_HOME.
const (
	DataFile = "secrets.json"
	KeyFile  = "secrets.key"
	LockFile = "secrets.lock"
)

// MinValue and MaxValue bound a secret's value. Below MinValue it is no
// secret, and taking it out of every response would garble them.
const (
	MinValue = 4
	MaxValue = 16 << 10
)

// maxFile bounds secrets.json.
const maxFile = 8 << 20

// Entry describes one stored secret, never its value.
type Entry struct {
	Name   string    `json:"name"`
	Module string    `json:"module,omitempty"` // "" for the whole station
	SetAt  time.Time `json:"set_at"`
}

// Store is the secrets of one STATION_HOME. It is safe for concurrent use,
// and a value set by another process is seen at the next lookup.
type Store struct {
	home string

	mu    sync.Mutex
	key   []byte
	stamp fileStamp
	data  *file
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(fi fs.FileInfo) fileStamp { return fileStamp{fi.Size(), fi.ModTime()} }

// file is secrets.json.
type file struct {
	Version int      `json:"version"`
	Secrets []sealed `json:"secrets"`
}

type sealed struct {
	Entry
	Nonce []byte `json:"nonce"`
	Value []byte `json:"value"` // AES-256-GCM of the value
}

// Open returns the store of home; nothing is read until it is used.
func Open(home string) *Store { return &Store{home: home} }

func (s *Store) path(name string) string { return filepath.Join(s.home, name) }

// CheckValue returns what is wrong with a value, or "".
func CheckValue(v []byte) string {
	switch {
	case len(v) == 0:
		return "the value is empty"
	case len(v) < MinValue:
		return fmt.Sprintf("the value is %d bytes; a secret is at least %d", len(v), MinValue)
	case len(v) > MaxValue:
		return fmt.Sprintf("the value is %d bytes; at most %d", len(v), MaxValue)
	}
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return "the value has a control character (a newline, CR, NUL, ...), which no HTTP header may carry"
		}
	}
	return ""
}

// Set stores value as the secret name of module ("" for the whole
// station), replacing any earlier value.
func (s *Store) Set(module, name string, value []byte) error {
	if msg := abi.CheckSecretName(name); msg != "" {
		return fmt.Errorf("secret %q: %s", name, msg)
	}
	if msg := CheckValue(value); msg != "" {
		return fmt.Errorf("secret %s: %s", name, msg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lockFile()
	if err != nil {
		return fmt.Errorf("secrets: lock: %w", err)
	}
	defer unlock()
	key, err := s.loadKey(true)
	if err != nil {
		return err
	}
	f, err := s.load()
	if err != nil {
		return err
	}
	e := sealed{Entry: Entry{Name: name, Module: module, SetAt: time.Now().UTC().Truncate(time.Second)}}
	e.Nonce = make([]byte, 12)
	rand.Read(e.Nonce)
	aead, err := gcm(key)
	if err != nil {
		return err
	}
	e.Value = aead.Seal(nil, e.Nonce, value, aad(module, name))
	f.Secrets = slices.DeleteFunc(f.Secrets, func(x sealed) bool { return x.Name == name && x.Module == module })
	f.Secrets = append(f.Secrets, e)
	return s.save(f)
}

// Remove deletes the secret name of module ("" for the whole station). It
// reports whether there was one.
func (s *Store) Remove(module, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lockFile()
	if err != nil {
		return false, fmt.Errorf("secrets: lock: %w", err)
	}
	defer unlock()
	f, err := s.load()
	if err != nil {
		return false, err
	}
	n := len(f.Secrets)
	f.Secrets = slices.DeleteFunc(f.Secrets, func(x sealed) bool { return x.Name == name && x.Module == module })
	if len(f.Secrets) == n {
		return false, nil
	}
	return true, s.save(f)
}

// List returns every stored secret, by name then module; values are never
// read.
func (s *Store) List() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(f.Secrets))
	for _, e := range f.Secrets {
		out = append(out, e.Entry)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Module, b.Module)
	})
	return out, nil
}

// Lookup returns which stored secret a module's secret name resolves to:
// the module's own, else the station's. ok is false when neither is set.
func (s *Store) Lookup(module, name string) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.load()
	if err != nil {
		return Entry{}, false, err
	}
	e, ok := find(f, module, name)
	return e.Entry, ok, nil
}

func find(f *file, module, name string) (sealed, bool) {
	var station *sealed
	for i := range f.Secrets {
		e := &f.Secrets[i]
		if e.Name != name {
			continue
		}
		if e.Module == module {
			return *e, true
		}
		if e.Module == "" {
			station = e
		}
	}
	if station != nil {
		return *station, true
	}
	return sealed{}, false
}

// SecretValue implements netgate.SecretSource: the value of module's
// secret name, the module's own or else the station's. An unset secret
// wraps netgate.ErrSecretNotSet and says how to set it.
func (s *Store) SecretValue(_ context.Context, module, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.load()
	if err != nil {
		return nil, err
	}
	e, ok := find(f, module, name)
	if !ok {
		return nil, fmt.Errorf("%w: module %s needs secret %s: set it with `station secret set %s --module %s`",
			netgate.ErrSecretNotSet, module, name, name, module)
	}
	key, err := s.loadKey(false)
	if err != nil {
		return nil, err
	}
	aead, err := gcm(key)
	if err != nil {
		return nil, err
	}
	if len(e.Nonce) != aead.NonceSize() {
		return nil, fmt.Errorf("secret %s in %s is damaged: set it again", name, s.path(DataFile))
	}
	v, err := aead.Open(nil, e.Nonce, e.Value, aad(e.Module, e.Name))
	if err != nil {
		return nil, fmt.Errorf("secret %s in %s does not open with %s (was the key replaced, or the entry edited?): set it again", name, s.path(DataFile), s.path(KeyFile))
	}
	return v, nil
}

func aad(module, name string) []byte {
	return []byte("station-secret\x00v1\x00" + module + "\x00" + name)
}

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// loadKey reads the key file, making it when create is set and there is
// none. A key anyone but its owner may read is refused.
func (s *Store) loadKey(create bool) ([]byte, error) {
	if s.key != nil {
		return s.key, nil
	}
	p := s.path(KeyFile)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) && create {
		key := make([]byte, 32)
		rand.Read(key)
		if err := os.MkdirAll(s.home, 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("secrets: create the key: %w", err)
		}
		_, werr := f.Write(key)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(p)
			return nil, fmt.Errorf("secrets: write the key: %w", err)
		}
		s.key = key
		return key, nil
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("secrets: %s is missing, so the stored secrets cannot be read: set them again (station secret set)", p)
		}
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secrets: %s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets: %s may be read by others (mode %04o): run chmod 600 %s", p, fi.Mode().Perm(), p)
	}
	key, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets: %s is not a key (%d bytes, want 32)", p, len(key))
	}
	s.key = key
	return key, nil
}

// load returns secrets.json, re-read when it changed on disk.
func (s *Store) load() (*file, error) {
	p := s.path(DataFile)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		s.data, s.stamp = &file{Version: 1}, fileStamp{}
		return s.data, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	st := stampOf(fi)
	if s.data != nil && st == s.stamp {
		return s.data, nil
	}
	if fi.Size() > maxFile {
		return nil, fmt.Errorf("secrets: %s is %d bytes, more than a secrets file can be", p, fi.Size())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	f := &file{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("secrets: %s does not parse (%v): move it away and set the secrets again", p, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("secrets: %s is version %d; this station reads version 1", p, f.Version)
	}
	s.data, s.stamp = f, st
	return f, nil
}

func (s *Store) save(f *file) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return err
	}
	if err := atomicfile.Write(s.path(DataFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	s.data = nil // re-read, with the new stamp
	return nil
}
