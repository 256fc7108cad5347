// Package conformance holds the ABI conformance test and the per-language
// benchmarks: the same module — greet, and fetch through the network gate —
// built with the Go, C and Rust SDKs must give the same results and the
// same sandbox decisions (guest/ is the Go build; examples/c/hello and
// examples/rust/hello the others).
package conformance
