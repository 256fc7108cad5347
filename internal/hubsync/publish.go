package hubsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/wasmbuild"
	"github.com/station-dev/station/manifest"
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
	// A module no station would install is not uploaded: the hub would
	// refuse it with the same problems.
	m, err := manifest.Parse(manifest.FileName, raw)
	if err != nil {
		return nil, err
	}
	if err := host.Inspect(ctx, m, wasm, host.InspectOptions{}); err != nil {
		return nil, fmt.Errorf("publish: %w; nothing was uploaded", err)
	}
	if ps := CommandProblems(ctx, m, wasm); len(ps) > 0 {
		return nil, fmt.Errorf("publish: %w; nothing was uploaded", &host.InspectError{Module: m.ID, Problems: ps})
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

// ModuleCheck is what CheckModule found of a built module.
type ModuleCheck struct {
	Module     string `json:"module"`
	Version    string `json:"version"`
	WasmSize   int64  `json:"wasm_size"`
	WasmDigest string `json:"wasm_digest"`
	// Problems are the reasons a station (and so the hub) would refuse it;
	// none when it passes.
	Problems []host.Problem `json:"problems"`
}

// CheckModule runs the hub's publish check on the built module in dir
// without a hub: its manifest must validate and its wasm pass
// host.Inspect. A module that does not is a ModuleCheck with Problems; an
// error is a module that cannot be read at all (no module.yaml, no wasm).
func CheckModule(ctx context.Context, dir string) (*ModuleCheck, error) {
	raw, wasm, err := hubclient.ReadModuleDir(dir)
	var errs interface{ Unwrap() []error }
	var me *manifest.Error
	if err != nil && errors.As(err, &me) {
		// The manifest does not validate: its problems, all of them; the
		// wasm cannot be judged without the grants.
		mc := &ModuleCheck{}
		list := []error{err}
		if errors.As(err, &errs) {
			list = errs.Unwrap()
		}
		for _, e := range list {
			mc.Problems = append(mc.Problems, host.Problem{Kind: "manifest", Message: e.Error()})
		}
		return mc, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(manifest.FileName, raw)
	if err != nil {
		return nil, err
	}
	mc := &ModuleCheck{Module: m.ID, Version: m.Version, WasmSize: int64(len(wasm)), WasmDigest: hub.Digest(wasm), Problems: []host.Problem{}}
	err = host.Inspect(ctx, m, wasm, host.InspectOptions{})
	var ie *host.InspectError
	switch {
	case errors.As(err, &ie):
		mc.Problems = ie.Problems
	case err != nil:
		return nil, err
	default:
		mc.Problems = CommandProblems(ctx, m, wasm)
	}
	return mc, nil
}

// CommandProblems compares the commands module.yaml declares with those
// the module says it handles, where it says so (the Go SDK's
// station_describe export; wasmbuild.Describe runs it with nothing
// reachable, on the publisher's machine — the hub never runs a module). A
// declared command the module does not handle fails every call of it with
// "unknown command", on every station. A module without the export, or
// whose description cannot be read, has no problems here.
func CommandProblems(ctx context.Context, m *manifest.Manifest, wasm []byte) []host.Problem {
	d, err := wasmbuild.Describe(ctx, wasm, wasmbuild.DescribeOptions{})
	if err != nil || d == nil {
		return nil
	}
	handled := strings.Join(slices.Sorted(maps.Keys(d.Commands)), ", ")
	if handled == "" {
		handled = "none"
	}
	var out []host.Problem
	for _, c := range m.Commands {
		if _, ok := d.Commands[c.Name]; !ok {
			out = append(out, host.Problem{Kind: "commands", Message: fmt.Sprintf("module.yaml declares command %s, which the module does not handle (it handles %s): every call of it would fail as an unknown command",
				c.Name, handled)})
		}
	}
	return out
}
