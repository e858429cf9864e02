// Package universegates holds the universe compatibility validators:
// verify_universe_load_export_roundtrip loads an environment_universe
// into a deployed env, exports it, loads the export back and exports
// again, and compares the three (original vs export 1 is loss on load,
// export 1 vs export 2 is idempotency); combine_universe_verdicts merges
// an agent judge's rubric verdict into that programmatic verdict.
//
// Both write metadata.universe_compatibility (the details) and
// metadata.verifications.universe_compatibility (score 1 when
// compatible, one row per critical issue), the way the env gates record
// theirs. The comparison (compare.go) is semantic: representation noise
// (number formats, time zones, empty values, order, server-added fields)
// is not a difference; lost records, lost fields and changed values are.
package universegates
