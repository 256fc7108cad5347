package hubserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/station-dev/station/hub"
)

// Blobs stores content-addressed blobs: module manifests and wasm binaries,
// named by their digest ("sha256:<hex>"). BlobDir is the one-machine
// implementation; an OCI registry, whose blobs are addressed the same way,
// can take its place.
//
// Put is idempotent and refuses data that does not match its digest; Get
// returns exactly the bytes that were Put, or an error (ErrNotFound when
// there is no such blob) — never bytes that do not match the digest.
//
// Large blobs (a module's wasm) are never held in memory: Create takes a
// blob as it arrives and stores it under its digest only on Commit, and
// Open reads one as it is sent. What Open returns is checked by the
// reader (the hub hashes what it serves and breaks off a response whose
// bytes do not match).
type Blobs interface {
	Put(ctx context.Context, digest string, data []byte) error
	Get(ctx context.Context, digest string, maxSize int64) ([]byte, error)
	// Create starts a blob whose digest is known only once it is written.
	Create(ctx context.Context) (BlobWriter, error)
	// Open returns the blob's bytes as a stream (ErrNotFound when there is
	// no such blob).
	Open(ctx context.Context, digest string) (io.ReadCloser, error)
}

// BlobWriter receives a blob. Commit stores what was written under digest,
// which must be its digest; Abort (also after a Commit, when it does
// nothing) discards it. Nothing is visible under a digest before Commit.
type BlobWriter interface {
	io.Writer
	Commit(digest string) error
	Abort()
}

// BlobDir keeps blobs as files in a directory: dir/sha256/ab/abcdef…,
// written atomically (temporary file, fsync, rename).
type BlobDir struct {
	dir string
}

var _ Blobs = (*BlobDir)(nil)

// OpenBlobDir opens (creating it, mode 0700) the blob directory dir.
func OpenBlobDir(dir string) (*BlobDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open blob directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, "sha256"), 0o700); err != nil {
		return nil, fmt.Errorf("open blob directory %s: %w", dir, err)
	}
	// A hub that stopped while receiving a blob (Create) left its
	// temporary file. One older than any request may last is garbage; a
	// younger one may be another hub process's, still being written.
	if tmps, err := filepath.Glob(filepath.Join(abs, "sha256", ".tmp-*")); err == nil {
		for _, p := range tmps {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleBlob {
				os.Remove(p)
			}
		}
	}
	return &BlobDir{dir: abs}, nil
}

// staleBlob is the age of a temporary blob file that no request can still
// be writing (requests end within 2 minutes).
const staleBlob = time.Hour

func (b *BlobDir) path(digest string) (string, error) {
	if !hub.ValidDigest(digest) {
		return "", fmt.Errorf("blob %q: not a sha256 digest", digest)
	}
	h := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(b.dir, "sha256", h[:2], h), nil
}

// Put stores data under digest, which must be hub.Digest(data).
func (b *BlobDir) Put(ctx context.Context, digest string, data []byte) error {
	p, err := b.path(digest)
	if err != nil {
		return err
	}
	if got := hub.Digest(data); got != digest {
		return fmt.Errorf("put blob %s: data has digest %s", digest, got)
	}
	if _, err := os.Stat(p); err == nil {
		freshen(p) // content-addressed: the same bytes are there
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("put blob %s: %w", digest, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("put blob %s: %w", digest, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put blob %s: %w", digest, err)
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		d.Sync() // make the rename durable
		d.Close()
	}
	return nil
}

// freshen sets a blob file's time to now: a blob a publish finds already
// there (left by one that did not finish) is then as young as one it
// wrote, so CollectBlobs, which takes only old unnamed blobs, cannot take
// it before the publish commits the version that names it.
func freshen(p string) {
	now := time.Now()
	os.Chtimes(p, now, now)
}

// Get returns the blob, checking it against its digest (a corrupted file is
// an error, not bytes a station would then refuse with a confusing reason).
func (b *BlobDir) Get(ctx context.Context, digest string, maxSize int64) ([]byte, error) {
	p, err := b.path(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get blob %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", digest, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", digest, err)
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("get blob %s: larger than %d bytes", digest, maxSize)
	}
	if got := hub.Digest(data); got != digest {
		return nil, fmt.Errorf("get blob %s: stored file is corrupt (digest %s)", digest, got)
	}
	return data, nil
}

// Create starts a blob in a temporary file beside the others.
func (b *BlobDir) Create(ctx context.Context) (BlobWriter, error) {
	f, err := os.CreateTemp(filepath.Join(b.dir, "sha256"), ".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create blob: %w", err)
	}
	return &blobFile{dir: b, f: f, h: sha256.New()}, nil
}

// blobFile is a blob being written to a temporary file, hashed as it goes.
type blobFile struct {
	dir  *BlobDir
	f    *os.File
	h    hash.Hash
	done bool
}

func (w *blobFile) Write(p []byte) (int, error) {
	w.h.Write(p)
	return w.f.Write(p)
}

// Commit checks the digest of what was written, makes it durable and
// renames it into place.
func (w *blobFile) Commit(digest string) error {
	if w.done {
		return errors.New("commit blob: already committed or aborted")
	}
	p, err := w.dir.path(digest)
	if err != nil {
		w.Abort()
		return err
	}
	if got := "sha256:" + hex.EncodeToString(w.h.Sum(nil)); got != digest {
		w.Abort()
		return fmt.Errorf("commit blob %s: data has digest %s", digest, got)
	}
	w.done = true
	tmp := w.f.Name()
	err = w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.MkdirAll(filepath.Dir(p), 0o700)
	}
	if err == nil {
		if _, serr := os.Stat(p); serr == nil {
			os.Remove(tmp) // content-addressed: the same bytes are there
			freshen(p)
			return nil
		}
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("commit blob %s: %w", digest, err)
	}
	if d, err := os.Open(filepath.Dir(p)); err == nil {
		d.Sync() // make the rename durable
		d.Close()
	}
	return nil
}

func (w *blobFile) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// Open opens the blob's file for reading.
func (b *BlobDir) Open(ctx context.Context, digest string) (io.ReadCloser, error) {
	p, err := b.path(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open blob %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %s: %w", digest, err)
	}
	return f, nil
}

// OpenDir opens the one-machine storage of a hub data directory: the
// database dir/hub.db and the blob directory dir/blobs. The directory is
// created with mode 0700: it holds token hashes and team state.
func OpenDir(dir string) (*SQLite, *BlobDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("open hub data directory %s: %w", dir, err)
	}
	st, err := OpenSQLite(filepath.Join(dir, "hub.db"))
	if err != nil {
		return nil, nil, err
	}
	blobs, err := OpenBlobDir(filepath.Join(dir, "blobs"))
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, blobs, nil
}
