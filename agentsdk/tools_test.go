package agentsdk_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
)

func TestToolDefinitions(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","title":"Add","properties":{"name":{"type":"string"}},"required":["name"]}`)
	tools := []agentsdk.Tool{{Name: "add", Description: "Add", InputSchema: schema}, {Name: "bare"}}
	want := map[string]string{
		agentsdk.APIOpenAIChat:      `[{"function":{"description":"Add","name":"add","parameters":{"properties":{"name":{"type":"string"}},"required":["name"],"title":"Add","type":"object"}},"type":"function"},{"function":{"description":"","name":"bare","parameters":{"properties":{},"type":"object"}},"type":"function"}]`,
		agentsdk.APIOpenAIResponses: `[{"description":"Add","name":"add","parameters":{"properties":{"name":{"type":"string"}},"required":["name"],"title":"Add","type":"object"},"type":"function"},{"description":"","name":"bare","parameters":{"properties":{},"type":"object"},"type":"function"}]`,
		agentsdk.APIAnthropic:       `[{"description":"Add","input_schema":{"properties":{"name":{"type":"string"}},"required":["name"],"title":"Add","type":"object"},"name":"add"},{"description":"","input_schema":{"properties":{},"type":"object"},"name":"bare"}]`,
	}
	for api, w := range want {
		defs, err := agentsdk.ToolDefinitions(tools, api)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(defs)
		if string(b) != w {
			t.Errorf("%s:\n got %s\nwant %s", api, b, w)
		}
	}
	// Deep copy: changing the rendering leaves the descriptor alone.
	defs, _ := agentsdk.ToolDefinitions(tools, agentsdk.APIAnthropic)
	defs[0]["input_schema"].(map[string]any)["title"] = "changed"
	if string(tools[0].InputSchema) != string(schema) {
		t.Fatal("schema aliased")
	}
	if _, err := agentsdk.ToolDefinitions(tools, "gemini"); !errors.Is(err, agentsdk.ErrUnknownAPI) {
		t.Fatalf("unknown api: %v", err)
	}
	if _, err := agentsdk.ToolDefinitions([]agentsdk.Tool{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}, agentsdk.APIAnthropic); err == nil {
		t.Fatal("non-object schema accepted")
	}
	if agentsdk.QualifiedToolName("env", "add") != "mcp__env__add" {
		t.Fatal(agentsdk.QualifiedToolName("env", "add"))
	}
}
