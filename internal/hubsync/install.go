package hubsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/store"
)

// Request is what to install from the hub.
type Request struct {
	// ID is "owner/slug"; Version "" means the latest version not yanked.
	ID, Version string
	// Pin, if set, must match the version's digests (a team lockfile's).
	Pin *hubclient.Pin
	// Team is the team whose lockfile asks for the install ("" for a
	// direct install).
	Team string
	// TeamPermissions, if set, are what the team approved: a version that
	// asks for more is refused (the team never approved it).
	TeamPermissions *hub.Permissions
	// Ask makes every install ask the Approver (a direct install shows what
	// the module may do even when nothing escalates).
	Ask bool
}

// Plan is an install from the hub, shown to the operator for approval.
type Plan struct {
	station.Plan
	// Hub is the hub's URL; Team the team asking for it ("" for none).
	Hub, Team string
	// Version is the hub's record of the version.
	Version hub.Version
	// Approved is what is approved now for the module; nil when it is not
	// installed.
	Approved *station.Permissions
	// Escalations say in plain words what the version asks beyond Approved
	// (everything it asks for, for a new module); empty: nothing new.
	Escalations []string
	// Key is the publisher key whose signature verified. KeyChange is set
	// when the station had pinned other keys for the owner on this hub and
	// not this one (PinnedKeys are those), or, on the owner's first use on
	// this hub, when keys are pinned for an owner of the same name on other
	// hubs and this key is none of them (PinnedElsewhere are those). Pins
	// are per hub and owner: the same account name on two hubs may be two
	// people.
	Key             hub.PublicKey
	KeyChange       bool
	PinnedKeys      []string
	PinnedElsewhere []store.HubKey
	// OriginChange is set when the installed version did not come from
	// this hub (a local install, or another hub): the hub's version is
	// other code under the same id, whatever it asks for.
	OriginChange bool
	// Downgrade is set when the version is older than the one installed: a
	// hub or a lockfile rolling a module back to a version with a known
	// flaw is asked about, even within the approval.
	Downgrade bool
	// Advisories are the advisories that affect the version, as the hub
	// says now (the most severe first); one the operator has not allowed
	// for the version makes the plan need approval. One at or above
	// advisories.block is here only when the session allows it
	// (Session.AllowAdvisories); otherwise the install was refused.
	Advisories []station.AdvisoryMatch
}

// NeedsApproval reports whether the plan asks the operator for something
// new: a permission not approved, a publisher key not pinned, or code from
// the hub in place of a module installed from elsewhere.
func (p Plan) NeedsApproval() bool {
	return len(p.Escalations) > 0 || p.KeyChange || p.OriginChange || p.Downgrade || len(advisoryLines(p.Advisories)) > 0
}

// Differences are the plan's escalations and key change in plain words.
func (p Plan) Differences() []string {
	out := append([]string(nil), p.Escalations...)
	if p.OriginChange && p.Plan.Replaces != nil {
		out = append(out, fmt.Sprintf("REPLACES %s@%s, which was not installed from %s", p.Plan.Replaces.ID, p.Plan.Replaces.Version, p.Hub))
	}
	if p.Downgrade && p.Plan.Replaces != nil {
		out = append(out, fmt.Sprintf("IS AN OLDER VERSION (%s) than the installed %s", p.Version.Version, p.Plan.Replaces.Version))
	}
	if p.KeyChange {
		o := owner(p.Version.Module)
		if len(p.PinnedKeys) > 0 {
			out = append(out, fmt.Sprintf("IS SIGNED BY KEY %s, which is not the key pinned for %s on %s (%s)", p.Key.ID, o, p.Hub, strings.Join(p.PinnedKeys, ", ")))
		} else {
			out = append(out, fmt.Sprintf("IS SIGNED BY KEY %s, and no key is pinned for %s on %s; %s: an account of the same name on another hub may be another publisher", p.Key.ID, o, p.Hub, pinnedElsewhere(o, p.PinnedElsewhere)))
		}
	}
	return append(out, advisoryLines(p.Advisories)...)
}

// pinnedElsewhere says which keys are pinned for owner on other hubs:
// "dave on https://a signs with K1, K2; dave on a hub not recorded (pinned
// before schema 7) signs with K3".
func pinnedElsewhere(owner string, keys []store.HubKey) string {
	var parts []string
	for i := 0; i < len(keys); {
		j, ids := i, []string{}
		for ; j < len(keys) && keys[j].HubURL == keys[i].HubURL; j++ {
			if !slices.Contains(ids, keys[j].KeyID) {
				ids = append(ids, keys[j].KeyID)
			}
		}
		where := "on " + keys[i].HubURL
		if keys[i].HubURL == "" {
			where = "on a hub this station did not record (a pin from before it recorded hubs)"
		}
		parts = append(parts, fmt.Sprintf("%s %s signs with %s", owner, where, strings.Join(ids, ", ")))
		i = j
	}
	return strings.Join(parts, "; ")
}

