//go:build !race

package kubernetes_test

const raceEnabled = false
