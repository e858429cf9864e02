//go:build !race

package explorer_test

const raceEnabled = false