// Approver decides whether to go ahead with a plan. It returns false (or
// an error) to decline.
type Approver func(Plan) (bool, error)

// Result is what an install did.
type Result struct {
	// Plan is the install's plan (nil when nothing had to change).
	Plan *Plan
	// ID and Version name the module version asked for.
	ID, Version string
	// Changed is set when a version was installed; false when the station
	// already had exactly this version.
	Changed bool
}

// PendingError is returned when an install needs the operator's approval
// and no Approver was given: nothing changed, the installed version (if
// any) keeps running.
type PendingError struct{ Plan Plan }

func (e *PendingError) Error() string {
	return fmt.Sprintf("%s@%s needs approval: it %s", e.Plan.Version.Module, e.Plan.Version.Version, strings.Join(e.Plan.Differences(), "; "))
}

func owner(id string) string { o, _, _ := strings.Cut(id, "/"); return o }

// Install installs a module version from the hub: it resolves the version,
// downloads and verifies the bundle (the signature by a key the hub lists
// for the owner over exactly these bytes, id and version; the digests the
// hub lists and req.Pin), checks the publisher key against the keys pinned
// for the owner on this hub (trust on first use, unless an owner of that
// name is pinned on another hub with another key), and hands the package to
// station.Install, which checks the wasm against its manifest. The approver
// is asked when req.Ask is set or when the plan needs approval; with a nil
// approver such an install returns a *PendingError and changes nothing. A
// refused bundle returns a *hubclient.VerifyError naming the reason, and
// nothing is written.
func (s *Session) Install(ctx context.Context, req Request, approve Approver) (Result, error) {
	st := s.Station
	res := Result{ID: req.ID, Version: req.Version}
	var v hub.Version
	var err error
	if req.Version == "" {
		v, err = s.Client.Resolve(ctx, req.ID)
	} else {
		v, err = s.Client.Version(ctx, req.ID, req.Version)
	}
	if err != nil {
		return res, err
	}
	res.Version = v.Version
	ref := v.Module + "@" + v.Version

	var current *store.Module
	if rec, err := st.Store.Module(ctx, req.ID); err == nil {
		current = &rec
	} else if !errors.Is(err, store.ErrNotFound) {
		return res, err
	}
	if current != nil && current.Version == v.Version && current.Digest == v.WasmDigest && hub.Digest(current.Manifest) == v.ManifestDigest &&
		(req.Pin == nil || (req.Pin.WasmDigest == v.WasmDigest && req.Pin.ManifestDigest == v.ManifestDigest)) {
		// Exactly this version is installed. An operator who asks for it
		// from this hub in place of the same bytes from a directory gets
		// it recorded as from the hub (asked first, as any origin change).
		same, err := s.installedFromHere(ctx, *current)
		if err != nil {
			return res, err
		}
		if same || !req.Ask {
			return res, nil
		}
	}

	// What the hub knows against the version decides before anything is
	// downloaded: a blocked version is refused here.
	va, overrides, err := s.checkAdvisories(ctx, v)
	if err != nil {
		return res, err
	}
	pkg, err := s.Client.Fetch(ctx, req.ID, v.Version, hubclient.FetchOptions{Pin: req.Pin})
	if err != nil {
		return res, err
	}
	// The keys pinned for the owner on this hub, and no other hub: the
	// same account name on two hubs may be two people.
	pinned, err := st.Store.HubKeys(ctx, s.Login.URL, owner(req.ID))
	if err != nil {
		return res, err
	}
	plan := Plan{Hub: s.Login.URL, Team: req.Team, Version: pkg.Version, Key: pkg.Key, Advisories: va.Advisories}
	signedBy := func(k store.HubKey) bool { return k.KeyID == pkg.Key.ID.String() && k.PublicKey == pkg.Key.String() }
	if len(pinned) > 0 {
		plan.KeyChange = !slices.ContainsFunc(pinned, signedBy)
		for _, k := range pinned {
			plan.PinnedKeys = append(plan.PinnedKeys, k.KeyID)
		}
	} else {
		// The owner's first use on this hub is trust on first use — unless
		// an owner of that name is pinned on another hub with other keys:
		// then the operator says whether this is the same publisher.
		every, err := st.Store.HubKeysOnEveryHub(ctx, owner(req.ID))
		if err != nil {
			return res, err
		}
		if len(every) > 0 && !slices.ContainsFunc(every, signedBy) {
			plan.KeyChange, plan.PinnedElsewhere = true, every
		}
	}
	approved := station.Permissions{Network: []string{}, FilesystemWrites: []string{}, Subprocess: false}
	if current != nil {
		var p station.Permissions
		if err := json.Unmarshal(current.Approved, &p); err != nil {
			return res, fmt.Errorf("install %s: the approval stored for %s@%s: %w", ref, current.ID, current.Version, err)
		}
		approved = p
		plan.Approved = &p
		o, err := st.Store.HubOrigin(ctx, req.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
		plan.OriginChange = err != nil || o.HubURL != s.Login.URL || !sameVersion(*current, o)
	}

	dir, err := os.MkdirTemp(st.Home, installDirPrefix+"*")
	if err != nil {
		return res, fmt.Errorf("install %s: %w", ref, err)
	}
	defer os.RemoveAll(dir)
	if err := pkg.WriteDir(dir); err != nil {
		return res, fmt.Errorf("install %s: %w", ref, err)
	}
	var pending *PendingError
	sp, err := st.Install(ctx, dir, func(p station.Plan) (bool, error) {
		// What the station checked and will store must be what the hub
		// signed (station.Install read the files back from dir).
		if p.Digest != pkg.Version.WasmDigest || p.Manifest.ID != req.ID || p.Manifest.Version != v.Version {
			return false, &hubclient.VerifyError{Module: req.ID, Version: v.Version, Err: hub.Errorf(hub.CodeDigestMismatch, "the files written for install have digest %s, the hub signed %s", p.Digest, pkg.Version.WasmDigest)}
		}
		if req.TeamPermissions != nil {
			team := fromHub(*req.TeamPermissions)
			team.LLM = p.Permissions.LLM // the lockfile cannot say; the local approval decides
			if beyond := station.Escalations(team, p.Permissions); len(beyond) > 0 {
				return false, fmt.Errorf("install %s for team %s: the version asks for more than the team's lockfile approved: it %s", ref, req.Team, strings.Join(beyond, "; "))
			}
		}
		plan.Plan = p
		plan.Escalations = station.Escalations(approved, p.Permissions)
		plan.Downgrade = p.Replaces != nil && hub.CompareVersions(v.Version, p.Replaces.Version) < 0
		if !req.Ask && !plan.NeedsApproval() {
			return true, nil
		}
		if approve == nil {
			pending = &PendingError{Plan: plan}
			return false, pending
		}
		return approve(plan)
	})
	if err != nil {
		if pending != nil {
			return res, pending
		}
		return res, err
	}
	plan.Plan = *sp
	res.Plan, res.Changed = &plan, true
	now := s.now()
	if err := st.Store.PutHubOrigin(ctx, store.HubOrigin{Module: req.ID, HubURL: s.Login.URL, Version: v.Version,
		ManifestDigest: pkg.Version.ManifestDigest, WasmDigest: pkg.Version.WasmDigest, KeyID: pkg.Key.ID.String(), Team: req.Team, InstalledAt: now}); err != nil {
		return res, err
	}
	if err := st.Store.PutHubKey(ctx, store.HubKey{HubURL: s.Login.URL, Owner: owner(req.ID), KeyID: pkg.Key.ID.String(), PublicKey: pkg.Key.String(), PinnedAt: now}); err != nil {
		return res, err
	}
	s.log().Info("installed from the hub", "module", req.ID, "version", v.Version, "digest", pkg.Version.WasmDigest, "key", pkg.Key.ID.String(), "team", req.Team)
	return res, s.recordOverrides(ctx, req.ID, v.Version, overrides)
}

// fromHub converts a lockfile's permissions to the station's form.
func fromHub(p hub.Permissions) station.Permissions {
	out := station.Permissions{Network: nonNil(p.Network), FilesystemWrites: nonNil(p.FilesystemWrites), FilesystemReads: p.FilesystemReads, Env: p.Env, Subprocess: false}
	switch {
	case p.Subprocess.Any:
		out.Subprocess = true
	case len(p.Subprocess.Allow) > 0:
		out.Subprocess = map[string][]string{"allow": p.Subprocess.Allow}
	}
	for _, sec := range p.Secrets {
		out.Secrets = append(out.Secrets, station.SecretPermission(sec))
	}
	return out
}

// ToHub converts the station's approved permissions to a lockfile's, less
// what is resolved on each machine (program paths and digests) and what a
// lockfile cannot say (the LLM allowance).
func ToHub(p station.Permissions) hub.Permissions {
	out := hub.Permissions{Network: nonNil(p.Network), FilesystemWrites: nonNil(p.FilesystemWrites), FilesystemReads: p.FilesystemReads, Env: p.Env}
	switch s := p.Subprocess.(type) {
	case bool:
		out.Subprocess.Any = s
	case map[string]any:
		if l, ok := s["allow"].([]any); ok {
			for _, v := range l {
				out.Subprocess.Allow = append(out.Subprocess.Allow, fmt.Sprint(v))
			}
		}
	case map[string][]string:
		out.Subprocess.Allow = s["allow"]
	}
	for _, sec := range p.Secrets {
		out.Secrets = append(out.Secrets, hub.SecretBinding(sec))
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
