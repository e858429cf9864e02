package rubricsverifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentenv/agentenv/runner"
)

// OutputFormat is what the judge is asked to answer and how its answer
// becomes rows. The zero value means rubric_binary.
type OutputFormat string

// The output formats. Every one yields one row per criterion,
// {id, criterion, weight, result, score, justification}, plus the
// format's extra fields (evidence, mistakes).
const (
	// RubricBinary: {"results":[{"id","result":true|false,"justification"}]};
	// score 1 or 0.
	RubricBinary OutputFormat = "rubric_binary"
	// RubricPartial: {"results":[{"id","score":0..1,"justification"}]};
	// the row's result is true only for a full score.
	RubricPartial OutputFormat = "rubric_partial"
	// TrajectoryMistakes: {"mistakes":[{"id","step","description"}],
	// "summary"}; each criterion names a kind of mistake, and it passes
	// when the judge lists no mistake for it.
	TrajectoryMistakes OutputFormat = "trajectory_mistakes"
	// RubricEvidence: {"results":[{"id","result","evidence":["…"],
	// "justification"}]}; a pass that cites no evidence scores 0.
	RubricEvidence OutputFormat = "rubric_evidence"
)

// OutputFormats lists the supported values.
var OutputFormats = []OutputFormat{RubricBinary, RubricPartial, TrajectoryMistakes, RubricEvidence}

// UnmarshalText refuses a value outside OutputFormats.
func (f *OutputFormat) UnmarshalText(b []byte) error {
	v := OutputFormat(b)
	if v != "" && !slices.Contains(OutputFormats, v) {
		return fmt.Errorf("unknown output_format %q (want one of %s)", v, formatList())
	}
	*f = v
	return nil
}

func formatList() string {
	s := make([]string, len(OutputFormats))
	for i, f := range OutputFormats {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// OrDefault is the format, rubric_binary when unset.
func (f OutputFormat) OrDefault() OutputFormat {
	if f == "" {
		return RubricBinary
	}
	return f
}

// instructions tells the judge what to answer.
func (f OutputFormat) instructions() string {
	switch f.OrDefault() {
	case RubricPartial:
		return "For each criterion give a score from 0 (not met at all) to 1 (fully met); partial credit is allowed. " +
			`Answer with one JSON object only: {"results":[{"id":"<criterion id>","score":<number from 0 to 1>,"justification":"<one sentence>"}]}.`
	case TrajectoryMistakes:
		return "Each criterion names a kind of mistake. Read the agent's trajectory step by step and list every mistake it made, " +
			"each under the id of the criterion it falls under (an empty list when there are none). " +
			`Answer with one JSON object only: {"mistakes":[{"id":"<criterion id>","step":<trajectory step number>,"description":"<what went wrong>"}],"summary":"<one sentence>"}.`
	case RubricEvidence:
		return "For each criterion decide true (met) or false (not met), and quote the evidence you relied on (from the answer, the trajectory or the collected files); " +
			"a criterion you mark true without evidence counts as not met. " +
			`Answer with one JSON object only: {"results":[{"id":"<criterion id>","result":true|false,"evidence":["<quote>"],"justification":"<one sentence>"}]}.`
	default:
		return "For each criterion decide true (met) or false (not met). " +
			`Answer with one JSON object only: {"results":[{"id":"<criterion id>","result":true|false,"justification":"<one sentence>"}]}.`
	}
}

// schema is the JSON schema of the answer, sent as the judge agent's
// output_format when it supports one.
func (f OutputFormat) schema() map[string]any {
	str := map[string]any{"type": "string"}
	obj := func(props map[string]any, req ...string) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": req}
	}
	arr := func(items any) map[string]any { return map[string]any{"type": "array", "items": items} }
	switch f.OrDefault() {
	case RubricPartial:
		return obj(map[string]any{"results": arr(obj(map[string]any{"id": str, "score": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
			"justification": str}, "id", "score", "justification"))}, "results")
	case TrajectoryMistakes:
		return obj(map[string]any{"mistakes": arr(obj(map[string]any{"id": str, "step": map[string]any{"type": "integer"}, "description": str},
			"id", "description")), "summary": str}, "mistakes")
	case RubricEvidence:
		return obj(map[string]any{"results": arr(obj(map[string]any{"id": str, "result": map[string]any{"type": "boolean"},
			"evidence": arr(str), "justification": str}, "id", "result", "evidence", "justification"))}, "results")
	default:
		return obj(map[string]any{"results": arr(obj(map[string]any{"id": str, "result": map[string]any{"type": "boolean"},
			"justification": str}, "id", "result", "justification"))}, "results")
	}
}

// errMalformed marks a judge answer that is not the format's JSON.
var errMalformed = errors.New("the judge's answer is not the JSON its output_format asks for")

// grades turns the judge's answer (text holding a JSON object) into one row
// per criterion. An answer that cannot be read gives every criterion a
// failing row saying why, and the error (wrapping errMalformed); the
// verification then scores 0, as with a judge that gave no verdicts.
func (f OutputFormat) grades(answer string, criteria []Criterion) ([]runner.Row, error) {
	key := "results"
	if f.OrDefault() == TrajectoryMistakes {
		key = "mistakes"
	}
	obj, err := findObject(answer, key)
	var rows []runner.Row
	if err == nil {
		rows, err = f.rows(obj[key], criteria)
	}
	if err != nil {
		err = fmt.Errorf("%w (%s): %v", errMalformed, f.OrDefault(), err)
		return failRows(criteria, err), err
	}
	return rows, nil
}

func baseRow(cr Criterion) runner.Row {
	w := 1.0
	if cr.Weight != nil {
		w = *cr.Weight
	}
	return runner.Row{"id": cr.ID, "criterion": cr.Criterion, "weight": w}
}

// findObject returns the last JSON object in text that has key (models
// often wrap the object in prose or a code fence).
func findObject(text, key string) (map[string]json.RawMessage, error) {
	for end := strings.LastIndexByte(text, '}'); end >= 0; end = strings.LastIndexByte(text[:end], '}') {
		for start := strings.LastIndexByte(text[:end], '{'); start >= 0; start = strings.LastIndexByte(text[:start], '{') {
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(text[start:end+1]), &m) == nil {
				if _, ok := m[key]; ok {
					return m, nil
				}
			}
			if start == 0 {
				break
			}
		}
		if end == 0 {
			break
		}
	}
	return nil, fmt.Errorf("no JSON object with %q in %q", key, head(text, 200))
}

