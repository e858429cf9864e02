package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// The states of a review record.
const (
	StateAwaiting = "awaiting"
	StateContinue = "continue"
	StateAbort    = "abort"
)

// ErrNotAwaiting is matched when a decision names a review that is not
// awaiting one (none registered, or already decided).
var ErrNotAwaiting = errors.New("no review awaiting a decision")

// Record is one task_reviews record.
type Record struct {
	InstanceID string         `json:"instance_id"`
	StepID     string         `json:"step_id"`
	State      string         `json:"state"`
	Label      string         `json:"label,omitempty"`
	Upstream   map[string]any `json:"upstream,omitempty"`
	AwaitingAt string         `json:"awaiting_at"`
	DecidedBy  string         `json:"decided_by,omitempty"`
	DecidedAt  string         `json:"decided_at,omitempty"`
}

// key is the record key of a review: the instance id (which may hold
// slashes) and the step id, joined by a character neither may contain
// unescaped in a task file.
func key(instanceID, stepID string) string { return instanceID + "#" + stepID }

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// PutAwaiting registers the review of (instanceID, stepID) as awaiting a
// decision. It is idempotent: a decision already recorded (a retried step)
// is kept.
func PutAwaiting(ctx context.Context, docs registry.DocumentStore, r Record) error {
	r.State, r.AwaitingAt, r.DecidedBy, r.DecidedAt = StateAwaiting, now(), "", ""
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = docs.InsertRecord(ctx, registry.TaskReviews, key(r.InstanceID, r.StepID), body)
	if errors.Is(err, registry.ErrAlreadyExists) {
		return nil
	}
	return err
}

// Get reads the review of (instanceID, stepID); a missing one wraps
// registry.ErrNotFound.
func Get(ctx context.Context, docs registry.DocumentStore, instanceID, stepID string) (*Record, error) {
	rec, err := docs.GetRecord(ctx, registry.TaskReviews, key(instanceID, stepID))
	if err != nil {
		return nil, err
	}
	return decode(rec)
}

func decode(rec registry.Record) (*Record, error) {
	var r Record
	if err := json.Unmarshal(rec.Data, &r); err != nil {
		return nil, fmt.Errorf("review record %s: %w", rec.Key, err)
	}
	return &r, nil
}

// Decide records decision (StateContinue or StateAbort) on an awaiting
// review. A review that is not awaiting (none, or decided already) is
// ErrNotAwaiting: the first decision stands.
func Decide(ctx context.Context, docs registry.DocumentStore, instanceID, stepID, decision, decidedBy string) (*Record, error) {
	if decision != StateContinue && decision != StateAbort {
		return nil, fmt.Errorf("decision must be %q or %q, got %q", StateContinue, StateAbort, decision)
	}
	rec, err := docs.UpdateRecord(ctx, registry.TaskReviews, key(instanceID, stepID), func(doc map[string]any) error {
		if doc["state"] != StateAwaiting {
			return fmt.Errorf("review %q of instance %s is %v: %w", stepID, instanceID, doc["state"], ErrNotAwaiting)
		}
		doc["state"], doc["decided_at"] = decision, now()
		if decidedBy != "" {
			doc["decided_by"] = decidedBy
		}
		return nil
	})
	if errors.Is(err, registry.ErrNotFound) {
		return nil, fmt.Errorf("review %q of instance %s: %w", stepID, instanceID, ErrNotAwaiting)
	}
	if err != nil {
		return nil, err
	}
	return decode(rec)
}

// ListAwaiting lists the reviews awaiting a decision, oldest first; a
// non-empty instanceID keeps that instance's only.
func ListAwaiting(ctx context.Context, docs registry.DocumentStore, instanceID string) ([]Record, error) {
	where := map[string]any{"state": StateAwaiting}
	if instanceID != "" {
		where["instance_id"] = instanceID
	}
	recs, err := docs.QueryRecords(ctx, registry.TaskReviews, &registry.RecordQuery{Where: where})
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(recs))
	for _, rec := range recs {
		r, err := decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}
