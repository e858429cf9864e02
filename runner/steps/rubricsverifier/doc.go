// Package rubricsverifier is the rubrics_verifier step: a judge grades a
// prompt's work against criteria and the rows
// {id, criterion, weight, result, score, justification} (plus the output
// format's extras) go to metadata.verifications[verifier_id], scored by
// score_aggregator.
//
// The work the judge sees is the prompt and the agent's final answer, its
// trajectory (trimmed by trajectory_filter unless the run turns filters
// off), the files of every collect_artifacts step of the run, and the
// values context_facts_for_judge points at.
//
// Two judges grade it:
//   - the direct judge (use_agent_judge false or unset): one
//     OpenAI-compatible chat-completions call;
//   - the agent judge (use_agent_judge true): an A2A agent
//     (judge_a2a_agent_id, default the toolcaller example) deployed for the
//     step, configured through agent-config (instructions, model, the
//     answer's JSON schema), sent the work as a message, polled for its
//     grade, its trajectory stored under judge_trajectories/, and torn down
//     on every path.
//
// output_format picks the grading scheme for both: rubric_binary,
// rubric_partial, trajectory_mistakes or rubric_evidence (formats.go). A
// judge answer that cannot be read scores every criterion 0 with a
// justification saying why; a judge that cannot work at all (no endpoint,
// deploy failure, infrastructure error, timeout) fails the step.
package rubricsverifier
