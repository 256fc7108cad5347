package hubserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/station-dev/station/hub"
	"github.com/station-dev/station/manifest"
)

// The media types of a published version as an OCI artifact (an image
// manifest in the OCI 1.1 "artifact" form: artifactType set, the empty
// config). docs/hub-operations.md lists them; they are part of what
// registry-native tools (oras, crane, skopeo) see.
const (
	// MediaTypeModuleArtifact is the artifact's artifactType.
	MediaTypeModuleArtifact = "application/vnd.station.module.v1"
	// MediaTypeModuleManifest is the layer of the module's manifest,
	// module.yaml as published (YAML).
	MediaTypeModuleManifest = "application/vnd.station.module.manifest.v1+yaml"
	// MediaTypeWasm is the layer of the module's WebAssembly binary.
	MediaTypeWasm = "application/wasm"
	// MediaTypeModuleSignature is the layer of the bundle's minisign
	// signature (a .minisig file; hub-protocol.md says what it signs).
	MediaTypeModuleSignature = "application/vnd.station.module.signature.v1+minisign"

	mediaTypeOCIManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeOCIEmpty    = "application/vnd.oci.empty.v1+json"
)

// Annotations of an artifact beyond the org.opencontainers.image ones.
const (
	AnnotationModule = "dev.station.module.id"
	AnnotationKeyID  = "dev.station.module.key-id"
)

// ociEmpty is the OCI 1.1 empty descriptor's content, the config of an
// artifact that has none.
var ociEmpty = []byte("{}")

// ArtifactStore is a Blobs that also records each published version as an
// OCI artifact: a manifest that references the version's blobs, so that the
// registry's garbage collection keeps them and registry tools can list and
// pull versions. The hub never reads artifacts back: the Store keeps what a
// version is (digests, signature); the registry keeps bytes.
//
// Publishing is two steps around Store.Publish (modules.go): PutArtifact
// before it stores the manifest untagged, by digest — from then on the
// blobs are referenced, whether or not the Store records the version —
// and TagArtifact after it tags that manifest, only for a version the
// Store recorded. A tag therefore never names a version the Store refused
// (a publish that lost a race for the same version to another hub process
// leaves an untagged manifest, garbage that names nothing), and since a
// recorded version never changes, a tag is written with one content only.
// Both are idempotent: the manifest is a function of the version.
type ArtifactStore interface {
	PutArtifact(ctx context.Context, v Version) error
	TagArtifact(ctx context.Context, v Version) error
}

// OCIRegistry keeps blobs in one repository of an OCI registry (the
// distribution API: docker-registry, zot, Harbor, ghcr.io, ECR...), and
// records published versions in it as artifacts (ArtifactStore).
//
// The registry is trusted for availability, not integrity: Get checks what
// it returns against the digest, Open's reader fails at its end when the
// bytes do not match, and stations verify digests and signatures again.
type OCIRegistry struct {
	origin string // scheme://host[:port] of the registry
	repo   string
	client *http.Client
	user   string
	pass   string
	hasPW  bool // credentials were given (a user, a password or both)
	public string

	mu        sync.Mutex
	challenge *authChallenge    // what the registry asked for, once it did
	tokens    map[string]bearer // bearer tokens by scope

	haveEmpty atomic.Bool // the empty config blob is known to be stored
}

var (
	_ Blobs         = (*OCIRegistry)(nil)
	_ ArtifactStore = (*OCIRegistry)(nil)
	_ Pinger        = (*OCIRegistry)(nil)
)

// OCIOptions configure OpenOCI.
type OCIOptions struct {
	// Username and Password are the registry's credentials when the URL
	// has none (OpenBlobs takes them from $STATION_HUB_OCI_USERNAME and
	// $STATION_HUB_OCI_PASSWORD).
	Username, Password string
	// Client sends the requests (default: one of the registry's own). Its
	// CheckRedirect is replaced: redirects are followed here, without the
	// credentials when they lead to another host.
	Client *http.Client
}

// Limits on what the registry sends back outside a blob.
const (
	maxOCIErrorBody    = 64 << 10
	maxOCITokenBody    = 1 << 20
	maxOCIRedirects    = 5
	ociTokenMinimum    = 60 * time.Second // the token spec's default lifetime
	ociTokenEarly      = 15 * time.Second // renewed this long before it expires
	ociCleanupDeadline = 10 * time.Second
)

// ociRepository is the distribution spec's repository name.
var ociRepository = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)

