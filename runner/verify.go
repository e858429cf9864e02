package runner

import (
	"encoding/json"
	"fmt"
)

// Aggregator turns verifier rows into one score.
type Aggregator string

// The three aggregators.
const (
	AllPass         Aggregator = "all_pass"
	AnyPass         Aggregator = "any_pass"
	WeightedAverage Aggregator = "weighted_average"
)

// UnmarshalText refuses unknown aggregators.
func (a *Aggregator) UnmarshalText(b []byte) error {
	switch Aggregator(b) {
	case AllPass, AnyPass, WeightedAverage:
		*a = Aggregator(b)
		return nil
	}
	return fmt.Errorf("score_aggregator must be all_pass, any_pass or weighted_average, got %q", string(b))
}

// OrDefault is a, or AllPass when the task named no aggregator.
func (a Aggregator) OrDefault() Aggregator {
	if a == "" {
		return AllPass
	}
	return a
}

// VerifierIDOrNew is the task's verifier_id, or a fresh random one when it
// gave none, as every verifier step names its result.
func VerifierIDOrNew(id string) string {
	if id == "" {
		return RandomHex(8)
	}
	return id
}

// Row is one verifier result row: at least "result" (bool), optionally
// "score" (default 1/0 from result), "weight" (default 1) and "skipped".
// Other keys (criterion fields, justification) are carried as given.
type Row map[string]any

// Passed is the row's "result".
func (r Row) Passed() bool { b, _ := r["result"].(bool); return b }

// Skipped reports "skipped": true.
func (r Row) Skipped() bool { b, _ := r["skipped"].(bool); return b }

// Score is the row's "score", or 1/0 from "result".
func (r Row) Score() float64 {
	if f, ok := number(r["score"]); ok {
		return f
	}
	if r.Passed() {
		return 1
	}
	return 0
}

// Weight is the row's "weight", default 1.
func (r Row) Weight() float64 {
	if f, ok := number(r["weight"]); ok {
		return f
	}
	return 1
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Aggregate scores rows; skipped rows are excluded and no rows score 0.
func (a Aggregator) Aggregate(rows []Row) float64 {
	var kept []Row
	for _, r := range rows {
		if !r.Skipped() {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return 0
	}
	switch a {
	case AnyPass:
		for _, r := range kept {
			if r.Passed() {
				return 1
			}
		}
		return 0
	case WeightedAverage:
		var sum, wsum, penalty float64
		for _, r := range kept {
			w, s := r.Weight(), clamp(r.Score())
			switch {
			case w > 0:
				sum += s * w
				wsum += w
			case w < 0:
				penalty += (1 - s) * -w
			}
		}
		if wsum == 0 {
			return 0
		}
		return clamp((sum - penalty) / wsum)
	default: // AllPass
		for _, r := range kept {
			if !r.Passed() {
				return 0
			}
		}
		return 1
	}
}

func clamp(f float64) float64 {
	switch {
	case f < 0:
		return 0
	case f > 1:
		return 1
	}
	return f
}

// Verification is metadata.verifications[<verifier_id>].
type Verification struct {
	Score   float64 `json:"score"`
	Results []Row   `json:"results"`
	// SourceVerifierIDs is set by aggregate_verifiers, which writes no
	// results.
	SourceVerifierIDs []string `json:"source_verifier_ids,omitempty"`
}

// MarshalJSON omits "results" for aggregated verifications.
func (v Verification) MarshalJSON() ([]byte, error) {
	if v.SourceVerifierIDs != nil {
		return json.Marshal(struct {
			Score             float64  `json:"score"`
			SourceVerifierIDs []string `json:"source_verifier_ids"`
		}{v.Score, v.SourceVerifierIDs})
	}
	rows := v.Results
	if rows == nil {
		rows = []Row{}
	}
	return json.Marshal(struct {
		Results []Row   `json:"results"`
		Score   float64 `json:"score"`
	}{rows, v.Score})
}

// PromptErrorVerification is what a verifier writes when the prompt
// response it checks carries an error_type.
func PromptErrorVerification(pr PromptResponse) Verification {
	msg := pr.ErrorMessage
	if msg == "" {
		msg = "prompt failed: " + pr.ErrorType
	}
	return Verification{Score: 0, Results: []Row{{"id": "prompt_error", "score": 0.0, "result": false, "message": msg}}}
}
