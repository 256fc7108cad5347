package hubsync_test

import "github.com/station-dev/station/internal/wasmbuild"

// testCache is the compilation cache the test stations share, with the
// other packages' tests and across runs (wasmbuild.CacheForTest), so that
// the hello example is compiled once rather than once per install (in
// process: compiling in a child within the install's bounds is the host's
// test).
var testCache = wasmbuild.CacheForTest()
