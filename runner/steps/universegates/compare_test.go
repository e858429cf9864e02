package universegates_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/steps/universegates"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return universegates.Normalize(v).(map[string]any)
}

// Representation noise is not a difference: number formats, time zones,
// a date against a time that day, empty values, order, server-added
// fields.
func TestCompareIgnoresRepresentation(t *testing.T) {
	a := decode(t, `{"txns":[{"id":"2","amount":"12.50","at":"2026-01-02T10:00:00-04:00","memo":null},
	                         {"id":"1","amount":3,"day":"2026-01-02","tags":[]}]}`)
	b := decode(t, `{"txns":[{"id":"1","amount":3.0,"day":"2026-01-02T08:00:00Z","tags":null,"created_at":"x"},
	                         {"id":"2","amount":12.5,"at":"2026-01-02T14:00:00Z","memo":"filled in"}]}`)
	issues, ok := universegates.Classify(universegates.Compare(a, b, "universe", "export1"), nil)
	if !ok {
		t.Fatalf("incompatible: %v", issues)
	}
	for _, i := range issues {
		if i["type"] != "added_field" || i["critical"] != false || i["phase"] != "export" {
			t.Errorf("unexpected issue %v", i)
		}
	}
}

// Lost records, lost data and changed values are critical; a dropped
// empty field is not; every idempotency issue is.
func TestCompareFindsLoss(t *testing.T) {
	a := decode(t, `{"users":[{"id":1,"name":"Ann","note":"","email":"a@x"},{"id":2,"name":"Bo"}]}`)
	b := decode(t, `{"users":[{"id":1,"name":"Anne"}]}`)
	issues, ok := universegates.Classify(universegates.Compare(a, b, "universe", "export1"),
		universegates.Compare(b, decode(t, `{"users":[]}`), "export1", "export2"))
	if ok {
		t.Fatal("compatible")
	}
	got := map[string]bool{}
	for _, i := range issues {
		got[i["type"].(string)+" "+i["field"].(string)+" "+i["phase"].(string)+" "+map[bool]string{true: "critical", false: "benign"}[i["critical"].(bool)]] = true
	}
	for _, want := range []string{"count_mismatch  load critical", "value_mismatch name load critical",
		"dropped_field email load critical", "dropped_field note load benign", "count_mismatch  idempotency critical"} {
		if !got[want] {
			t.Errorf("lacks %q in %v", want, got)
		}
	}
}

// A dropped object field whose keys come back as columns is a reshape.
func TestCompareReshape(t *testing.T) {
	a := decode(t, `{"rec":[{"id":1,"snapshot":{"total":5,"count":2}}]}`)
	b := decode(t, `{"rec":[{"id":1,"total":5,"count":2}]}`)
	issues, ok := universegates.Classify(universegates.Compare(a, b, "universe", "export1"), nil)
	if !ok {
		t.Fatalf("reshape flagged: %v", issues)
	}
	var s []string
	for _, i := range issues {
		if i["type"] == "dropped_field" && i["benign_reshape"] == true {
			s = append(s, i["field"].(string))
		}
	}
	if strings.Join(s, ",") != "snapshot" {
		t.Errorf("issues %v", issues)
	}
}
