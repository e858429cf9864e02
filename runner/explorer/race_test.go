//go:build race

package explorer_test

// raceEnabled skips the 100,000-record test under -race, where seeding
// alone takes minutes; .ci/run runs it without -race.
const raceEnabled = true