// parseOCIURL checks an OCI blob store's URL and returns the registry's
// origin (https://host[:port], or http:// for oci+http://) and repository.
// oci://host[:port]/repository is HTTPS; oci+http://host[:port]/repository
// is plain HTTP, which is never chosen for a scheme-less host (not even a
// loopback one): the scheme says it.
func parseOCIURL(raw string) (origin, repo string, user *url.Userinfo, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's parse errors quote the URL, password included: say only
		// that it did not parse.
		return "", "", nil, errors.New("OCI registry URL does not parse: want oci://host[:port]/repository (a password with %, a space or a quote must be percent-encoded; better, give it in $STATION_HUB_OCI_PASSWORD)")
	}
	var scheme string
	switch u.Scheme {
	case "oci":
		scheme = "https"
	case "oci+http":
		scheme = "http"
	default:
		return "", "", nil, fmt.Errorf("OCI registry URL %q: want oci://host[:port]/repository (HTTPS) or oci+http://host[:port]/repository (plain HTTP)", redactURL(u))
	}
	if u.Host == "" || u.Opaque != "" {
		return "", "", nil, fmt.Errorf("OCI registry URL %q: no host; want %s://host[:port]/repository", redactURL(u), u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", "", nil, fmt.Errorf("OCI registry URL %q: takes no ?query or #fragment (plain HTTP is oci+http://, credentials are user:password@ or $STATION_HUB_OCI_USERNAME/PASSWORD)", redactURL(u))
	}
	repo = strings.Trim(u.Path, "/")
	if repo == "" {
		return "", "", nil, fmt.Errorf("OCI registry URL %q: no repository; want %s://%s/repository, e.g. %s://%s/station/modules", redactURL(u), u.Scheme, u.Host, u.Scheme, u.Host)
	}
	if len(repo) > 255 || !ociRepository.MatchString(repo) {
		return "", "", nil, fmt.Errorf("OCI registry URL %q: repository %q is not a valid name: lower-case letters and digits, separated by '.', '_', '__' or '-', in '/'-separated parts (e.g. station/modules)", redactURL(u), repo)
	}
	return scheme + "://" + u.Host, repo, u.User, nil
}

func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// OpenOCI returns the blob store in the repository raw names
// (oci://host[:port]/repository or oci+http://...), after checking that the
// registry answers the distribution API (GET /v2/) and lets its credentials
// read the repository.
func OpenOCI(ctx context.Context, raw string, o OCIOptions) (*OCIRegistry, error) {
	origin, repo, ui, err := parseOCIURL(raw)
	if err != nil {
		return nil, err
	}
	r := &OCIRegistry{origin: origin, repo: repo, user: o.Username, pass: o.Password, tokens: map[string]bearer{}}
	if ui != nil {
		r.user = ui.Username()
		r.pass, _ = ui.Password()
	}
	r.hasPW = r.user != "" || r.pass != ""
	u, _ := url.Parse(raw)
	r.public = redactURL(u)
	if o.Client != nil {
		c := *o.Client
		r.client = &c
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// A registry that takes a request and never answers it fails the
		// request, not the hub: blobs stream, so there is no overall
		// timeout, only this one and the request's context.
		tr.ResponseHeaderTimeout = time.Minute
		tr.MaxIdleConnsPerHost = 16
		r.client = &http.Client{Transport: tr}
	}
	r.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if err := r.Ping(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// String is the registry's URL without credentials.
func (r *OCIRegistry) String() string { return r.public }

// Ping checks /v2/ (which may ask for credentials, then answered), and
// that the repository may be read: a HEAD of a blob in it. OpenOCI pings,
// and /readyz (Pinger).
func (r *OCIRegistry) Ping(ctx context.Context) error {
	resp, err := r.send(ctx, ociRequest{method: http.MethodGet, url: r.origin + "/v2/"})
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%s answers 404 at /v2/: it is not an OCI registry (the distribution API), or the URL's host is wrong", r.public)
		}
		return r.fail("open", resp)
	}
	if _, err := r.exists(ctx, hub.Digest(ociEmpty)); err != nil {
		return err
	}
	return nil
}

// blobURL is the URL of a blob of the repository.
func (r *OCIRegistry) blobURL(digest string) string {
	return r.origin + "/v2/" + r.repo + "/blobs/" + digest
}

