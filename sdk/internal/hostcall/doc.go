// Package hostcall declares the station's imports (abi.ImportModule) for the
// SDK packages and wraps them in Go functions that own the buffer handling:
// allocating guest memory for a host buffer, reading it and freeing it.
//
// Only the wasip1 build has the imports; on other platforms the package is
// empty and the SDK packages use their native fallbacks.
package hostcall
