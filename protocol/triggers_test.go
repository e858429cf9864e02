package protocol

import (
	"encoding/json"
	"testing"
)

// The GET /triggers/state example of the reference.
const triggersStateExample = `{"config":{"watch_roles":["default"],"executor_configured":true},"triggers":[{"id":"storm","type":"time","when":{"type":"time","every":{"dist":"exp","mean":"PT2H"},"seed":7,"count":5},"status":"armed","detected_at":null,"fired_at":null,"fire_count":0,"failure_count":0,"last_failure_at":null,"barrier":null,"pending":0,"next_mark":"2026-03-01T10:41:07.118022Z"}],"events":[{"seq":1,"ts":"2026-03-01T10:00:00.000120+00:00","virtual_time":"2026-03-01T09:00:00Z","kind":"added","trigger_id":"storm"}],"events_dropped":0}`

func TestTriggersStateRoundTrip(t *testing.T) {
	var st TriggersState
	if err := json.Unmarshal([]byte(triggersStateExample), &st); err != nil {
		t.Fatal(err)
	}
	if st.Triggers[0].NextMark == nil || *st.Triggers[0].NextMark != "2026-03-01T10:41:07.118022Z" || st.Triggers[0].DetectedAt != nil {
		t.Fatalf("%+v", st.Triggers[0])
	}
	var h TriggerEventHeader
	if err := json.Unmarshal(st.Events[0], &h); err != nil || h.Kind != TriggerEventAdded || h.Seq != 1 || h.TriggerID != "storm" {
		t.Fatalf("%+v %v", h, err)
	}
	b, err := json.Marshal(st)
	if err != nil || string(b) != triggersStateExample {
		t.Fatalf("re-encoded:\n%s\nwant\n%s", b, triggersStateExample)
	}
}

func TestTriggersBodies(t *testing.T) {
	tmo := 120.0
	cases := []struct {
		v    any
		want string
	}{
		{TriggersRegisterRequest{Triggers: []json.RawMessage{json.RawMessage(`{"id":"a"}`)}}, `{"triggers":[{"id":"a"}]}`},
		{TriggersRegisterRequest{WatchRoles: []string{"default"}, Executor: &TriggerExecutor{A2AURL: "http://x", Role: "executor", TimeoutSeconds: &tmo}, Triggers: []json.RawMessage{}},
			`{"watch_roles":["default"],"executor":{"a2a_url":"http://x","role":"executor","timeout_seconds":120},"triggers":[]}`},
		{TriggersRegistered{OK: true, Added: []string{"a"}, All: []string{"a", "b"}}, `{"ok":true,"added":["a"],"all":["a","b"]}`},
		{TriggersRemoveRequest{IDs: []string{"a"}}, `{"ids":["a"]}`},
		{TriggersRemoved{OK: true, Removed: []string{}}, `{"ok":true,"removed":[]}`},
		{TriggersCleared{OK: true}, `{"ok":true}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("got %s %v want %s", b, err, c.want)
		}
	}
}
