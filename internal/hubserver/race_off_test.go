//go:build !race

package hubserver_test

// raceDetector reports a build with the race detector.
const raceDetector = false
