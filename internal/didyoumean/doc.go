// Package didyoumean suggests the valid name closest to a misspelt one.
//
// Every "unknown X" message of the project (config keys, step types, step
// fields, bundle names, output formats) uses it, so they all read alike:
//
//	unknown step type "deploy_sandbx"; did you mean "deploy_sandbox"? (known: call_tool, deploy_sandbox, ...)
//
// Closest picks by edit distance, case-insensitively, and gives up when the
// best candidate is too far away to be a typo (more than a third of the
// name's length, and at least 2 edits allowed).
package didyoumean
