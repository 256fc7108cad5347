package hubserver

import (
	"context"
	"fmt"
	"net/url"
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
	if _, err := RedactBlobs(spec); err != nil {
		return nil, err
	}
	if strings.HasPrefix(spec, "oci://") || strings.HasPrefix(spec, "oci+http://") {
		return OpenOCI(ctx, spec, OCIOptions{Username: os.Getenv(EnvOCIUsername), Password: os.Getenv(EnvOCIPassword)})
	}
	return OpenBlobDir(spec)
}

// RedactBlobs checks a blob store spec as OpenBlobs takes it, without
// opening it, and returns it for messages: a registry's URL without its
// credentials, a directory as it is.
func RedactBlobs(spec string) (string, error) {
	scheme, _, isURL := strings.Cut(spec, "://")
	switch {
	case scheme == "oci" || scheme == "oci+http":
		if _, _, _, err := parseOCIURL(spec); err != nil {
			return "", err
		}
		u, _ := url.Parse(spec)
		return redactURL(u), nil
	case isURL && !strings.ContainsAny(scheme, `/\`):
		return "", fmt.Errorf("blob store %q: want a directory, oci://host[:port]/repository (HTTPS) or oci+http://host[:port]/repository (plain HTTP)", scheme+"://…")
	}
	return spec, nil
}