// exists reports whether the registry has the blob (HEAD).
func (r *OCIRegistry) exists(ctx context.Context, digest string) (bool, error) {
	resp, err := r.send(ctx, ociRequest{method: http.MethodHead, url: r.blobURL(digest)})
	if err != nil {
		return false, err
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, r.fail("check blob "+digest, resp)
}

// Put uploads data in one request (POST, then PUT ?digest=) unless the
// registry has it already.
func (r *OCIRegistry) Put(ctx context.Context, digest string, data []byte) error {
	if !hub.ValidDigest(digest) {
		return fmt.Errorf("blob %q: not a sha256 digest", digest)
	}
	if got := hub.Digest(data); got != digest {
		return fmt.Errorf("put blob %s: data has digest %s", digest, got)
	}
	if ok, err := r.exists(ctx, digest); err != nil || ok {
		return err
	}
	loc, err := r.startUpload(ctx)
	if err != nil {
		return fmt.Errorf("put blob %s: %w", digest, err)
	}
	if err := r.finishUpload(ctx, loc, digest, data); err != nil {
		r.cancelUpload(ctx, loc)
		return fmt.Errorf("put blob %s: %w", digest, err)
	}
	return nil
}

// startUpload opens an upload session (POST .../blobs/uploads/) and
// returns its location.
func (r *OCIRegistry) startUpload(ctx context.Context) (string, error) {
	u := r.origin + "/v2/" + r.repo + "/blobs/uploads/"
	resp, err := r.send(ctx, ociRequest{method: http.MethodPost, url: u, push: true})
	if err != nil {
		return "", err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusAccepted {
		return "", r.fail("start upload", resp)
	}
	return location(resp)
}

// location returns a response's Location, resolved against its request.
func location(resp *http.Response) (string, error) {
	loc, err := resp.Location()
	if err != nil {
		return "", fmt.Errorf("the registry answered %s %s without a usable Location (%v)", resp.Request.Method, resp.Request.URL.Path, err)
	}
	if loc.Scheme != "http" && loc.Scheme != "https" {
		return "", fmt.Errorf("the registry sent the location %q, which is not http(s)", clip(loc.String()))
	}
	// A redirect, and an upload's bytes and session, go where the
	// location says: from https never in clear.
	if loc.Scheme == "http" && resp.Request.URL.Scheme == "https" {
		return "", fmt.Errorf("the registry sent %s %s from https to plain http (%s): refused, it would travel in clear; fix the registry's storage redirect or upload URL, or turn it off", resp.Request.Method, resp.Request.URL.Path, clip(originOf(loc.String())))
	}
	return loc.String(), nil
}

// finishUpload ends an upload session with its last bytes (PUT
// location?digest=) and checks the digest the registry reports.
func (r *OCIRegistry) finishUpload(ctx context.Context, loc, digest string, data []byte) error {
	u, err := url.Parse(loc)
	if err != nil {
		return fmt.Errorf("upload location %q: %w", clip(loc), err)
	}
	q := u.Query()
	q.Set("digest", digest)
	u.RawQuery = q.Encode()
	resp, err := r.send(ctx, ociRequest{method: http.MethodPut, url: u.String(), body: data, push: true,
		header: http.Header{"Content-Type": {"application/octet-stream"}}})
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated {
		return r.fail("finish upload", resp)
	}
	if got := resp.Header.Get("Docker-Content-Digest"); got != "" && got != digest {
		return fmt.Errorf("the registry stored the upload as %s, not %s: it does not keep the bytes it was sent", clip(got), digest)
	}
	return nil
}

// cancelUpload deletes an upload session that will not be finished (best
// effort: registries also expire them).
func (r *OCIRegistry) cancelUpload(ctx context.Context, loc string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ociCleanupDeadline)
	defer cancel()
	if resp, err := r.send(ctx, ociRequest{method: http.MethodDelete, url: loc, push: true}); err == nil {
		drain(resp)
	}
}

// Get downloads a blob (following the registry's redirects, e.g. to its
// storage), refusing one larger than maxSize or whose bytes do not match
// digest.
func (r *OCIRegistry) Get(ctx context.Context, digest string, maxSize int64) ([]byte, error) {
	resp, err := r.openBlob(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", digest, err)
	}
	defer resp.Body.Close()
	if resp.ContentLength > maxSize {
		return nil, fmt.Errorf("get blob %s: the registry sends %d bytes, more than the %d expected", digest, resp.ContentLength, maxSize)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("get blob %s from %s: %w", digest, r.public, err)
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("get blob %s: larger than %d bytes", digest, maxSize)
	}
	if got := hub.Digest(data); got != digest {
		return nil, fmt.Errorf("get blob %s: the registry sent other bytes (digest %s): it, or its storage, is corrupt or hostile", digest, got)
	}
	return data, nil
}

// Open downloads a blob as a stream. The reader checks the bytes against
// digest as they pass and fails at the end instead of returning io.EOF
// when they do not match.
func (r *OCIRegistry) Open(ctx context.Context, digest string) (io.ReadCloser, error) {
	resp, err := r.openBlob(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("open blob %s: %w", digest, err)
	}
	return &verifyingReader{body: resp.Body, h: sha256.New(), digest: digest}, nil
}

// openBlob GETs a blob: ErrNotFound on 404, an error on anything but 200.
func (r *OCIRegistry) openBlob(ctx context.Context, digest string) (*http.Response, error) {
	if !hub.ValidDigest(digest) {
		return nil, fmt.Errorf("not a sha256 digest")
	}
	resp, err := r.send(ctx, ociRequest{method: http.MethodGet, url: r.blobURL(digest)})
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp, nil
	case http.StatusNotFound:
		drain(resp)
		return nil, ErrNotFound
	}
	defer drain(resp)
	return nil, r.fail("download", resp)
}

