package process

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentenv/agentenv/runner"
)

// Op kinds.
const (
	OpSet    = "set"
	OpAppend = "append"
)

// reservedMetadata are metadata keys the runner owns; a step whose id is
// one of them has no metadata area of its own.
var reservedMetadata = map[string]bool{
	"task_id": true, "instance_id": true, "run_group_id": true, "runner": true, "seed": true,
	"universe_id": true, "user_overrides": true, "failed_steps": true, "retry_resets": true,
	"verifications": true, "workflow_id": true, "step_params": true,
}

// InvalidOpError is a context operation the runner refused; nothing of
// the step's operations was applied.
type InvalidOpError struct {
	Index int // 0-based
	Op    Op
	Msg   string
}

func (e *InvalidOpError) Error() string {
	return fmt.Sprintf("returned an invalid context operation #%d (%s %s): %s", e.Index+1, e.Op.Op, pathString(e.Op.Path), e.Msg)
}

func pathString(p []string) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// applyOps validates every operation, then applies them all: a step writes
// its own area metadata.<step id> (set or append at any path below it) and
// whole verifications metadata.verifications.<verifier id> (set).
func applyOps(rc *runner.RunContext, stepID string, ops []Op) error {
	bad := func(i int, format string, a ...any) error {
		return &InvalidOpError{Index: i, Op: ops[i], Msg: fmt.Sprintf(format, a...)}
	}
	area, hasArea := rc.Metadata(stepID)
	touched := false
	verifications := map[string]runner.Verification{}
	var vorder []string
	for i, op := range ops {
		if op.Op != OpSet && op.Op != OpAppend {
			return bad(i, "op must be %q or %q", OpSet, OpAppend)
		}
		if len(op.Value) == 0 {
			return bad(i, "value is required")
		}
		var v any
		if err := json.Unmarshal(op.Value, &v); err != nil {
			return bad(i, "value is not JSON")
		}
		for _, k := range op.Path {
			if k == "" {
				return bad(i, "a path key is empty")
			}
		}
		switch {
		case len(op.Path) >= 2 && op.Path[0] == runner.KeyMetadata && op.Path[1] == stepID:
			if reservedMetadata[stepID] {
				return bad(i, "step id %q is a metadata key the runner owns; rename the step", stepID)
			}
			if !hasArea {
				area, hasArea = nil, true
			}
			na, err := applyAt(area, op.Path[2:], op.Op, v)
			if err != nil {
				return bad(i, "%v", err)
			}
			area, touched = na, true
		case len(op.Path) >= 2 && op.Path[0] == runner.KeyMetadata && op.Path[1] == "verifications":
			if len(op.Path) != 3 || op.Op != OpSet {
				return bad(i, "a verification is set whole: [\"metadata\", \"verifications\", <verifier id>]")
			}
			ver, err := verification(v)
			if err != nil {
				return bad(i, "%v", err)
			}
			if _, dup := verifications[op.Path[2]]; !dup {
				vorder = append(vorder, op.Path[2])
			}
			verifications[op.Path[2]] = ver
		default:
			return bad(i, "a step writes only below [\"metadata\", %q] (its own id) or a verification [\"metadata\", \"verifications\", <id>]", stepID)
		}
	}
	if touched {
		rc.SetMetadata(stepID, area)
	}
	for _, id := range vorder {
		rc.SetVerification(id, verifications[id])
	}
	return nil
}

// applyAt returns doc with op applied at path (maps made on the way).
func applyAt(doc any, path []string, op string, v any) (any, error) {
	if len(path) == 0 {
		if op == OpSet {
			return v, nil
		}
		switch l := doc.(type) {
		case nil:
			return []any{v}, nil
		case []any:
			return append(l, v), nil
		}
		return nil, fmt.Errorf("append to a value that is not a list")
	}
	m, ok := doc.(map[string]any)
	switch {
	case doc == nil:
		m = map[string]any{}
	case !ok:
		return nil, fmt.Errorf("key %q is below a value that is not an object", path[0])
	}
	nv, err := applyAt(m[path[0]], path[1:], op, v)
	if err != nil {
		return nil, err
	}
	m[path[0]] = nv
	return m, nil
}

// verification reads a verification value: results (rows, each with a
// boolean "result") and an optional score in [0, 1], which defaults to the
// all_pass score of the rows.
func verification(v any) (runner.Verification, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return runner.Verification{}, fmt.Errorf("a verification must be an object with results and score")
	}
	for k := range m {
		if k != "score" && k != "results" {
			return runner.Verification{}, fmt.Errorf("a verification has no field %q (only score and results)", k)
		}
	}
	rows, ok := m["results"].([]any)
	if !ok {
		return runner.Verification{}, fmt.Errorf("results must be a list of rows")
	}
	ver := runner.Verification{Results: make([]runner.Row, 0, len(rows))}
	for j, r := range rows {
		row, ok := r.(map[string]any)
		if !ok {
			return runner.Verification{}, fmt.Errorf("results[%d] must be an object", j)
		}
		if _, ok := row["result"].(bool); !ok {
			return runner.Verification{}, fmt.Errorf("results[%d].result must be true or false", j)
		}
		if s, has := row["score"]; has {
			if f, ok := s.(float64); !ok || math.IsNaN(f) {
				return runner.Verification{}, fmt.Errorf("results[%d].score must be a number", j)
			}
		}
		ver.Results = append(ver.Results, runner.Row(row))
	}
	if s, has := m["score"]; has {
		f, ok := s.(float64)
		if !ok || f < 0 || f > 1 {
			return runner.Verification{}, fmt.Errorf("score must be a number from 0 to 1, got %s", strings.TrimSpace(fmt.Sprint(s)))
		}
		ver.Score = f
	} else {
		ver.Score = runner.AllPass.Aggregate(ver.Results)
	}
	return ver, nil
}
