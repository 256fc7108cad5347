// Package bench is Station's benchmark suite: what a sandboxed call costs,
// measured side by side with the peers in one run, on one guest function
// (package greet). It is its own Go module so that the product does not
// depend on what only the comparison needs (the Extism Go SDK).
//
// Every guest is built from Go source by the suite itself with the stock
// toolchain; nothing binary is committed. Run it with
//
//	make bench
//
// which runs each benchmark ten times, interleaved, and prints benchstat
// medians; BENCHMARKS.md at the repository root holds the results and what
// they mean. The tests of this package check that every path the benchmarks
// time returns the same result, so a broken path cannot pass for a fast one.
package bench
