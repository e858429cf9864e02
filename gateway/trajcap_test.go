package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/protocol"
)

type truncation struct {
	OriginalBytes int    `json:"original_bytes"`
	SHA256        string `json:"sha256"`
	Head          string `json:"head"`
}

// checkTruncation checks a marker against the value it replaced.
func checkTruncation(t *testing.T, what string, m *truncation, original string) {
	t.Helper()
	sum := sha256.Sum256([]byte(original))
	if m == nil || m.OriginalBytes != len(original) || m.SHA256 != hex.EncodeToString(sum[:]) ||
		m.Head == "" || !strings.HasPrefix(original, m.Head) {
		t.Fatalf("%s: marker %+v does not describe the %d-byte original", what, m, len(original))
	}
}

// A large call is recorded as a marker with the original's size, sha256
// and head, within the configured cap, on lines that stay valid JSON; a
// small call is recorded whole.
func TestTrajectoryCapsLargeValues(t *testing.T) {
	const limit = 4096
	c := startChild(t, "mail", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c), TrajectoryMaxFieldBytes: limit}, nil)
	a := tg.mcpClient(t, "")
	big := strings.Repeat("é<x>\n", 20000) // multi-byte and escaped characters
	if got := a.call(t, "mail_echo", map[string]any{"msg": big}); got.IsError || len(got.text()) < len(big) {
		t.Fatalf("large call failed: isError %v, %d bytes of text", got.IsError, len(got.text()))
	}
	a.call(t, "mail_echo", map[string]any{"msg": "small"})
	tg.EmitTrajectory("custom", json.RawMessage(`{"note":"`+strings.Repeat("n", 2*limit)+`","ok":true}`))

	_, body := tg.get(t, "/trajectory", nil)
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if len(line) > 3*limit {
			t.Errorf("line of %d bytes with a cap of %d per field: %.200s", len(line), limit, line)
		}
	}
	evs, _ := readEvents(t, body)
	if len(evs) != 5 {
		t.Fatalf("want 5 events, got %d", len(evs))
	}
	args, _ := json.Marshal(map[string]any{"msg": big})
	var call protocol.TrajectoryToolCall
	if err := json.Unmarshal(evs[0]["tool_call"], &call); err != nil || call.FunctionName != "mail_echo" {
		t.Fatalf("tool_call = %s (%v)", evs[0]["tool_call"], err)
	}
	var cut struct {
		Marker *truncation `json:"agentenv_truncated"`
	}
	if err := json.Unmarshal(call.Arguments, &cut); err != nil {
		t.Fatal(err)
	}
	checkTruncation(t, "arguments", cut.Marker, string(args))
	var res struct {
		Content []json.RawMessage `json:"content"`
		IsError *bool             `json:"isError"`
		Marker  *truncation       `json:"agentenv_truncated"`
	}
	if err := json.Unmarshal(evs[1]["tool_call_result"], &res); err != nil || res.Content == nil || res.IsError == nil || *res.IsError {
		t.Fatalf("tool_call_result = %.300s (%v)", evs[1]["tool_call_result"], err)
	}
	if res.Marker == nil || res.Marker.OriginalBytes <= len(args) {
		t.Fatalf("result marker %+v", res.Marker)
	}
	if got := string(evs[2]["tool_call"]); got != `{"function_name":"mail_echo","arguments":{"msg":"small"}}` {
		t.Fatalf("small call recorded as %s", got)
	}
	if !strings.Contains(string(evs[3]["tool_call_result"]), `small`) {
		t.Fatalf("small result recorded as %s", evs[3]["tool_call_result"])
	}
	var note struct {
		Marker *truncation `json:"agentenv_truncated"`
	}
	if err := json.Unmarshal(evs[4]["note"], &note); err != nil || string(evs[4]["ok"]) != "true" {
		t.Fatalf("custom event: note %s, ok %s (%v)", evs[4]["note"], evs[4]["ok"], err)
	}
	checkTruncation(t, "custom field", note.Marker, `"`+strings.Repeat("n", 2*limit)+`"`)
}

func TestCapValueEdges(t *testing.T) {
	raw := []byte(`"` + strings.Repeat("\x01", 1000) + `"`) // escapes to 6x
	for _, max := range []int{0, -1, len(raw)} {
		if got := capValue(raw, max); string(got) != string(raw) {
			t.Errorf("max %d: value changed", max)
		}
	}
	for _, max := range []int{50, 300, 700} {
		got := capValue(raw, max)
		var m struct {
			Marker *truncation `json:"agentenv_truncated"`
		}
		if err := json.Unmarshal(got, &m); err != nil || m.Marker == nil || m.Marker.OriginalBytes != len(raw) {
			t.Fatalf("max %d: %s (%v)", max, got, err)
		}
		if max >= 300 && len(got) > max {
			t.Errorf("max %d: marker of %d bytes", max, len(got))
		}
	}
	// The head takes what the marker leaves of the cap.
	plain := []byte(`"` + strings.Repeat("a", 10000) + `"`)
	if got := capValue(plain, 4096); len(got) > 4096 || len(got) < 4096-markerOverhead {
		t.Errorf("marker of %d bytes for a cap of 4096", len(got))
	}
}
