//go:build race

package station_test

// raceDetector is set when the tests run with -race.
const raceDetector = true
