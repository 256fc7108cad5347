//go:build race

package workflow

// raceDetector: the race detector changes what the runtime allocates (it
// keeps values on the heap that escape analysis would not), so the tests
// that compare allocations with charges skip that comparison under it.
const raceDetector = true