func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// verdict is one result entry of the results-shaped formats.
type verdict struct {
	ID            string          `json:"id"`
	Result        json.RawMessage `json:"result"`
	Score         json.RawMessage `json:"score"`
	Evidence      json.RawMessage `json:"evidence"`
	Justification string          `json:"justification"`
}

type mistake struct {
	ID          string `json:"id"`
	Step        *int   `json:"step,omitempty"`
	Description string `json:"description"`
}

func (f OutputFormat) rows(raw json.RawMessage, criteria []Criterion) ([]runner.Row, error) {
	rows := make([]runner.Row, 0, len(criteria))
	if f.OrDefault() == TrajectoryMistakes {
		var ms []mistake
		if err := json.Unmarshal(raw, &ms); err != nil {
			return nil, fmt.Errorf("mistakes: %v", err)
		}
		for i, m := range ms {
			if m.ID == "" || m.Description == "" {
				return nil, fmt.Errorf("mistakes[%d]: needs id and description", i)
			}
		}
		for _, cr := range criteria {
			row := baseRow(cr)
			found := []mistake{}
			var says []string
			for _, m := range ms {
				if m.ID == cr.ID {
					found = append(found, m)
					says = append(says, m.Description)
				}
			}
			row["mistakes"] = found
			if len(found) == 0 {
				row["result"], row["score"], row["justification"] = true, 1.0, "the judge found no mistake of this kind"
			} else {
				row["result"], row["score"], row["justification"] = false, 0.0, strings.Join(says, "; ")
			}
			rows = append(rows, row)
		}
		return rows, nil
	}
	var vs []verdict
	if err := json.Unmarshal(raw, &vs); err != nil {
		return nil, fmt.Errorf("results: %v", err)
	}
	byID := map[string]verdict{}
	for _, v := range vs {
		byID[v.ID] = v
	}
	for _, cr := range criteria {
		row := baseRow(cr)
		v, ok := byID[cr.ID]
		if !ok {
			row["result"], row["score"], row["justification"] = false, 0.0, "the judge gave no verdict for this criterion"
			rows = append(rows, row)
			continue
		}
		row["justification"] = v.Justification
		switch f.OrDefault() {
		case RubricPartial:
			var s float64
			if err := json.Unmarshal(v.Score, &s); err != nil || len(v.Score) == 0 {
				return nil, fmt.Errorf("criterion %s: score must be a number from 0 to 1, got %s", cr.ID, orNone(v.Score))
			}
			if s < 0 || s > 1 {
				return nil, fmt.Errorf("criterion %s: score %g is outside 0..1", cr.ID, s)
			}
			row["result"], row["score"] = s >= 1, s
		default:
			ok, err := boolResult(v.Result)
			if err != nil {
				return nil, fmt.Errorf("criterion %s: %v", cr.ID, err)
			}
			if f.OrDefault() == RubricEvidence {
				var ev []string
				if len(v.Evidence) > 0 && string(v.Evidence) != "null" {
					if err := json.Unmarshal(v.Evidence, &ev); err != nil {
						return nil, fmt.Errorf("criterion %s: evidence must be a list of strings, got %s", cr.ID, v.Evidence)
					}
				}
				if ev == nil {
					ev = []string{}
				}
				row["evidence"] = ev
				if ok && len(ev) == 0 {
					ok = false
					row["justification"] = "the judge cited no evidence for this pass: " + v.Justification
				}
			}
			row["result"], row["score"] = ok, b2f(ok)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func orNone(b json.RawMessage) string {
	if len(b) == 0 {
		return "nothing"
	}
	return string(b)
}

// boolResult reads a verdict: a JSON boolean, or the strings models
// write for one ("true", "pass", "passed", "false", "fail", "failed").
func boolResult(raw json.RawMessage) (bool, error) {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "pass", "passed", "yes", "met":
			return true, nil
		case "false", "fail", "failed", "no", "not met":
			return false, nil
		}
	}
	return false, fmt.Errorf("result must be true or false, got %s", orNone(raw))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
