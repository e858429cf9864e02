//go:build !race

package gateway

// raceEnabled is set under the race detector (race_on_test.go).
const raceEnabled = false
