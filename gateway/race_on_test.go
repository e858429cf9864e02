//go:build race

package gateway

// raceEnabled is set under the race detector, which shadows every heap
// byte: RSS figures mean nothing there.
const raceEnabled = true
