package hubsync_test

import "github.com/tetratelabs/wazero"

// testCache is the compilation cache the test stations share, so that the
// hello example is compiled once per test binary rather than once per
// install (in process: compiling in a child within the install's bounds is
// the host's test).
var testCache = wazero.NewCompilationCache()