// verifyingReader is a blob's body, hashed as it is read.
type verifyingReader struct {
	body   io.ReadCloser
	h      hash.Hash
	digest string
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.body.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := "sha256:" + hex.EncodeToString(v.h.Sum(nil)); got != v.digest {
			return n, fmt.Errorf("blob %s: the registry sent other bytes (digest %s): it, or its storage, is corrupt or hostile", v.digest, got)
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.body.Close() }

// Create opens an upload session at once (so that a registry refusing it
// fails the request before its body is read) and streams what is written
// to it in one PATCH, as docker push does: nothing is held in memory or on
// disk.
func (r *OCIRegistry) Create(ctx context.Context) (BlobWriter, error) {
	loc, err := r.startUpload(ctx)
	if err != nil {
		return nil, fmt.Errorf("create blob: %w", err)
	}
	return &ociUpload{r: r, ctx: ctx, loc: loc, h: sha256.New()}, nil
}

// ociUpload is a blob being streamed to an upload session.
type ociUpload struct {
	r    *OCIRegistry
	ctx  context.Context
	loc  string
	h    hash.Hash
	done bool // committed or aborted

	pw      *io.PipeWriter // the PATCH's body, once something was written
	patched chan struct{}  // closed when the PATCH returned
	next    string         // the location after the PATCH
	err     error          // the PATCH's error
}

var errUploadAborted = errors.New("the upload was aborted")

func (w *ociUpload) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("write blob: already committed or aborted")
	}
	if w.pw == nil {
		w.start()
	}
	n, err := w.pw.Write(p)
	w.h.Write(p[:n])
	if err != nil {
		return n, fmt.Errorf("upload blob to %s: %w", w.r.public, err)
	}
	return n, nil
}

// start sends the PATCH whose body is what Write is given.
func (w *ociUpload) start() {
	pr, pw := io.Pipe()
	w.pw, w.patched = pw, make(chan struct{})
	go func() {
		defer close(w.patched)
		resp, err := w.r.send(w.ctx, ociRequest{method: http.MethodPatch, url: w.loc, stream: pr, push: true,
			header: http.Header{"Content-Type": {"application/octet-stream"}}})
		if err == nil {
			if resp.StatusCode == http.StatusAccepted {
				w.next, err = location(resp)
			} else {
				err = w.r.fail("upload", resp)
			}
			drain(resp)
		}
		if err == nil {
			err = errors.New("the registry ended the upload before the blob did")
		} else {
			w.err = err
		}
		pr.CloseWithError(err) // a Write after the PATCH ended fails with why
	}()
}

// Commit checks the digest of what was written, ends the PATCH and
// finishes the upload (PUT ?digest=), checking the digest the registry
// reports.
func (w *ociUpload) Commit(digest string) error {
	if w.done {
		return errors.New("commit blob: already committed or aborted")
	}
	if !hub.ValidDigest(digest) {
		w.Abort()
		return fmt.Errorf("blob %q: not a sha256 digest", digest)
	}
	if got := "sha256:" + hex.EncodeToString(w.h.Sum(nil)); got != digest {
		w.Abort()
		return fmt.Errorf("commit blob %s: data has digest %s", digest, got)
	}
	loc := w.loc
	if w.pw != nil {
		w.pw.Close()
		<-w.patched
		if w.err != nil {
			w.Abort()
			return fmt.Errorf("commit blob %s: %w", digest, w.err)
		}
		loc = w.next
	}
	w.done = true
	if err := w.r.finishUpload(w.ctx, loc, digest, nil); err != nil {
		w.r.cancelUpload(w.ctx, loc)
		return fmt.Errorf("commit blob %s: %w", digest, err)
	}
	return nil
}

