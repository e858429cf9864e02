package rubricsverifier

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
)

func criteria() []Criterion {
	two := 2.0
	return []Criterion{{ID: "a", Criterion: "first", Weight: &two}, {ID: "b", Criterion: "second"}}
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Each output format: a good answer (in prose or bare) becomes one row per
// criterion with the format's score and extras.
func TestGradesGood(t *testing.T) {
	for _, tc := range []struct {
		f      OutputFormat
		answer string
		scores []float64
		extra  string // a fragment the rows must hold
	}{
		{"", `Here: {"results":[{"id":"a","result":true,"justification":"ok"},{"id":"b","result":"fail","justification":"no"}]}`,
			[]float64{1, 0}, `"justification":"ok"`},
		{RubricPartial, "```json\n" + `{"results":[{"id":"a","score":0.5,"justification":"half"},{"id":"b","score":1,"justification":"all"}]}` + "\n```",
			[]float64{0.5, 1}, `"result":false`},
		{TrajectoryMistakes, `{"mistakes":[{"id":"b","step":3,"description":"sent twice"},{"id":"b","description":"wrong address"}],"summary":"two slips"}`,
			[]float64{1, 0}, `"justification":"sent twice; wrong address"`},
		{RubricEvidence, `{"results":[{"id":"a","result":true,"evidence":["wrote answer.txt"],"justification":"ok"},{"id":"b","result":true,"evidence":[],"justification":"trust me"}]}`,
			[]float64{1, 0}, `"justification":"the judge cited no evidence for this pass: trust me"`},
	} {
		rows, err := tc.f.grades(tc.answer, criteria())
		if err != nil {
			t.Errorf("%s: %v", tc.f, err)
			continue
		}
		if len(rows) != 2 || rows[0].Score() != tc.scores[0] || rows[1].Score() != tc.scores[1] || rows[0]["weight"] != 2.0 {
			t.Errorf("%s: rows %s, want scores %v", tc.f, asJSON(rows), tc.scores)
		}
		if !strings.Contains(asJSON(rows), tc.extra) {
			t.Errorf("%s: rows %s lack %s", tc.f, asJSON(rows), tc.extra)
		}
	}
	// A criterion the judge skipped fails on its own; the others stand.
	rows, err := RubricBinary.grades(`{"results":[{"id":"a","result":true,"justification":"ok"}]}`, criteria())
	if err != nil || rows[0].Score() != 1 || rows[1]["justification"] != "the judge gave no verdict for this criterion" {
		t.Errorf("skipped criterion: %s %v", asJSON(rows), err)
	}
}

// A malformed answer is an error naming the format and the problem, and
// every criterion gets a failing row saying so (the verification scores 0).
func TestGradesMalformed(t *testing.T) {
	for _, tc := range []struct {
		f      OutputFormat
		answer string
		want   string
	}{
		{RubricBinary, "I think it is fine.", `no JSON object with "results"`},
		{RubricBinary, `{"results":[{"id":"a","result":"maybe"}]}`, "criterion a: result must be true or false, got \"maybe\""},
		{RubricBinary, `{"results":{"id":"a"}}`, "results:"},
		{RubricPartial, `{"results":[{"id":"a","score":1.5}]}`, "criterion a: score 1.5 is outside 0..1"},
		{RubricPartial, `{"results":[{"id":"a","result":true}]}`, "criterion a: score must be a number from 0 to 1, got nothing"},
		{TrajectoryMistakes, `{"results":[]}`, `no JSON object with "mistakes"`},
		{TrajectoryMistakes, `{"mistakes":[{"id":"a"}]}`, "mistakes[0]: needs id and description"},
		{RubricEvidence, `{"results":[{"id":"a","result":true,"evidence":"see file"}]}`, "criterion a: evidence must be a list of strings"},
	} {
		rows, err := tc.f.grades(tc.answer, criteria())
		if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), string(tc.f)) {
			t.Errorf("%s %s: err %v, want %q", tc.f, tc.answer, err, tc.want)
		}
		if len(rows) != 2 || runner.AllPass.Aggregate(rows) != 0 || runner.WeightedAverage.Aggregate(rows) != 0 ||
			rows[1]["justification"] != err.Error() {
			t.Errorf("%s: rows %s", tc.f, asJSON(rows))
		}
	}
}

func TestOutputFormatText(t *testing.T) {
	var f OutputFormat
	for _, ok := range []string{"", "rubric_binary", "rubric_partial", "trajectory_mistakes", "rubric_evidence"} {
		if err := f.UnmarshalText([]byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := f.UnmarshalText([]byte("likert")); err == nil || !strings.Contains(err.Error(), "rubric_evidence") {
		t.Errorf("likert: %v", err)
	}
	for _, f := range OutputFormats {
		if s := f.schema(); s["type"] != "object" || !strings.Contains(f.instructions(), "JSON") {
			t.Errorf("%s: schema %v", f, s)
		}
	}
}

func TestTrajectoryFilter(t *testing.T) {
	events := `[{"type":"model_call","turn":1},{"type":"model_response","role":"assistant","content":"` + strings.Repeat("x", 50) + `","raw":"big"},
	 {"type":"tool_call","role":"assistant","name":"send_message"},{"type":"final","role":"assistant","text":"done"}]`
	for _, tc := range []struct {
		f    TrajectoryFilter
		in   string
		want string
	}{
		{TrajectoryFilter{ExcludeEventTypes: []string{"model_call"}, DropFields: []string{"raw"}, MaxStringChars: 4, LastNEvents: 2},
			events, `[{"name":"send…[truncated]","role":"assistant","type":"tool_call"},{"role":"assistant","text":"done","type":"final"}]`},
		{TrajectoryFilter{EventTypes: []string{"final"}}, `{"format":"x","events":` + events + `}`,
			`{"events":[{"role":"assistant","text":"done","type":"final"}],"format":"x"}`},
		{TrajectoryFilter{Roles: []string{"user"}}, events, `[]`},
		{TrajectoryFilter{Roles: []string{"user"}}, `"not a list"`, `"not a list"`},
	} {
		if got := string(tc.f.Apply([]byte(tc.in))); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.f, got, tc.want)
		}
	}
	var f TrajectoryFilter
	if err := json.Unmarshal([]byte(`{"rolez":["a"]}`), &f); err == nil || !strings.Contains(err.Error(), "rolez") {
		t.Errorf("unknown key: %v", err)
	}
}
