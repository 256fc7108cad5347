package cmdutil

import "os"

// FileSize is the size of the file at path, or 0 when it cannot be read.
func FileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// ShortDigest is a digest cut to its algorithm and first twelve hex digits,
// for tables.
func ShortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
