package hubserver

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Environment variables OpenBlobs reads for a registry's credentials when
// its URL has none (a URL's password shows in process listings; these do
// not).
const (
	EnvOCIUsername = "STATION_HUB_OCI_USERNAME"
	EnvOCIPassword = "STATION_HUB_OCI_PASSWORD"
)

// OpenBlobs opens the blob store spec names: an OCI registry's repository,
// oci://host[:port]/repository (HTTPS) or oci+http://host[:port]/repository
// (plain HTTP), checked to answer the distribution API, with credentials
// from the URL or $STATION_HUB_OCI_USERNAME and $STATION_HUB_OCI_PASSWORD;
// or else a directory (OpenBlobDir, created if missing).
func OpenBlobs(ctx context.Context, spec string) (Blobs, error) {
	if spec == "" {
		return nil, fmt.Errorf("blob store: empty; want a directory or oci://host[:port]/repository")
	}
	scheme, _, isURL := strings.Cut(spec, "://")
	switch {
	case scheme == "oci" || scheme == "oci+http":
		return OpenOCI(ctx, spec, OCIOptions{Username: os.Getenv(EnvOCIUsername), Password: os.Getenv(EnvOCIPassword)})
	case isURL && !strings.ContainsAny(scheme, `/\`):
		return nil, fmt.Errorf("blob store %q: want a directory, oci://host[:port]/repository (HTTPS) or oci+http://host[:port]/repository (plain HTTP)", scheme+"://…")
	}
	return OpenBlobDir(spec)
}
