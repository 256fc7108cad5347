package station

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/station-dev/station/internal/store"
	"github.com/station-dev/station/manifest"
	"github.com/station-dev/station/sdk/abi"
)

// SecretStatus is one secret as `station secret list` shows it: a secret
// an installed module declares, with the hosts it is bound to and whether
// a value is set for it, or a stored value no installed module declares.
// It never holds a value.
type SecretStatus struct {
	Name string `json:"name"`
	// Module declares the secret ("" for a stored value no installed
	// module declares).
	Module      string   `json:"module,omitempty"`
	Description string   `json:"description,omitempty"`
	Hosts       []string `json:"hosts,omitempty"`
	// Set is where the value the module gets comes from: "module" (set
	// with --module), "station" (set for the whole station) or "missing".
	Set   string     `json:"set"`
	SetAt *time.Time `json:"set_at,omitempty"`
	// Scope is, for a stored value no module declares, the module it was
	// set for ("" for the station).
	Scope string `json:"scope,omitempty"`
}

// declaredSecrets returns the secrets every installed module declares, by
// module.
func (s *Station) declaredSecrets(ctx context.Context) ([]store.Module, map[string][]manifest.Secret, error) {
	mods, err := s.Store.Modules(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]manifest.Secret{}
	for _, m := range mods {
		man, err := s.ParseManifest(filepath.Join(s.Home, "modules", m.ID, manifest.FileName), m.Manifest)
		if err != nil {
			continue // `station module verify` reports it; it cannot load either
		}
		out[m.ID] = man.Requires.Secrets
	}
	return mods, out, nil
}

// SecretStatuses lists every secret installed modules declare and every
// stored value, never a value.
func (s *Station) SecretStatuses(ctx context.Context) ([]SecretStatus, error) {
	mods, declared, err := s.declaredSecrets(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := s.Secrets.List()
	if err != nil {
		return nil, err
	}
	used := map[[2]string]bool{}
	var out []SecretStatus
	for _, m := range mods {
		for _, sec := range declared[m.ID] {
			st := SecretStatus{Name: sec.Name, Module: m.ID, Description: sec.Description, Hosts: sec.Hosts, Set: "missing"}
			if e, ok, err := s.Secrets.Lookup(m.ID, sec.Name); err != nil {
				return nil, err
			} else if ok {
				at := e.SetAt
				st.SetAt = &at
				st.Set = "station"
				if e.Module != "" {
					st.Set = "module"
				}
				used[[2]string{e.Module, e.Name}] = true
			}
			out = append(out, st)
		}
	}
	for _, e := range stored {
		if used[[2]string{e.Module, e.Name}] {
			continue
		}
		at := e.SetAt
		out = append(out, SecretStatus{Name: e.Name, Scope: e.Module, Set: "unused", SetAt: &at})
	}
	return out, nil
}

// SecretUsers returns the installed modules that declare secret name,
// with the hosts each binds it to.
func (s *Station) SecretUsers(ctx context.Context, name string) (map[string]manifest.Secret, error) {
	_, declared, err := s.declaredSecrets(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]manifest.Secret{}
	for id, list := range declared {
		for _, sec := range list {
			if sec.Name == name {
				out[id] = sec
			}
		}
	}
	return out, nil
}

// CheckSecretTarget checks the target of `station secret set NAME
// [--module ID]` before a value is asked for: the name is valid and, for
// a module, the module is installed and declares the secret. It returns
// the declaration (zero for the station).
func (s *Station) CheckSecretTarget(ctx context.Context, module, name string) (manifest.Secret, error) {
	if msg := abi.CheckSecretName(name); msg != "" {
		return manifest.Secret{}, fmt.Errorf("secret %q: %s", name, msg)
	}
	if module == "" {
		return manifest.Secret{}, nil
	}
	rec, err := s.Store.Module(ctx, module)
	if errors.Is(err, store.ErrNotFound) {
		return manifest.Secret{}, notInstalledError{module}
	}
	if err != nil {
		return manifest.Secret{}, err
	}
	man, err := s.ParseManifest(filepath.Join(s.Home, "modules", module, manifest.FileName), rec.Manifest)
	if err != nil {
		return manifest.Secret{}, err
	}
	sec, ok := man.Requires.Secret(name)
	if !ok {
		var names []string
		for _, d := range man.Requires.Secrets {
			names = append(names, d.Name)
		}
		if len(names) == 0 {
			return manifest.Secret{}, fmt.Errorf("module %s declares no secrets (requires.secrets)", module)
		}
		return manifest.Secret{}, fmt.Errorf("module %s does not declare secret %s; it declares %s", module, name, strings.Join(slices.Sorted(slices.Values(names)), ", "))
	}
	return sec, nil
}

// SetSecret stores value as secret name of module ("" for the station),
// after CheckSecretTarget.
func (s *Station) SetSecret(ctx context.Context, module, name string, value []byte) error {
	if _, err := s.CheckSecretTarget(ctx, module, name); err != nil {
		return err
	}
	return s.Secrets.Set(module, name, value)
}

// RemoveSecret deletes the value of secret name of module ("" for the
// station).
func (s *Station) RemoveSecret(ctx context.Context, module, name string) error {
	if msg := abi.CheckSecretName(name); msg != "" {
		return fmt.Errorf("secret %q: %s", name, msg)
	}
	ok, err := s.Secrets.Remove(module, name)
	if err != nil {
		return err
	}
	if !ok {
		where := "for the station"
		if module != "" {
			where = "for module " + module
		}
		return fmt.Errorf("secret %s is not set %s (station secret list shows what is)", name, where)
	}
	return nil
}
