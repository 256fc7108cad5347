package hubserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/station-dev/station/hub"
)

// secretBytes is the entropy of a token or invite code: 256 bits.
const secretBytes = 32

// secretLen is the length of a secret after its prefix (unpadded base64url).
var secretLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// newSecret returns a new secret with prefix and its SHA-256. The hub
// stores only the hash (RATIONALE.md, "Why SHA-256 and not a
// password hash for tokens?").
func newSecret(prefix string) (string, [32]byte) {
	var b [secretBytes]byte
	rand.Read(b[:])
	secret := prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, sha256.Sum256([]byte(secret))
}

// wellFormed reports whether s looks like a secret with prefix, so that a
// malformed one is refused without a database lookup.
func wellFormed(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != secretLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	return err == nil
}

// authenticate sets c.account from the bearer token, if there is one. A
// request with a bad token is refused — never served anonymously — and is
// charged to its client address, so guessing tokens is rate limited. No
// part of the token is ever logged or repeated in an error.
func (s *Server) authenticate(c *call) error {
	h := c.r.Header.Get("Authorization")
	if h == "" {
		return nil
	}
	scheme, token, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return s.badToken(c, "the Authorization header must be \"Bearer <token>\"")
	}
	token = strings.TrimSpace(token)
	if !wellFormed(token, hub.TokenPrefix) {
		return s.badToken(c, "the token is malformed: hub tokens start with "+hub.TokenPrefix)
	}
	t, err := s.store.TokenByHash(c.ctx, sha256.Sum256([]byte(token)))
	if errors.Is(err, ErrNotFound) {
		return s.badToken(c, "the token is unknown or revoked: log in again with `station hub login`")
	}
	if err != nil {
		return fmt.Errorf("authenticate: %w", err)
	}
	c.account, c.token = t.Account, t
	return nil
}

func (s *Server) badToken(c *call, msg string) error {
	if ok, wait := s.limiter.allow(c.ctx, c.client); !ok {
		return rateLimited(wait)
	}
	return hub.Errorf(hub.CodeUnauthenticated, "%s", msg)
}

// checkLabel validates a token label.
func checkLabel(s string) error {
	if len(s) > 64 || !utf8.ValidString(s) {
		return hub.Errorf(hub.CodeInvalidName, "token label must be valid UTF-8, at most 64 bytes")
	}
	if strings.IndexFunc(s, unsafeRune) >= 0 {
		return hub.Errorf(hub.CodeInvalidName, "token label contains a control character")
	}
	return nil
}

// unsafeRune reports control and formatting characters that could rewrite
// what a terminal shows.
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// CreateAccount creates an account with a first token labelled label, for
// the operator (`station hub user create NAME`). The returned secret is the
// only copy.
func CreateAccount(ctx context.Context, st Store, name, label string, now time.Time) (hub.NewToken, error) {
	if msg := hub.CheckName(name); msg != "" {
		return hub.NewToken{}, hub.Errorf(hub.CodeInvalidName, "account name %q %s", clip(name), msg)
	}
	if _, err := st.CreateAccount(ctx, name, now); errors.Is(err, ErrExists) {
		return hub.NewToken{}, hub.Errorf(hub.CodeAccountExists, "account %q exists", name)
	} else if err != nil {
		return hub.NewToken{}, fmt.Errorf("create account %s: %w", name, err)
	}
	return CreateToken(ctx, st, name, label, now)
}

// CreateToken issues a new token for an existing account. The returned
// secret is the only copy.
func CreateToken(ctx context.Context, st Store, account, label string, now time.Time) (hub.NewToken, error) {
	if err := checkLabel(label); err != nil {
		return hub.NewToken{}, err
	}
	secret, hash := newSecret(hub.TokenPrefix)
	var id [6]byte
	rand.Read(id[:])
	t := Token{ID: hex.EncodeToString(id[:]), Account: account, Hash: hash, Label: label, CreatedAt: now.UTC()}
	if err := st.AddToken(ctx, t); errors.Is(err, ErrNotFound) {
		return hub.NewToken{}, hub.Errorf(hub.CodeAccountNotFound, "account %q does not exist", account)
	} else if err != nil {
		return hub.NewToken{}, fmt.Errorf("create token for %s: %w", account, err)
	}
	return hub.NewToken{Token: hub.Token{ID: t.ID, Label: t.Label, CreatedAt: t.CreatedAt}, Secret: secret}, nil
}
