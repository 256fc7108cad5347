//go:build race

package host_test

// raceDetector is set when the tests run with -race.
const raceDetector = true
