package hubsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
)

// Where an installed module came from (Origin.Kind).
const (
	FromDirectory = "directory"
	FromHub       = "hub"
	// FromUnknown is a module installed from a directory before the
	// station recorded which (schema 8).
	FromUnknown = "unknown"
)

// installDirPrefix names the temporary directories of the station home a
// hub install writes a verified bundle to before station.Install reads it.
const installDirPrefix = station.HubInstallDirPrefix

// Origin says where an installed module came from.
type Origin struct {
	// Kind is FromDirectory, FromHub or FromUnknown.
	Kind string
	// Dir is the directory a module from one was installed from (an
	// absolute path, as it was at install).
	Dir string
	// Hub is the URL of the hub a module from one came from, KeyID the
	// publisher key whose signature verified, and Team the team whose
	// lockfile installed it ("" for a direct install).
	Hub, KeyID, Team string
}

// OriginOf says where the installed module rec came from. A hub origin
// counts only while the installed version is the one it records and
// station.Install read it from a hub install's directory: a module
// installed from a directory since, even the same bytes, came from that
// directory.
func OriginOf(ctx context.Context, st *station.Station, rec store.Module) (Origin, error) {
	o, err := st.Store.HubOrigin(ctx, rec.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Origin{}, err
	}
	if err == nil && installedFromHub(st, rec, o) {
		return Origin{Kind: FromHub, Hub: o.HubURL, KeyID: o.KeyID, Team: o.Team}, nil
	}
	if rec.Source == "" {
		return Origin{Kind: FromUnknown}, nil
	}
	return Origin{Kind: FromDirectory, Dir: rec.Source}, nil
}

// installedFromHub reports whether the installed module rec is the version its hub
// origin o records (station.InstalledFromHub, which the advisory gate
// asks too).
func installedFromHub(st *station.Station, rec store.Module, o store.HubOrigin) bool {
	return sameVersion(rec, o) && st.InstalledFromHub(rec, o)
}

// installedFromHere reports whether the installed module rec came from
// the hub of this session.
func (s *Session) installedFromHere(ctx context.Context, rec store.Module) (bool, error) {
	o, err := s.Station.Store.HubOrigin(ctx, rec.ID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return o.HubURL == s.Login.URL && installedFromHub(s.Station, rec, o), nil
}

// ModuleInfo is an installed module as `station module show` and
// `station module remove` describe it.
type ModuleInfo struct {
	Module   store.Module
	Manifest *manifest.Manifest // the approved manifest, as parsed now
	Approved station.Permissions
	Limits   station.Limits
	// Confinement is what a program the module starts gets on this machine
	// (station.ChildConfinement); "" when it starts none.
	Confinement string
	Origin      Origin
	// Usage is what the files the module wrote take, as the station counts
	// them; they stay when the module is removed.
	Usage fsgate.Usage
}

// Describe returns what the station knows of installed module id; the
// error wraps store.ErrNotFound when it is not installed. It needs no hub
// login.
func Describe(ctx context.Context, st *station.Station, id string) (*ModuleInfo, error) {
	rec, err := st.Store.Module(ctx, id)
	if err != nil {
		return nil, err
	}
	man, err := st.ParseManifest(manifest.FileName, rec.Manifest)
	if err != nil {
		return nil, fmt.Errorf("module %s: the stored manifest: %w", id, err)
	}
	info := &ModuleInfo{Module: rec, Manifest: man}
	if err := unmarshalApproval(rec, &info.Approved); err != nil {
		return nil, err
	}
	if info.Limits, err = st.LimitsOf(ctx, man); err != nil {
		return nil, fmt.Errorf("module %s: %w", id, err)
	}
	info.Confinement = st.ChildConfinement(info.Approved)
	if info.Origin, err = OriginOf(ctx, st, rec); err != nil {
		return nil, err
	}
	if info.Usage, err = st.Store.LoadUsage(ctx, id); err != nil {
		return nil, err
	}
	return info, nil
}

// Remove uninstalls module id (station.Remove) and forgets its hub origin.
// Its audit records and the files it wrote stay, and so does their count
// against its quota (RATIONALE.md).
func Remove(ctx context.Context, st *station.Station, id string) error {
	if err := st.Remove(ctx, id); err != nil {
		return err
	}
	return st.Store.DeleteHubOrigin(ctx, id)
}

func unmarshalApproval(rec store.Module, p *station.Permissions) error {
	if err := json.Unmarshal(rec.Approved, p); err != nil {
		return fmt.Errorf("the approval stored for %s@%s: %w (reinstall the module)", rec.ID, rec.Version, err)
	}
	return nil
}
