package hubserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/station-dev/station/hub"
)

// A publish stores its blobs before the store records the version that
// names them (modules.go), so a publish that failed or was killed between
// the two leaves blobs no version names. They are harmless — nothing serves
// them — and CollectBlobs removes them from a blob directory. In an OCI
// registry the same publish leaves an untagged manifest, which the
// registry's own garbage collection removes (docs/hub-operations.md).

// DefaultCollectAge is how old an unnamed blob must be before CollectBlobs
// removes it: far longer than a publish may take (requests end within
// minutes), so a publish in flight never loses a blob it has just stored.
const DefaultCollectAge = time.Hour

// CollectOptions configure CollectBlobs.
type CollectOptions struct {
	// OlderThan is the least age of a blob removed (default
	// DefaultCollectAge); a younger one may belong to a publish in flight.
	OlderThan time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// CollectReport is what CollectBlobs found and did.
type CollectReport struct {
	// Kept counts the blobs versions name; Young the unnamed ones younger
	// than OlderThan (left for now).
	Kept  int `json:"kept"`
	Young int `json:"young"`
	// Removed are the unnamed blobs removed (or, on a dry run, that would
	// be), with their sizes.
	Removed      []CollectedBlob `json:"removed"`
	RemovedBytes int64           `json:"removed_bytes"`
	DryRun       bool            `json:"dry_run"`
}

// CollectedBlob is one blob CollectBlobs removed.
type CollectedBlob struct {
	Digest string    `json:"digest"`
	Size   int64     `json:"size"`
	Time   time.Time `json:"time"`
}

// CollectBlobs removes from the blob directory b the blobs that no version
// of the hub st names and that are older than o.OlderThan. The versions are
// read first, in one snapshot; a blob is checked for its age again just
// before it is removed.
func CollectBlobs(ctx context.Context, st Store, b *BlobDir, o CollectOptions) (*CollectReport, error) {
	if o.OlderThan <= 0 {
		o.OlderThan = DefaultCollectAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	named, err := namedBlobs(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("collect blobs: %w", err)
	}
	cutoff := o.Now().Add(-o.OlderThan)
	rep := &CollectReport{DryRun: o.DryRun, Removed: []CollectedBlob{}}
	root := filepath.Join(b.dir, "sha256")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && filepath.Dir(p) != root {
				return fs.SkipDir // only sha256/xx/ holds blobs
			}
			return nil
		}
		digest := "sha256:" + d.Name()
		if filepath.Dir(filepath.Dir(p)) != root || !hub.ValidDigest(digest) || d.Name()[:2] != filepath.Base(filepath.Dir(p)) {
			return nil // not a blob (a temporary file: OpenBlobDir removes stale ones)
		}
		if named[digest] {
			rep.Kept++
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !fi.Mode().IsRegular() || fi.ModTime().After(cutoff) {
			rep.Young++
			return nil
		}
		if !o.DryRun {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		rep.Removed = append(rep.Removed, CollectedBlob{Digest: digest, Size: fi.Size(), Time: fi.ModTime().UTC()})
		rep.RemovedBytes += fi.Size()
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("collect blobs in %s: %w", b.dir, err)
	}
	return rep, nil
}

// namedBlobs returns every blob digest a version of st names: its manifest
// and its wasm.
func namedBlobs(ctx context.Context, st Store) (map[string]bool, error) {
	as, ok := st.(archiveStore)
	if !ok {
		return nil, fmt.Errorf("a %T cannot list its versions' blobs", st)
	}
	snap, err := as.archiveSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.close()
	refs := blobRefs{}
	if _, err := tableSum(ctx, snap, archTableNamed("versions"), nil, refs.addVersion); err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, d := range refs.digests() {
		named[d] = true
	}
	return named, nil
}
