// Package envgates holds the env release gates: verify_env_card,
// verify_env_core_protocol, verify_mcp_tool_schema,
// verify_spec_conformance, verify_mcp_env_assessment and
// validation_gate_aggregator. Each gate checks a deployed env and records
// a verdict: metadata.verifications[<gate>] (score 1 when it passed, one
// row per problem) plus the reference's metadata key for its details. The
// aggregator rolls the required gates into metadata.validation_gate, the
// one field a `put --validate` reads.
//
// The gates reuse envsdk/envconformance for the wire checks rather than
// re-implementing them. They are one package (not one per step) because
// they share the verdict recording and the env lookup.
package envgates
