package protocol

import (
	"errors"
	"testing"
)

func TestDecodeStepRequest(t *testing.T) {
	ok := []struct {
		body, action, tool, args string
	}{
		{`{"action":"list_tools"}`, "list_tools", "", ""},
		{`{"action":"list_tools","tool_name":5}`, "list_tools", "", ""},
		{`{"action":"call_tool","tool_name":"x"}`, "call_tool", "x", "{}"},
		{`{"action":"call_tool","tool_name":"x","arguments":{"n":1.50}}`, "call_tool", "x", `{"n":1.50}`},
	}
	for _, c := range ok {
		r, err := DecodeStepRequest([]byte(c.body))
		if err != nil || r.Action != c.action || r.ToolName != c.tool || string(r.Arguments) != c.args {
			t.Errorf("%s → %+v %v", c.body, r, err)
		}
	}
	bad := map[string]string{
		`{`:                                     "Invalid JSON body",
		`[]`:                                    "body must be a JSON object",
		`{}`:                                    "Unknown action: None. Expected 'list_tools' or 'call_tool'.",
		`{"action":null}`:                       "Unknown action: None. Expected 'list_tools' or 'call_tool'.",
		`{"action":3}`:                          "Unknown action: 3. Expected 'list_tools' or 'call_tool'.",
		`{"action":"call_tool","tool_name":""}`: "Missing or invalid 'tool_name' field",
		`{"action":"call_tool","tool_name":"t","arguments":"x"}`: "'arguments' must be a JSON object",
	}
	for body, msg := range bad {
		_, err := DecodeStepRequest([]byte(body))
		var ve *StepValidationError
		if !errors.As(err, &ve) || ve.Message != msg {
			t.Errorf("%s → %v; want %q", body, err, msg)
		}
	}
}

func TestDecodeToolAccessRequest(t *testing.T) {
	r, err := DecodeToolAccessRequest([]byte(`{"role":"r","tools":"*"}`))
	if err != nil || !r.All || r.Role != "r" {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = DecodeToolAccessRequest([]byte(`{"role":"*","tools":["a","b"]}`))
	if err != nil || r.All || len(r.Tools) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = DecodeToolAccessRequest([]byte(`{"role":"r","tools":[]}`))
	if err != nil || len(r.Tools) != 0 || r.All {
		t.Fatalf("empty list: %+v %v", r, err)
	}
	for body, msg := range map[string]string{
		`x`:                        "Invalid JSON body",
		`1`:                        "body must be a JSON object",
		`{"tools":[]}`:             "Missing or invalid 'role' field",
		`{"role":"r","tools":"a"}`: "'tools' must be a list of strings or the string '*'",
		`{"role":"r","tools":{}}`:  "'tools' must be a list of strings or the string '*'",
	} {
		_, err := DecodeToolAccessRequest([]byte(body))
		var te *ToolAccessError
		if !errors.As(err, &te) || te.Message != msg {
			t.Errorf("%s → %v; want %q", body, err, msg)
		}
	}
}

func FuzzDecodeStepRequest(f *testing.F) {
	f.Add([]byte(`{"action":"call_tool","tool_name":"x","arguments":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeStepRequest(b)
		if err == nil && r.Action == StepActionCallTool && (r.ToolName == "" || len(r.Arguments) == 0) {
			t.Fatalf("accepted an incomplete call: %+v", r)
		}
	})
}
