package hubserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/internal/host"
	"github.com/station-dev/station/manifest"
)

// publish accepts a signed bundle. The order of checks is the order of the
// errors a publisher sees: well-formed bundle and manifest, namespace,
// registered and active key, signature, immutability, then the module
// itself (host.Inspect: it compiles, speaks the guest ABI, imports only
// what its manifest grants, is within the install limits). The wasm is
// decoded into a blob as the body arrives (no request holds a module in
// memory: the check reads the module's skeleton, which leaves out the
// contents of its custom sections), and the blob is committed — like the
// manifest's, before the version is recorded — only once every check
// passed, so a recorded version always has its blobs and a refused publish
// stores nothing.
func (s *Server) publish(c *call) error {
	if c.r.ContentLength > c.body {
		return hub.Errorf(hub.CodeTooLarge, "the request body is %d bytes; %s %s accepts at most %d", c.r.ContentLength, c.r.Method, c.r.URL.Path, c.body)
	}
	wasm, err := s.blobs.Create(c.ctx)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer wasm.Abort() // nothing once committed
	var skel host.Skeleton
	b, err := decodeBundle(clientReader{http.MaxBytesReader(c.w, c.r.Body, c.body)}, io.MultiWriter(wasm, &skel), s.limits.MaxWasmBytes)
	var mbe *http.MaxBytesError
	var be *bundleError
	var ce clientError
	switch {
	case errors.As(err, &mbe):
		return hub.Errorf(hub.CodeTooLarge, "the request body is larger than %d bytes, the most %s %s accepts", c.body, c.r.Method, c.r.URL.Path)
	case errors.As(err, &be):
		return be.err
	case errors.As(err, &ce):
		// The client's connection broke off mid-body: its fault, not a
		// backend's (a broken read looks alike from either).
		return hub.Errorf(hub.CodeBadRequest, "the request body broke off: %s", clip(ce.Error()))
	case err != nil:
		return fmt.Errorf("publish: %w", err)
	}
	contents, err := b.Open(func(owner string, id hub.KeyID) (hub.PublicKey, error) {
		if owner != c.account {
			return hub.PublicKey{}, hub.Errorf(hub.CodeNamespaceForbidden, "account %q may not publish into the namespace %q: only %q may", c.account, owner, owner)
		}
		return s.keyFor(c, owner, id)
	})
	if err != nil {
		return err
	}
	m, st := contents.Manifest, contents.Statement
	// Checked here so that a refused publish stores no blob; the store
	// checks again in its transaction.
	if mod, err := s.store.Module(c.ctx, m.ID); err == nil {
		for _, have := range mod.Versions {
			if hub.CompareVersions(have.Version, m.Version) == 0 {
				return versionExists(m.ID, m.Version)
			}
		}
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := s.inspect(c, m, &skel); err != nil {
		return err
	}
	if err := s.blobs.Put(c.ctx, st.ManifestDigest, b.Manifest); err != nil {
		return fmt.Errorf("publish %s@%s: %w", m.ID, m.Version, err)
	}
	if err := wasm.Commit(st.WasmDigest); err != nil {
		return fmt.Errorf("publish %s@%s: %w", m.ID, m.Version, err)
	}
	v := Version{
		Version: hub.Version{
			Module: m.ID, Version: m.Version, ManifestDigest: st.ManifestDigest, WasmDigest: st.WasmDigest,
			WasmSize: b.Wasm.Size, KeyID: contents.Signature.KeyID.String(), PublishedAt: s.now().UTC(),
		},
		Signature:   b.Signature,
		Description: m.Description,
	}
	// In an OCI registry the version's artifact is stored untagged before
	// the version is recorded (its blobs are then referenced: the
	// registry's garbage collection keeps them) and tagged only once it is
	// (a tag never names a version the store refused). ArtifactStore says
	// why.
	art, _ := s.blobs.(ArtifactStore)
	if art != nil {
		if err := art.PutArtifact(c.ctx, v); err != nil {
			return fmt.Errorf("publish %s@%s: %w", m.ID, m.Version, err)
		}
	}
	ev, err := s.store.Publish(c.ctx, v)
	if errors.Is(err, ErrExists) {
		return versionExists(m.ID, m.Version)
	}
	if err != nil {
		return fmt.Errorf("publish %s@%s: %w", m.ID, m.Version, err)
	}
	if art != nil {
		// The version is published whatever happens here: a missing tag
		// costs registry tools a name, not the hub a version (it never
		// reads tags). So it is logged, not answered, and it is tagged
		// even when the publisher has gone.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), time.Minute)
		if err := art.TagArtifact(ctx, v); err != nil {
			s.log.Error("publish: the version is recorded, but the registry did not tag its artifact", "request", c.id, "module", m.ID, "version", m.Version,
				"tag", ArtifactTag(m.ID, m.Version), "err", err)
		}
		cancel()
	}
	s.relay.notify()
	s.log.Info("module published", "account", c.account, "module", m.ID, "version", m.Version, "wasm_digest", st.WasmDigest, "seq", ev.Seq)
	s.reply(c, http.StatusCreated, v.Version)
	return nil
}

// inspect refuses, with every reason, a module no station would install
// (host.Inspect on the skeleton of its wasm). The hub compiles the module
// in wazero's interpreter and never runs any of it.
func (s *Server) inspect(c *call, m *manifest.Manifest, skel *host.Skeleton) error {
	start := time.Now()
	err := host.Inspect(c.ctx, m, skel.Bytes(), host.InspectOptions{Limits: s.install, Size: skel.Size()})
	var ie *host.InspectError
	switch {
	case errors.As(err, &ie):
		s.log.Info("publish refused: no station would install the module", "request", c.id, "account", c.account, "module", m.ID, "version", m.Version,
			"problems", len(ie.Problems), "took", time.Since(start))
		return hub.Errorf(hub.CodeModuleRefused, "%s@%s: %s", m.ID, m.Version, clipProblems(ie))
	case err != nil:
		return fmt.Errorf("publish %s@%s: check the module: %w", m.ID, m.Version, err)
	}
	return nil
}

// clipProblems renders a refusal's problems as one message of bounded
// length (a module can have thousands of bad imports).
func clipProblems(ie *host.InspectError) string {
	const most = 20
	msgs := make([]string, 0, min(len(ie.Problems), most))
	for i, p := range ie.Problems {
		if i == most {
			break
		}
		msgs = append(msgs, p.Message)
	}
	out := strings.Join(msgs, "; ")
	if n := len(ie.Problems); n > most {
		out += fmt.Sprintf("; and %d more problems (station module publish --dry-run lists them all)", n-most)
	}
	if len(ie.Problems) > 1 {
		out = fmt.Sprintf("no station would install it (%d problems): %s", len(ie.Problems), out)
	} else {
		out = "no station would install it: " + out
	}
	return out
}

func versionExists(id, version string) error {
	return hub.Errorf(hub.CodeVersionExists, "%s@%s (or a version of equal precedence) was published before and versions never change: bump the version in module.yaml", id, version)
}

func (s *Server) search(c *call) error {
	q := c.r.URL.Query()
	query, owner := q.Get("q"), q.Get("owner")
	if len(query) > 128 {
		return hub.Errorf(hub.CodeBadRequest, "q is longer than 128 bytes")
	}
	if owner != "" {
		if msg := hub.CheckName(owner); msg != "" {
			return hub.Errorf(hub.CodeInvalidName, "owner %q %s", clip(owner), msg)
		}
	}
	limit, err := intParam(q.Get("limit"), "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	offset, err := intParam(q.Get("offset"), "offset", 0, 0, 10_000)
	if err != nil {
		return err
	}
	mods, err := s.store.Search(c.ctx, query, owner, offset, limit)
	if err != nil {
		return err
	}
	resp := hub.SearchResponse{Modules: mods}
	if len(mods) == limit {
		resp.Next = offset + limit
	}
	s.reply(c, http.StatusOK, resp)
	return nil
}

func intParam(v, name string, def, min, max int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, hub.Errorf(hub.CodeBadRequest, "%s must be an integer from %d to %d", name, min, max)
	}
	return n, nil
}

func (s *Server) module(c *call) error {
	id, err := c.moduleID()
	if err != nil {
		return err
	}
	m, err := s.store.Module(c.ctx, id)
	if errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeModuleNotFound, "module %s does not exist", id)
	}
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, m)
	return nil
}

