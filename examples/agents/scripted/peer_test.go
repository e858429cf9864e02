package main

import (
	"strings"
	"testing"
)

func TestPeerStepValidation(t *testing.T) {
	ok := `{"rules":[{"steps":[{"tool":"read","arguments":{}},{"peer":"writer","message":"Answer: {{result 0}}"}],"reply":"{{result 1}}"}]}`
	if _, err := ParseScript([]byte(ok)); err != nil {
		t.Fatalf("valid peer step refused: %v", err)
	}
	for script, want := range map[string]string{
		`{"rules":[{"steps":[{"peer":"writer"}],"reply":"x"}]}`:                          "peer and message",
		`{"rules":[{"steps":[{"peer":"writer","message":"m","tool":"t"}],"reply":"x"}]}`: "peer and message",
		`{"rules":[{"steps":[{"peer":"writer","message":"{{result 0}}"}],"reply":"x"}]}`: "names no earlier step",
	} {
		if _, err := ParseScript([]byte(script)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", script, err, want)
		}
	}
}
