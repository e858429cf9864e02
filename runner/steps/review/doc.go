// Package review is the review step: it pauses a run until someone
// records a decision, continue or abort, on it.
//
// The step registers an awaiting review in the document store
// (collection task_reviews, keyed by instance id and step id) and polls it
// until a decision is recorded or its timeout passes. Decisions are
// written by another process through the same store: `agent-env review
// continue|abort` (cmd/agent-env/review.go) calls Decide, and `review
// list` calls ListAwaiting. Continue writes
// metadata.review_decisions[<step_id>] = {decision, decided_by} and the
// run goes on; abort fails the step with ErrAborted, so later steps do not
// run.
//
//	{"id":"gate","type":"review","label":"check the draft","timeout_seconds":600}
package review
