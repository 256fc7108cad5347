//go:build !wasip1

package sdk

import "embed"

// Source is the source of this module, every file of it (its go.mod, the
// Go packages, the C and Rust SDKs in c/ and rust/), for the station to
// serve to the Go toolchain and to copy into new modules. It exists only
// outside wasip1: a module never carries it.
//
//go:embed *
var Source embed.FS
