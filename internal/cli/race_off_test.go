//go:build !race

package cli_test

// raceDetector is set when the tests run with -race, which slows every
// step several times: time bounds that measure the station are scaled.
const raceDetector = false