// Abort ends the PATCH with an error and deletes the upload session.
func (w *ociUpload) Abort() {
	if w.done {
		return
	}
	w.done = true
	loc := w.loc
	if w.pw != nil {
		w.pw.CloseWithError(errUploadAborted)
		<-w.patched
		if w.next != "" {
			loc = w.next
		}
	}
	w.r.cancelUpload(w.ctx, loc)
}

// ociDescriptor and ociManifest are the OCI image manifest, as far as an
// artifact uses it.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Data        []byte            `json:"data,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        ociDescriptor     `json:"config"`
	Layers        []ociDescriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations"`
}

// artifact returns v's artifact manifest (the same bytes for the same
// version) after storing the blobs it references beyond v's own: the
// empty config and the signature.
func (r *OCIRegistry) artifact(ctx context.Context, v Version) ([]byte, error) {
	if !r.haveEmpty.Load() {
		if err := r.Put(ctx, hub.Digest(ociEmpty), ociEmpty); err != nil {
			return nil, err
		}
		r.haveEmpty.Store(true)
	}
	sig := []byte(v.Signature)
	if err := r.Put(ctx, hub.Digest(sig), sig); err != nil {
		return nil, err
	}
	// The descriptor needs the manifest's size, which the Store does not
	// keep; the blob is small and was just stored.
	man, err := r.Get(ctx, v.ManifestDigest, manifest.MaxFileSize)
	if err != nil {
		return nil, err
	}
	title := "org.opencontainers.image.title"
	m := ociManifest{
		SchemaVersion: 2,
		MediaType:     mediaTypeOCIManifest,
		ArtifactType:  MediaTypeModuleArtifact,
		Config:        ociDescriptor{MediaType: mediaTypeOCIEmpty, Digest: hub.Digest(ociEmpty), Size: int64(len(ociEmpty)), Data: ociEmpty},
		Layers: []ociDescriptor{
			{MediaType: MediaTypeModuleManifest, Digest: v.ManifestDigest, Size: int64(len(man)), Annotations: map[string]string{title: "module.yaml"}},
			{MediaType: MediaTypeWasm, Digest: v.WasmDigest, Size: v.WasmSize, Annotations: map[string]string{title: "module.wasm"}},
			{MediaType: MediaTypeModuleSignature, Digest: hub.Digest(sig), Size: int64(len(sig)), Annotations: map[string]string{title: "module.minisig"}},
		},
		Annotations: map[string]string{
			title:                              v.Module,
			"org.opencontainers.image.version": v.Version.Version,
			"org.opencontainers.image.created": v.PublishedAt.UTC().Format(time.RFC3339),
			AnnotationModule:                   v.Module,
			AnnotationKeyID:                    v.KeyID,
		},
	}
	return json.Marshal(m) // maps marshal in key order: deterministic
}

// PutArtifact stores v's artifact manifest by its digest, untagged.
func (r *OCIRegistry) PutArtifact(ctx context.Context, v Version) error {
	body, err := r.artifact(ctx, v)
	if err != nil {
		return fmt.Errorf("artifact of %s@%s: %w", v.Module, v.Version.Version, err)
	}
	if err := r.putManifest(ctx, hub.Digest(body), body); err != nil {
		return fmt.Errorf("artifact of %s@%s: %w", v.Module, v.Version.Version, err)
	}
	return nil
}

// TagArtifact stores v's artifact manifest under its tag (ArtifactTag).
func (r *OCIRegistry) TagArtifact(ctx context.Context, v Version) error {
	body, err := r.artifact(ctx, v)
	if err != nil {
		return fmt.Errorf("tag %s@%s: %w", v.Module, v.Version.Version, err)
	}
	if err := r.putManifest(ctx, ArtifactTag(v.Module, v.Version.Version), body); err != nil {
		return fmt.Errorf("tag %s@%s: %w", v.Module, v.Version.Version, err)
	}
	return nil
}

func (r *OCIRegistry) putManifest(ctx context.Context, ref string, body []byte) error {
	resp, err := r.send(ctx, ociRequest{method: http.MethodPut, url: r.origin + "/v2/" + r.repo + "/manifests/" + ref, body: body, push: true,
		header: http.Header{"Content-Type": {mediaTypeOCIManifest}}})
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated {
		return r.fail("push manifest "+ref, resp)
	}
	if got, want := resp.Header.Get("Docker-Content-Digest"), hub.Digest(body); got != "" && got != want {
		return fmt.Errorf("the registry stored the manifest as %s, not %s", clip(got), want)
	}
	return nil
}

// maxTag is the longest tag the distribution spec allows.
const maxTag = 128

