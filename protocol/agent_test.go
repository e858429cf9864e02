package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeMCPConfigAdd(t *testing.T) {
	r, err := DecodeMCPConfigAdd([]byte(`{"url":"  http://x/mcp ","headers":{"Authorization":"Bearer s3cret"},"name":"env"}`))
	if err != nil || r.URL != "http://x/mcp" || r.Name != "env" || r.Headers["Authorization"] == "" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for body, want := range map[string]string{
		`{"url":"   "}`:                        "url: must not be empty",
		`{}`:                                   "url: required",
		`{"url":"http://x","extra":1}`:         `unknown field "extra"`,
		`{"url":5}`:                            "url: must be a string",
		`{"url":"http://x","headers":{"a":1}}`: "headers: must be a string",
		`[1]`:                                  "body must be a JSON object",
		`{"url":"http://x"} {}`:                "exactly one JSON object",
		`{"url":"http://x","name":""}`:         "name: must not be empty",
	} {
		_, err := DecodeMCPConfigAdd([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", body, err, want)
		}
	}
	// Errors never echo values (secrets travel in headers).
	_, err = DecodeMCPConfigAdd([]byte(`{"url":"http://x","headers":{"Authorization":["s3cret"]}}`))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeTrajectoryRequestCursorStrictness(t *testing.T) {
	r, err := DecodeTrajectoryRequest([]byte(`{"task_id":"t","after":3,"limit":10}`))
	if err != nil || r.TaskID != "t" || *r.After != 3 || r.Limit != 10 {
		t.Fatalf("got %+v, %v", r, err)
	}
	r, err = DecodeTrajectoryRequest([]byte(`{"context_id":"c"}`))
	if err != nil || r.ContextID != "c" || r.After != nil {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, body := range []string{
		`{"task_id":"t","after":true}`, `{"task_id":"t","after":"1"}`, `{"task_id":"t","after":-1}`,
		`{"task_id":"t","after":1.5}`, `{"task_id":"t","after":0,"limit":0}`, `{"task_id":"t","after":0,"limit":1001}`,
		`{"task_id":"t","limit":5}`, `{"task_id":"t","context_id":"c"}`, `{}`, `{"task_id":"t","x":1}`,
		`{"task_id":""}`, `{"task_id":"t","after":null}`,
	} {
		if _, err := DecodeTrajectoryRequest([]byte(body)); err == nil {
			t.Errorf("%s: want error", body)
		}
	}
}

func TestDecodePeerAgentsSet(t *testing.T) {
	r, err := DecodePeerAgentsSet([]byte(`{"peers":[{"name":"b","url":"http://b","card":{"name":"b"},"description":"B"}]}`))
	if err != nil || len(r.Peers) != 1 || r.Peers[0].Description != "B" {
		t.Fatalf("got %+v, %v", r, err)
	}
	for _, body := range []string{
		`{"peers":[{"name":"b","url":"http://b","x":1}]}`, `{"peers":[{"name":"","url":"u"}]}`,
		`{"peers":[{"name":"a","url":"u"},{"name":"a","url":"v"}]}`, `{"peers":[{"name":"a","url":"u","card":[1]}]}`,
		`{}`, `{"peers":[],"x":1}`,
	} {
		if _, err := DecodePeerAgentsSet([]byte(body)); err == nil {
			t.Errorf("%s: want error", body)
		}
	}
}

func TestTrailerDataOmitsEmpty(t *testing.T) {
	p := TrailerData{ErrorType: ErrorTypeAgent, ErrorCode: "c", ErrorMessage: "m"}.Part()
	b, _ := json.Marshal(p)
	if string(b) != `{"kind":"data","data":{"error_type":"agent_error","error_code":"c","error_message":"m"}}` {
		t.Fatalf("got %s", b)
	}
	b, _ = json.Marshal(TrailerData{Usage: &Usage{ToolCallCount: 2, TotalTokens: 5}})
	if string(b) != `{"usage":{"tool_call_count":2,"total_tokens":5}}` {
		t.Fatalf("got %s", b)
	}
	if !strings.HasSuffix(UnhandledMessage("ab"), "Correlation ID: ab") {
		t.Fatal(UnhandledMessage("ab"))
	}
}

func TestDecodeSkillConfigAdd(t *testing.T) {
	r, err := DecodeSkillConfigAdd([]byte(`{"name":"pdf.v2_x-1","description":"d","skill_md":"# x"}`))
	if err != nil || r.Name != "pdf.v2_x-1" || r.SkillMD != "# x" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := DecodeSkillConfigAdd([]byte(`{"name":"a","description":"d","skill_bundle":{}}`)); err != ErrSkillBundleUnsupported {
		t.Fatalf("bundle: %v", err)
	}
	for _, b := range []string{`{"name":"_a","description":"d","skill_md":"x"}`, `{"name":"a","skill_md":"x"}`, `{"name":"a","description":"d","skill_md":""}`, `{"name":"a","description":"d","skill_md":"x","z":1}`} {
		if _, err := DecodeSkillConfigAdd([]byte(b)); err == nil {
			t.Errorf("%s: want error", b)
		}
	}
}
