package hubsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
)

// KeyExistsError is a `station hub key create` whose key file exists:
// nothing was made or registered.
type KeyExistsError struct {
	File string
	// KeyID is the id of the key in File ("" when File is not a signing
	// key this station can read).
	KeyID string
}

func (e *KeyExistsError) Error() string {
	if e.KeyID == "" {
		return fmt.Sprintf("hub key create: %s exists and is not a signing key this station can read; nothing was changed", e.File)
	}
	return fmt.Sprintf("hub key create: %s already holds signing key %s (station module publish signs with it); nothing was changed", e.File, e.KeyID)
}

// CreatedKey is what CreateKey did.
type CreatedKey struct {
	// Key is the hub's record of the new key.
	Key hub.Key `json:"key"`
	// File holds its private half.
	File string `json:"file"`
	// Replaced is the id of the key File held before (a rotation; "" for
	// none, or when that file was not a key), and Backup where that file
	// was moved. The replaced key stays registered with the hub: versions
	// it signed keep verifying.
	Replaced string `json:"replaced,omitempty"`
	Backup   string `json:"backup,omitempty"`
}

// KeyFile is the signing key file: file, or STATION_HOME/hub-signing-key.pem.
func (s *Session) KeyFile(file string) string {
	if file == "" {
		return filepath.Join(s.Station.Home, SigningKeyFile)
	}
	return file
}

// CreateKey makes an Ed25519 signing key, saves it (mode 0600) in file
// (default STATION_HOME/hub-signing-key.pem) and registers its public half
// with the account. A file that exists is a *KeyExistsError, unless
// replace is set: then the new key is registered first, and only then is
// the old file moved aside to FILE.ID.old and the new key put in its
// place — a rotation. Stations that pinned the old key ask their operators
// before they trust versions signed by the new one; the old key stays
// registered, so what it signed still verifies. A key the hub refuses
// leaves everything as it was.
func (s *Session) CreateKey(ctx context.Context, file string, replace bool) (CreatedKey, error) {
	file = s.KeyFile(file)
	out := CreatedKey{File: file}
	_, err := os.Lstat(file)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("hub key create: %w", err)
	}
	oldID := ""
	if exists {
		if old, err := hubclient.LoadSigner(file); err == nil {
			oldID = old.PublicKey().ID.String()
		}
		if !replace {
			return out, &KeyExistsError{File: file, KeyID: oldID}
		}
	}
	backup := file + ".old"
	if oldID != "" {
		backup = file + "." + oldID + ".old"
	}
	if _, err := os.Lstat(backup); exists && err == nil {
		return out, fmt.Errorf("hub key create: %s exists, where %s would be moved: move it away first; nothing was changed", backup, file)
	}
	signer, err := hubclient.GenerateSigner()
	if err != nil {
		return out, err
	}
	target := file
	if exists {
		// The new key waits beside the old one until the hub has it.
		target = filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".new-"+signer.PublicKey().ID.String())
	}
	if err := signer.Save(target); err != nil {
		return out, err
	}
	k, err := s.Client.AddKey(ctx, signer.PublicKey())
	if err != nil {
		os.Remove(target) // a key the hub does not know signs nothing it accepts
		return out, err
	}
	out.Key = k
	if exists {
		if err := os.Rename(file, backup); err != nil {
			return out, fmt.Errorf("hub key create: key %s is registered and saved in %s, but the old key file could not be moved aside: %w", signer.PublicKey().ID, target, err)
		}
		if err := os.Rename(target, file); err != nil {
			os.Rename(backup, file)
			return out, fmt.Errorf("hub key create: key %s is registered and saved in %s, but could not replace %s: %w", signer.PublicKey().ID, target, file, err)
		}
		out.Replaced, out.Backup = oldID, backup
	}
	s.log().Info("registered a signing key", "key", k.ID, "file", file, "replaced", oldID)
	return out, nil
}

// KeyList is the account's keys on the hub and this station's key.
type KeyList struct {
	Account string    `json:"account"`
	Keys    []hub.Key `json:"keys"`
	// File is the signing key file and LocalID the id of the key in it (""
	// when there is none, or it cannot be read: LocalError says why).
	File       string `json:"file"`
	LocalID    string `json:"local_id,omitempty"`
	LocalError string `json:"local_error,omitempty"`
}

// Keys lists the account's keys on the hub, revoked ones included, and
// which one the signing key file (file, default
// STATION_HOME/hub-signing-key.pem) holds.
func (s *Session) Keys(ctx context.Context, file string) (KeyList, error) {
	file = s.KeyFile(file)
	keys, err := s.Client.Keys(ctx, s.Login.Account)
	if err != nil {
		return KeyList{}, err
	}
	if keys == nil {
		keys = []hub.Key{}
	}
	out := KeyList{Account: s.Login.Account, Keys: keys, File: file}
	if signer, err := hubclient.LoadSigner(file); err == nil {
		out.LocalID = signer.PublicKey().ID.String()
	} else if !errors.Is(err, fs.ErrNotExist) {
		out.LocalError = err.Error()
	}
	return out, nil
}
