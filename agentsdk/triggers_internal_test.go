package agentsdk

import (
	"encoding/json"
	"fmt"
	"testing"
)

// An exhausted regex budget answers 504 and changes no state.
func TestTriggersRegexBudget(t *testing.T) {
	st := newTriggerState()
	tr, err := parseTrigger(json.RawMessage(`{"id":"r","when":{"type":"conversational","where":{"message":{"regex":"a+"}}},"actions":[{"type":"say","text":"x"}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.register([]*trigger{tr}); err != nil {
		t.Fatal(err)
	}
	logLen := len(st.log)
	st.budget = 0
	_, err = st.decide("c", &decideInput{turn: 1, message: "aaa"})
	he, ok := err.(*httpError)
	if !ok || he.status != 504 {
		t.Fatalf("want 504, got %v", err)
	}
	if len(st.contexts) != 0 || len(st.log) != logLen {
		t.Fatalf("state changed: %d contexts, log %d", len(st.contexts), len(st.log))
	}
	st.budget = defaultRegexBudget
	out, err := st.decide("c", &decideInput{turn: 1, message: "aaa"})
	if err != nil || len(out.(map[string]any)["fired"].([]string)) != 1 {
		t.Fatalf("%v %v", out, err)
	}
}

// At most 1024 contexts: a new one past the limit is a 400 and nothing is
// evicted; known contexts keep working.
func TestTriggersContextLimit(t *testing.T) {
	st := newTriggerState()
	for i := range maxTriggerContexts {
		if _, err := st.decide(fmt.Sprint("c", i), &decideInput{turn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.decide("one-too-many", &decideInput{turn: 1})
	if he, ok := err.(*httpError); !ok || he.status != 400 {
		t.Fatalf("want 400, got %v", err)
	}
	if _, err := st.decide("c0", &decideInput{turn: 2}); err != nil || len(st.contexts) != maxTriggerContexts {
		t.Fatalf("%v %d", err, len(st.contexts))
	}
}

// A spec of the wrong JSON kind, or with a field of the wrong type, is
// refused with a message naming where, never an empty field name.
func TestTriggerSpecTypeErrorsNameTheField(t *testing.T) {
	for raw, want := range map[string]string{
		`"a string"`: "triggers[0]: must be a JSON object",
		`[1]`:        "triggers[0]: must be a JSON object",
		`{"id":5,"when":{"type":"step","where":{}},"actions":[{"type":"end"}]}`: "triggers[0]: id: wrong type",
		`{"when":{"type":"step","turn":1},"actions":["end"]}`:                   "triggers[0].actions[0]: must be a JSON object",
	} {
		_, err := parseTrigger(json.RawMessage(raw), 0)
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", raw, err, want)
		}
	}
}