// findVersion returns a stored version, or module_not_found /
// version_not_found.
func (s *Server) findVersion(c *call) (Version, error) {
	id, version, err := c.moduleVersion()
	if err != nil {
		return Version{}, err
	}
	v, err := s.store.Version(c.ctx, id, version)
	if errors.Is(err, ErrNotFound) {
		if _, err := s.store.Module(c.ctx, id); errors.Is(err, ErrNotFound) {
			return Version{}, hub.Errorf(hub.CodeModuleNotFound, "module %s does not exist", id)
		}
		return Version{}, hub.Errorf(hub.CodeVersionNotFound, "module %s has no version %s", id, version)
	}
	return v, err
}

func (s *Server) version(c *call) error {
	v, err := s.findVersion(c)
	if err != nil {
		return err
	}
	s.reply(c, http.StatusOK, v.Version)
	return nil
}

// bundle serves a version's bundle. Yanked versions are still served: a
// lockfile may pin one, and the station decides what to do with a yank.
// The wasm is encoded from its blob as it is read, and hashed on the way:
// if what was sent is not the recorded bytes (a corrupted file), the
// response is broken off, so a client never gets a complete bundle with
// other bytes (the station verifies the digests too).
func (s *Server) bundle(c *call) error {
	v, err := s.findVersion(c)
	if err != nil {
		return err
	}
	man, err := s.blobs.Get(c.ctx, v.ManifestDigest, manifest.MaxFileSize)
	if err != nil {
		return fmt.Errorf("bundle %s@%s: %w", v.Module, v.Version.Version, err)
	}
	wasm, err := s.blobs.Open(c.ctx, v.WasmDigest)
	if err != nil {
		return fmt.Errorf("bundle %s@%s: %w", v.Module, v.Version.Version, err)
	}
	defer wasm.Close()
	sig, err := json.Marshal(v.Signature)
	if err != nil {
		return err
	}
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=31536000, immutable") // the bytes of a version never change
	h.Set("Content-Length", strconv.FormatInt(bundleJSONSize(len(man), v.WasmSize, sig), 10))
	c.w.WriteHeader(http.StatusOK)
	digest, n, err := writeBundle(c.w, man, io.LimitReader(wasm, v.WasmSize+1), sig)
	switch {
	case err != nil:
		// The client went away, or the blob could not be read: either
		// way the answer is cut short, and the client refuses it.
		if c.ctx.Err() == nil {
			s.log.Warn("bundle: the answer was cut short", "request", c.id, "module", v.Module, "version", v.Version.Version, "err", err)
		}
		panic(http.ErrAbortHandler)
	case n != v.WasmSize || digest != v.WasmDigest:
		s.log.Error("bundle: the stored wasm is corrupt; the answer was broken off", "request", c.id, "module", v.Module, "version", v.Version.Version,
			"want", v.WasmDigest, "size", v.WasmSize, "got", digest, "got_size", n)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) yank(c *call) error {
	var req hub.YankRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	if err := checkText("reason", req.Reason, 1024); err != nil {
		return err
	}
	return s.setYanked(c, true, req.Reason)
}

func (s *Server) unyank(c *call) error { return s.setYanked(c, false, "") }

func (s *Server) setYanked(c *call, yanked bool, reason string) error {
	id, version, err := c.moduleVersion()
	if err != nil {
		return err
	}
	if owner, _, _ := strings.Cut(id, "/"); owner != c.account {
		return hub.Errorf(hub.CodeNamespaceForbidden, "only %q may yank or unyank %s", owner, id)
	}
	v, ev, err := s.store.SetYanked(c.ctx, id, version, yanked, reason, c.account, s.now())
	if errors.Is(err, ErrNotFound) {
		return hub.Errorf(hub.CodeVersionNotFound, "module %s has no version %s", id, version)
	}
	if err != nil {
		return err
	}
	if ev != nil {
		s.relay.notify()
		s.log.Info(ev.Kind, "account", c.account, "module", id, "version", version, "seq", ev.Seq)
	}
	s.reply(c, http.StatusOK, v)
	return nil
}

// clientReader marks the errors of reading a request's body as the
// client's (clientError), so that they are never taken for a backend's
// that did not answer.
type clientReader struct{ r io.Reader }

func (c clientReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			err = clientError{err}
		}
	}
	return n, err
}

// clientError is a failure to read the request's body.
type clientError struct{ error }

func (e clientError) Unwrap() error { return e.error }