// ArtifactTag is the tag of a version's artifact: owner_slug_version, with
// a version's build metadata after a second '_' instead of '+' (a tag may
// not contain '+'): dave_stripe-invoicing_1.4.0, dave_x_1.0.0-rc.1_exp.sha.5114f85.
// Names and versions never contain '_', so the tag is one version's only.
// One longer than a tag may be keeps its first 110 bytes and ends in "__"
// and 16 hex digits of the SHA-256 of id@version ("__" is in no other tag).
func ArtifactTag(id, version string) string {
	owner, slug, _ := strings.Cut(id, "/")
	tag := owner + "_" + slug + "_" + strings.Replace(version, "+", "_", 1)
	if len(tag) <= maxTag {
		return tag
	}
	sum := sha256.Sum256([]byte(id + "@" + version))
	return tag[:maxTag-18] + "__" + hex.EncodeToString(sum[:8])
}

// ociRequest is a request to the registry. Its body is body (sent again
// after an authentication challenge) or stream (sent once, chunked).
type ociRequest struct {
	method string
	url    string
	header http.Header
	body   []byte
	stream io.Reader
	push   bool // the request writes: a token for pull and push
}

// send sends req with the registry's credentials, answers an
// authentication challenge (Basic, or the distribution token flow), and
// follows redirects of a GET or HEAD — without the credentials when one
// leads away from the registry's origin, and never from https to http.
func (r *OCIRegistry) send(ctx context.Context, req ociRequest) (*http.Response, error) {
	target := req.url
	for redirects := 0; ; redirects++ {
		sameOrigin := originOf(target) == r.origin
		resp, err := r.roundTrip(ctx, req, target, sameOrigin)
		if err != nil {
			return nil, err
		}
		if sameOrigin && resp.StatusCode == http.StatusUnauthorized && req.stream == nil {
			retry, err := r.answer(ctx, resp, req.push)
			if err != nil {
				drain(resp)
				return nil, err
			}
			if retry {
				drain(resp)
				resp, err = r.roundTrip(ctx, req, target, true)
				if err != nil {
					return nil, err
				}
			}
		}
		if !isRedirect(resp.StatusCode) || (req.method != http.MethodGet && req.method != http.MethodHead) {
			return resp, nil
		}
		loc, err := location(resp)
		drain(resp)
		if err != nil {
			return nil, err
		}
		if redirects == maxOCIRedirects {
			return nil, fmt.Errorf("%s: more than %d redirects from %s", req.method, maxOCIRedirects, r.public)
		}
		target = loc // never from https to plain http: location refuses it
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// originOf returns scheme://host of a URL ("" when it does not parse).
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// roundTrip sends one request, with credentials when auth.
func (r *OCIRegistry) roundTrip(ctx context.Context, req ociRequest, target string, auth bool) (*http.Response, error) {
	var body io.Reader
	if req.stream != nil {
		body = req.stream
	} else if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("registry request: %w", err)
	}
	if req.stream != nil {
		hr.ContentLength = -1
	}
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	hr.Header.Set("User-Agent", "station-hub")
	if auth {
		a, err := r.authorization(ctx, req.push)
		if err != nil {
			return nil, err
		}
		if a != "" {
			hr.Header.Set("Authorization", a)
		}
	}
	resp, err := r.client.Do(hr)
	if err != nil {
		return nil, r.unreachable(err)
	}
	return resp, nil
}

// unreachable explains a request that got no answer.
func (r *OCIRegistry) unreachable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var cve *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	switch {
	case errors.As(err, &cve):
		return fmt.Errorf("registry %s: its TLS certificate does not verify (%v): for a private CA, add it to the system's roots or set SSL_CERT_FILE", r.public, err)
	case errors.As(err, &rhe), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("registry %s speaks plain HTTP, not HTTPS: use oci+http:// if that is intended", r.public)
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) {
		return unavailable(fmt.Errorf("registry %s is unreachable (%v): is it running, and is the host and port in the URL right?", r.public, err))
	}
	return fmt.Errorf("registry %s: %w", r.public, err)
}

// authChallenge is what a registry's WWW-Authenticate asked for.
type authChallenge struct {
	scheme  string // "basic" or "bearer"
	realm   string
	service string
}

// bearer is a token of the distribution token flow.
type bearer struct {
	token   string
	expires time.Time
}

func (r *OCIRegistry) scope(push bool) string {
	if push {
		return "repository:" + r.repo + ":pull,push"
	}
	return "repository:" + r.repo + ":pull"
}

