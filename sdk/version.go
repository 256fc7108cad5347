package sdk

// Version is the version of this module, github.com/station-dev/station/sdk.
// Its major version is the ABI version the SDK speaks (abi.Version): a new
// ABI is a new major version of the SDK. A station carries the source of
// the SDK it was built with and serves it under this version to the Go
// toolchain when it builds a module (station module build), so a module's
// go.mod can require it with no network access.
//
// Every change to a file of this module changes its version: the station's
// tests compare the module's contents with the hash recorded for Version.
const Version = "v1.1.0"
