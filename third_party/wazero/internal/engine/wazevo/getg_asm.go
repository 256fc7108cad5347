//go:build amd64 || arm64

package wazevo

import "unsafe"

// getg returns the calling goroutine's runtime.g.
func getg() unsafe.Pointer