// authorization returns the Authorization header for a request to the
// registry: none before it asked, Basic, or a bearer token for the
// request's scope (fetched, or renewed shortly before it expires).
func (r *OCIRegistry) authorization(ctx context.Context, push bool) (string, error) {
	r.mu.Lock()
	ch := r.challenge
	tok, ok := r.tokens[r.scope(push)]
	r.mu.Unlock()
	switch {
	case ch == nil:
		return "", nil
	case ch.scheme == "basic":
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(r.user+":"+r.pass)), nil
	case ok && time.Until(tok.expires) > ociTokenEarly:
		return "Bearer " + tok.token, nil
	}
	tok, err := r.fetchToken(ctx, ch, push)
	if err != nil {
		return "", err
	}
	return "Bearer " + tok.token, nil
}

// answer handles a 401: it records the challenge and reports whether the
// request is worth sending again (with credentials it did not have).
func (r *OCIRegistry) answer(ctx context.Context, resp *http.Response, push bool) (bool, error) {
	ch, err := parseChallenges(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false, fmt.Errorf("registry %s: %w", r.public, err)
	}
	r.mu.Lock()
	prev := r.challenge
	r.challenge = ch
	r.mu.Unlock()
	switch ch.scheme {
	case "basic":
		if !r.hasPW {
			return false, fmt.Errorf("registry %s asks for credentials: set $STATION_HUB_OCI_USERNAME and $STATION_HUB_OCI_PASSWORD (or user:password@ in the URL)", r.public)
		}
		if prev != nil && prev.scheme == "basic" {
			return false, r.refused()
		}
		return true, nil
	default:
		// Bearer: send again with another token for this scope — the one
		// a concurrent request fetched since this one was sent, or a new
		// one (the registry revoked or rotated the one sent). A new token
		// refused too is an answer of credentials refused (the caller
		// sees that second 401).
		sent := strings.TrimPrefix(resp.Request.Header.Get("Authorization"), "Bearer ")
		scope := r.scope(push)
		r.mu.Lock()
		tok, had := r.tokens[scope]
		newer := had && tok.token != sent && time.Until(tok.expires) > ociTokenEarly
		if !newer {
			delete(r.tokens, scope)
		}
		r.mu.Unlock()
		if newer {
			return true, nil
		}
		if _, err := r.fetchToken(ctx, ch, push); err != nil {
			return false, err
		}
		return true, nil
	}
}

func (r *OCIRegistry) refused() error {
	if !r.hasPW {
		return fmt.Errorf("registry %s refused an anonymous request: set $STATION_HUB_OCI_USERNAME and $STATION_HUB_OCI_PASSWORD (or user:password@ in the URL)", r.public)
	}
	return fmt.Errorf("registry %s refused the credentials of %q: check $STATION_HUB_OCI_USERNAME and $STATION_HUB_OCI_PASSWORD (or the URL's user:password@), and that the account may pull and push %s", r.public, r.user, r.repo)
}

// fetchToken gets a bearer token for the repository from the challenge's
// realm (the distribution token flow), sending the credentials, if any, as
// Basic. The realm must be https, or http only when the registry is.
func (r *OCIRegistry) fetchToken(ctx context.Context, ch *authChallenge, push bool) (bearer, error) {
	realm, err := url.Parse(ch.realm)
	if err != nil || realm.Host == "" || (realm.Scheme != "https" && realm.Scheme != "http") {
		return bearer{}, fmt.Errorf("registry %s names the token realm %q, which is no http(s) URL", r.public, clip(ch.realm))
	}
	if realm.Scheme == "http" && !strings.HasPrefix(r.origin, "http:") {
		return bearer{}, fmt.Errorf("registry %s names the token realm %s, plain http: refused (credentials would travel in clear)", r.public, clip(redactURL(realm)))
	}
	q := realm.Query()
	if ch.service != "" {
		q.Set("service", ch.service)
	}
	scope := r.scope(push)
	q.Set("scope", scope)
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return bearer{}, err
	}
	req.Header.Set("User-Agent", "station-hub")
	if r.hasPW {
		req.SetBasicAuth(r.user, r.pass)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return bearer{}, fmt.Errorf("token service of %s: %w", r.public, r.unreachable(err))
	}
	defer drain(resp)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return bearer{}, r.refused()
	case resp.StatusCode != http.StatusOK:
		return bearer{}, fmt.Errorf("token service of %s answered %s for %s", r.public, resp.Status, scope)
	}
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxOCITokenBody)).Decode(&t); err != nil {
		return bearer{}, fmt.Errorf("token service of %s: not a token response: %v", r.public, err)
	}
	if t.Token == "" {
		t.Token = t.AccessToken
	}
	if t.Token == "" {
		return bearer{}, fmt.Errorf("token service of %s sent no token for %s", r.public, scope)
	}
	life := time.Duration(t.ExpiresIn) * time.Second
	if life < ociTokenMinimum {
		life = ociTokenMinimum
	}
	b := bearer{token: t.Token, expires: time.Now().Add(life)}
	r.mu.Lock()
	r.tokens[scope] = b
	r.mu.Unlock()
	return b, nil
}

