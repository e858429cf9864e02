// Package a2agates holds the agent release gates, the verify_a2a_* steps.
// Each checks one deployed A2A agent (agent_name, default
// "default-agent") over its real HTTP face with the runner's own A2A
// client, and records a verdict the way the env gates do
// (envgates.Verdict): metadata.verifications[<gate>] with one row per
// problem, and details under metadata.validated_a2a[<gate>]. A failed
// gate does not fail the step; an optional extension the agent does not
// advertise gives one skipped row, not a failure.
//
// One Gate type serves every probe step: the steps differ only in their
// check function, so each is a StepInfo line in gates.go. Two gates
// record instead of probing (recorders.go): verify_a2a_install reads what
// an install_agent step started, verify_a2a_snapshot the grade of a
// recall after a snapshot was loaded; they take the reference's fields
// (a2a_agent_id, rubric_verifier_id, ...).
package a2agates
