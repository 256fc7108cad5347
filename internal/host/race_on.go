//go:build race

package host

// raceEnabled is set under the race detector (its shadow memory defeats an
// address-space limit; see limitSelf).
const raceEnabled = true