// parseChallenges picks the Bearer challenge of WWW-Authenticate values,
// else the Basic one (RFC 7235: a scheme, then comma-separated
// name=value or name="quoted value" parameters).
func parseChallenges(values []string) (*authChallenge, error) {
	var basic *authChallenge
	for _, v := range values {
		for _, c := range splitChallenges(v) {
			switch strings.ToLower(c.scheme) {
			case "bearer":
				if c.params["realm"] == "" {
					return nil, errors.New("it asks for a bearer token without naming the realm to get one from")
				}
				return &authChallenge{scheme: "bearer", realm: c.params["realm"], service: c.params["service"]}, nil
			case "basic":
				basic = &authChallenge{scheme: "basic"}
			}
		}
	}
	if basic == nil {
		return nil, fmt.Errorf("it answered 401 without a Basic or Bearer challenge (WWW-Authenticate %q)", clip(strings.Join(values, ", ")))
	}
	return basic, nil
}

type challenge struct {
	scheme string
	params map[string]string
}

// splitChallenges parses one WWW-Authenticate value, which may hold
// several challenges.
func splitChallenges(s string) []challenge {
	var out []challenge
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ',') {
			i++
		}
	}
	token := func() string {
		j := i
		for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != ',' && s[i] != '=' {
			i++
		}
		return s[j:i]
	}
	for skip(); i < len(s); skip() {
		name := token()
		if name == "" {
			i++
			continue
		}
		if i < len(s) && s[i] == '=' { // a parameter of the current challenge
			i++
			var val strings.Builder
			if i < len(s) && s[i] == '"' {
				for i++; i < len(s) && s[i] != '"'; i++ {
					if s[i] == '\\' && i+1 < len(s) {
						i++
					}
					val.WriteByte(s[i])
				}
				i++
			} else {
				val.WriteString(token())
			}
			if len(out) > 0 {
				out[len(out)-1].params[strings.ToLower(name)] = val.String()
			}
			continue
		}
		out = append(out, challenge{scheme: name, params: map[string]string{}})
	}
	return out
}

// fail turns an unexpected answer into an error that says what to do,
// with the registry's own error codes (the distribution spec's
// {"errors":[{"code","message"}]}) when it sent them.
func (r *OCIRegistry) fail(op string, resp *http.Response) error {
	var body struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxOCIErrorBody))
	var codes []string
	if json.Unmarshal(data, &body) == nil {
		for _, e := range body.Errors {
			codes = append(codes, e.Code)
		}
	}
	said := resp.Status
	if len(body.Errors) > 0 {
		said += ": " + clip(body.Errors[0].Code+" "+body.Errors[0].Message)
	} else if t := strings.TrimSpace(string(data)); t != "" && utf8Printable(t) {
		said += ": " + clip(t)
	}
	has := func(code string) bool {
		for _, c := range codes {
			if c == code {
				return true
			}
		}
		return false
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return r.refused()
	case resp.StatusCode == http.StatusForbidden || has("DENIED"):
		return fmt.Errorf("registry %s: %s denied (%s): the account may not pull and push repository %s; grant it that, or choose another repository", r.public, op, said, r.repo)
	case has("NAME_INVALID"):
		return fmt.Errorf("registry %s: %s: the registry refuses the repository name %q (%s); choose another (some registries want a project or namespace first, e.g. harbor.example.com/project/modules)", r.public, op, r.repo, said)
	case has("NAME_UNKNOWN"):
		return fmt.Errorf("registry %s: %s: repository %s does not exist (%s); create it (or its project) in the registry, or choose another", r.public, op, r.repo, said)
	case resp.StatusCode == http.StatusTooManyRequests:
		return unavailable(fmt.Errorf("registry %s: %s: rate-limited (%s); retry later, or raise the registry's limit for the hub's account", r.public, op, said))
	case resp.StatusCode >= 500:
		return unavailable(fmt.Errorf("registry %s: %s: %s", r.public, op, said))
	}
	return fmt.Errorf("registry %s: %s: %s", r.public, op, said)
}

func utf8Printable(s string) bool {
	for _, c := range s {
		if c < ' ' && c != '\n' && c != '\t' || c == 0xFFFD {
			return false
		}
	}
	return true
}

// drain reads a little of what is left of a body, so that the connection
// can be reused, and closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxOCIErrorBody))
	resp.Body.Close()
}
