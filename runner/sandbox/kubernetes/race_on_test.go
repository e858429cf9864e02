//go:build race

package kubernetes_test

// raceEnabled tells the scale test's figures apart: the race detector
// multiplies CPU time several times over.
const raceEnabled = true
