package hubsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
)

// ErrNoSigningKey is the error of a publish without a signing key file
// (`station hub key create` makes one).
var ErrNoSigningKey = errors.New("no signing key")

// Published is a version Publish uploaded.
type Published struct {
	// Version is the hub's record of it.
	Version hub.Version
	// Hub is the hub's URL; Key the signing key file used.
	Hub, Key string
}

// Publish signs the built module in dir (its module.yaml and wasm) with the
// publisher key in keyFile ("" for STATION_HOME/hub-signing-key.pem) and
// uploads the bundle to the hub.
func (s *Session) Publish(ctx context.Context, dir, keyFile string) (*Published, error) {
	if keyFile == "" {
		keyFile = filepath.Join(s.Station.Home, SigningKeyFile)
	}
	signer, err := hubclient.LoadSigner(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("publish: %w at %s", ErrNoSigningKey, keyFile)
	}
	if err != nil {
		return nil, err
	}
	raw, wasm, err := hubclient.ReadModuleDir(dir)
	if err != nil {
		return nil, err
	}
	b, err := hubclient.NewBundle(raw, wasm, signer)
	if err != nil {
		return nil, err
	}
	v, err := s.Client.Publish(ctx, b)
	if err != nil {
		return nil, err
	}
	s.log().Info("published to the hub", "module", v.Module, "version", v.Version, "digest", v.WasmDigest, "key", v.KeyID)
	return &Published{Version: v, Hub: s.Login.URL, Key: keyFile}, nil
}
