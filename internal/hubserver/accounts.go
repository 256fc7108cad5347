package hubserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/station-dev/station/hub"
)

func (s *Server) whoami(c *call) error {
	a, err := s.store.Account(c.ctx, c.account)
	if err != nil {
		return fmt.Errorf("whoami: %w", err)
	}
	s.reply(c, http.StatusOK, a)
	return nil
}

func (s *Server) createToken(c *call) error {
	var req hub.CreateTokenRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	t, err := CreateToken(c.ctx, s.store, c.account, req.Label, s.now())
	if err != nil {
		return err
	}
	s.log.Info("token created", "account", c.account, "token_id", t.ID)
	s.reply(c, http.StatusCreated, t)
	return nil
}

func (s *Server) listTokens(c *call) error {
	ts, err := s.store.Tokens(c.ctx, c.account)
	if err != nil {
		return err
	}
	out := make([]hub.Token, 0, len(ts))
	for _, t := range ts {
		out = append(out, hub.Token{ID: t.ID, Label: t.Label, CreatedAt: t.CreatedAt})
	}
	s.reply(c, http.StatusOK, out)
	return nil
}

func (s *Server) deleteToken(c *call) error {
	id := c.r.PathValue("id")
	err := s.store.DeleteToken(c.ctx, c.account, id)
	if errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeTokenNotFound, "you have no token %q", clip(id))
	}
	if err != nil {
		return err
	}
	s.log.Info("token revoked", "account", c.account, "token_id", id)
	// Its streams end now, not at the next re-check.
	s.endStreams(func(st *stream) bool { return st.account == c.account && st.token.ID == id }, errTokenRevoked)
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) addKey(c *call) error {
	var req hub.AddKeyRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	pk, err := hub.ParsePublicKey(req.PublicKey)
	if err != nil {
		return hub.Errorf(hub.CodeKeyInvalid, "%v", err)
	}
	k := hub.Key{ID: pk.ID.String(), Account: c.account, PublicKey: pk.String(), CreatedAt: s.now().UTC()}
	if err := s.store.AddKey(c.ctx, k); errors.Is(err, ErrExists) {
		return hub.Errorf(hub.CodeKeyExists, "you already registered a key with id %s", k.ID)
	} else if err != nil {
		return err
	}
	s.log.Info("key added", "account", c.account, "key_id", k.ID)
	s.reply(c, http.StatusCreated, k)
	return nil
}

func (s *Server) revokeKey(c *call) error {
	id, err := hub.ParseKeyID(c.r.PathValue("id"))
	if err != nil {
		return hub.Errorf(hub.CodeInvalidName, "%v", err)
	}
	k, ev, err := s.store.RevokeKey(c.ctx, c.account, id.String(), s.now())
	if errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeKeyNotFound, "you have no active key %s", id)
	}
	if err != nil {
		return err
	}
	s.relay.notify()
	s.log.Info("key revoked", "account", c.account, "key_id", k.ID, "seq", ev.Seq)
	s.reply(c, http.StatusOK, k)
	return nil
}

func (s *Server) listKeys(c *call) error {
	name, err := c.name("account")
	if err != nil {
		return err
	}
	if _, err := s.store.Account(c.ctx, name); errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeAccountNotFound, "account %q does not exist", name)
	} else if err != nil {
		return err
	}
	keys, err := s.store.Keys(c.ctx, name)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, keys)
	return nil
}

// keyFor returns the active key id of owner: the bundle check's KeyLookup.
func (s *Server) keyFor(c *call, owner string, id hub.KeyID) (hub.PublicKey, error) {
	keys, err := s.store.Keys(c.ctx, owner)
	if err != nil {
		return hub.PublicKey{}, err
	}
	for _, k := range keys {
		if !strings.EqualFold(k.ID, id.String()) {
			continue
		}
		if k.RevokedAt != nil {
			return hub.PublicKey{}, hub.Errorf(hub.CodeKeyRevoked, "key %s of %q was revoked on %s", id, owner, k.RevokedAt.Format("2006-01-02"))
		}
		pk, err := hub.ParsePublicKey(k.PublicKey)
		if err != nil {
			return hub.PublicKey{}, fmt.Errorf("stored key %s of %s: %w", k.ID, owner, err)
		}
		return pk, nil
	}
	return hub.PublicKey{}, hub.Errorf(hub.CodeKeyUnknown, "the bundle is signed with key %s, which is not registered to %q: register it first (POST /v1/keys)", id, owner)
}
