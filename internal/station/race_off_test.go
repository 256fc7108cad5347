//go:build !race

package station_test

const raceDetector = false
