//go:build race

package hubserver_test

// raceDetector reports a build with the race detector, which empties
// sync.Pool at random (so allocation counts are not the program's) and
// slows copying many times over.
const raceDetector = true
