// Package hubsync is the station's side of the hub: the login (the hub's
// URL and account in the store, the token in a 0600 file), installs and
// upgrades from the hub with signature, digest and publisher-key checks,
// team lockfiles applied locally, and the relay runner the daemon uses to
// apply a team's changes as they are pushed.
//
// The rule it keeps everywhere: nothing a module may do grows without the
// operator's approval on this station. An install or upgrade whose
// permissions stay within what was approved (station.Escalations is empty)
// and whose publisher key is already pinned applies at once; anything else
// is shown to an Approver, or, where nobody can be asked (the daemon), is
// recorded as pending while the approved version keeps running.
//
// All hub I/O goes through the station's own HTTP client
// (internal/stationhttp): no module's policy governs it, and it carries no
// module identity. The CLI (internal/cli) and the daemon
// (internal/daemon, through `station serve`) share this package.
package hubsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/hubclient"
	"github.com/station-dev/station/internal/station"
	"github.com/station-dev/station/internal/stationhttp"
	"github.com/station-dev/station/internal/store"
)

// TokenFile is the name, in STATION_HOME, of the file that holds the hub
// token (mode 0600). See RATIONALE.md, "Why is the hub token
// in a file and not in the database?".
const TokenFile = "hub-token"

// SigningKeyFile is the name, in STATION_HOME, of the publisher's signing
// key `station hub key create` makes (mode 0600).
const SigningKeyFile = "hub-signing-key.pem"

// ErrNotLoggedIn is returned when a command needs a hub login and the
// station has none. (The CLI's hint says how to log in.)
var ErrNotLoggedIn = errors.New("this station is not logged in to a hub")

// Session is a station logged in to a hub.
type Session struct {
	Station *station.Station
	Client  *hubclient.Client
	Login   store.HubLogin
	// Log receives what the session did (installs, pending changes); never
	// a token.
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AllowAdvisories are the advisory ids the operator allows for this
	// session's installs and pushes (--allow-advisory): a version one of
	// them affects is installed although it is at or above
	// advisories.block (the allowance is stored and audited), and pinned
	// in a team lockfile although affected.
	AllowAdvisories []string
	// AllowYanked lets team push pin a yanked version (--allow-yanked).
	AllowYanked bool
}

func (s *Session) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Session) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// NewClient returns a client of the hub at url with the station's own HTTP
// client, which no module's policy governs.
func NewClient(url, token string) (*hubclient.Client, error) {
	hc := stationhttp.NewClient(stationhttp.Options{UserAgent: "station-hub-client"})
	return hubclient.New(url, hc, hubclient.Options{Token: token})
}

// Open returns the session of the station's hub login: ErrNotLoggedIn when
// there is none.
func Open(ctx context.Context, st *station.Station, log *slog.Logger) (*Session, error) {
	l, err := st.Store.HubLogin(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotLoggedIn
	}
	if err != nil {
		return nil, err
	}
	tok, err := LoadToken(st.Home)
	if err != nil {
		return nil, err
	}
	c, err := NewClient(l.URL, tok)
	if err != nil {
		return nil, err
	}
	return &Session{Station: st, Client: c, Login: l, Log: log}, nil
}

// Login checks token against the hub at url, then records the login: the
// URL and account in the store, the token in STATION_HOME/hub-token (0600).
// A token the hub refuses changes nothing.
func Login(ctx context.Context, st *station.Station, url, token string) (store.HubLogin, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return store.HubLogin{}, errors.New("hub login: no token given (pipe it to --token-stdin or set STATION_HUB_TOKEN)")
	}
	if !strings.HasPrefix(token, hub.TokenPrefix) || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return store.HubLogin{}, fmt.Errorf("hub login: that is not a hub token (a token starts with %q; `station hub user create` or `station hub user token` print one)", hub.TokenPrefix)
	}
	c, err := NewClient(url, token)
	if err != nil {
		return store.HubLogin{}, err
	}
	acct, err := c.WhoAmI(ctx)
	if err != nil {
		return store.HubLogin{}, fmt.Errorf("hub login: %w", err)
	}
	if err := SaveToken(st.Home, token); err != nil {
		return store.HubLogin{}, err
	}
	l := store.HubLogin{URL: c.URL(), Account: acct.Name, LoggedIn: time.Now().UTC()}
	if err := st.Store.PutHubLogin(ctx, l); err != nil {
		return store.HubLogin{}, err
	}
	return st.Store.HubLogin(ctx)
}

// Logout forgets the login and removes the token file. Installed modules,
// their origins and pinned keys stay.
func Logout(ctx context.Context, st *station.Station) error {
	if err := os.Remove(filepath.Join(st.Home, TokenFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hub logout: %w", err)
	}
	return st.Store.DeleteHubLogin(ctx)
}

// SaveToken writes the token file atomically, mode 0600.
func SaveToken(home, token string) error {
	tmp, err := os.CreateTemp(home, ".hub-token-*")
	if err != nil {
		return fmt.Errorf("save hub token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save hub token: %w", err)
	}
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("save hub token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save hub token: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(home, TokenFile)); err != nil {
		return fmt.Errorf("save hub token: %w", err)
	}
	return nil
}

// LoadToken reads the token file, refusing one that others may read.
func LoadToken(home string) (string, error) {
	file := filepath.Join(home, TokenFile)
	fi, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read hub token: %s is missing: log in again (station hub login --url URL)", file)
	}
	if err != nil {
		return "", fmt.Errorf("read hub token: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("read hub token: %s may be read by others (mode %04o): chmod 600 %s, and consider revoking the token", file, fi.Mode().Perm(), file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read hub token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if !strings.HasPrefix(tok, hub.TokenPrefix) {
		return "", fmt.Errorf("read hub token: %s does not hold a hub token: log in again", file)
	}
	return tok, nil
}
