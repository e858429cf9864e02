package envgates

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// TypeMCPToolSchema is verify_mcp_tool_schema's type name.
const TypeMCPToolSchema = "verify_mcp_tool_schema"

// MCPToolSchemaInfo registers verify_mcp_tool_schema.
func MCPToolSchemaInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeMCPToolSchema, New: func() runner.Step { return new(MCPToolSchema) }}
}

// MCPToolSchema is verify_mcp_tool_schema: the env's live tools (MCP
// tools/list at its mcp_url, as the runner's verifier role) each have a
// description and an object input schema whose parameters have a type and
// a description, arrays their items, objects their properties, and no
// empty enum. Details go to metadata.mcp_tool_schema_validation.
type MCPToolSchema struct {
	EnvID     string `json:"env_id"`
	EnvStepID string `json:"env_step_id,omitempty"`
}

var (
	_ runner.Step         = (*MCPToolSchema)(nil)
	_ runner.Validator    = (*MCPToolSchema)(nil)
	_ runner.EntityRefser = (*MCPToolSchema)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *MCPToolSchema) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *MCPToolSchema) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *MCPToolSchema) Run(ctx context.Context, rc *runner.RunContext) error {
	e, err := rc.EnvEntry(c.EnvID, c.EnvStepID)
	if err != nil {
		return fmt.Errorf("env_id: %w", err)
	}
	u, _ := e["mcp_url"].(string)
	if u == "" {
		return fmt.Errorf("env_id %q: the deployed env has no mcp_url", c.EnvID)
	}
	hdr := map[string]string{}
	if tok := gwclient.ControlToken(ctx, rc, e); tok != "" {
		hdr["Authorization"] = "Bearer " + protocol.RoleToken(tok, gwclient.VerifierRole)
	}
	tools, err := listTools(ctx, u, hdr)
	if err != nil {
		return fmt.Errorf("%s: env %s: %w", TypeMCPToolSchema, c.EnvID, err)
	}
	var problems, missingDesc []string
	issues := map[string][]string{}
	schemas := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		var schema map[string]any
		raw, _ := json.Marshal(t.InputSchema)
		if len(t.RawInputSchema) > 0 {
			raw = t.RawInputSchema
		}
		_ = json.Unmarshal(raw, &schema)
		schemas = append(schemas, map[string]any{"name": t.Name, "description": t.Description, "input_schema": schema})
		if strings.TrimSpace(t.Description) == "" {
			missingDesc = append(missingDesc, t.Name)
			problems = append(problems, fmt.Sprintf("tool %s: missing description", t.Name))
		}
		if is := schemaIssues(schema); len(is) > 0 {
			issues[t.Name] = is
			for _, i := range is {
				problems = append(problems, fmt.Sprintf("tool %s: %s", t.Name, i))
			}
		}
	}
	record(rc, GateMCPToolSchema, "mcp_tool_schema_validation", map[string]any{
		"env_id": c.EnvID, "total_tools": len(tools), "tools_missing_description": missingDesc,
		"parameter_issues": issues, "tools": schemas,
	}, problems)
	return nil
}

// listTools reads the live tools at the MCP endpoint u.
func listTools(ctx context.Context, u string, hdr map[string]string) ([]mcp.Tool, error) {
	tr, err := transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(hdr))
	if err != nil {
		return nil, fmt.Errorf("MCP %s: %w", u, err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("MCP %s: %w", u, err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: gwclient.VerifierRole, Version: "1"}}}); err != nil {
		return nil, fmt.Errorf("MCP %s: initialize: %w", u, err)
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("MCP %s: tools/list: %w", u, err)
	}
	return res.Tools, nil
}

// schemaIssues lists what a tool's input schema lacks, parameter by
// parameter in name order. A $ref into the schema's $defs is followed.
func schemaIssues(schema map[string]any) []string {
	if schema == nil {
		return []string{"input schema is missing or not an object"}
	}
	var out []string
	if t, _ := schema["type"].(string); t != "object" {
		out = append(out, fmt.Sprintf("input schema type is %v, want object", schema["type"]))
	}
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, ok := props[n].(map[string]any)
		if !ok {
			out = append(out, fmt.Sprintf("parameter '%s' schema is not an object", n))
			continue
		}
		p = resolveRef(p, schema)
		if !hasType(p, schema) {
			out = append(out, fmt.Sprintf("parameter '%s' missing explicit type", n))
		}
		if _, ok := p["description"]; !ok {
			out = append(out, fmt.Sprintf("parameter '%s' missing description", n))
		}
		if p["type"] == "array" && p["items"] == nil {
			out = append(out, fmt.Sprintf("parameter '%s' is array without items type", n))
		}
		if p["type"] == "object" && p["properties"] == nil {
			out = append(out, fmt.Sprintf("parameter '%s' is object without properties", n))
		}
		if e, ok := p["enum"]; ok {
			if l, _ := e.([]any); len(l) == 0 {
				out = append(out, fmt.Sprintf("parameter '%s' has empty enum list", n))
			}
		}
	}
	return out
}

// hasType: a type, or an anyOf whose variants carry one.
func hasType(p, schema map[string]any) bool {
	if _, ok := p["type"]; ok {
		return true
	}
	vs, _ := p["anyOf"].([]any)
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok {
			if _, ok := resolveRef(m, schema)["type"]; ok {
				return true
			}
		}
	}
	return false
}

// resolveRef follows a "#/$defs/<name>" pointer; the property's own keys
// (a description) win over the definition's.
func resolveRef(p, schema map[string]any) map[string]any {
	ref, _ := p["$ref"].(string)
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return p
	}
	defs, _ := schema["$defs"].(map[string]any)
	d, ok := defs[name].(map[string]any)
	if !ok {
		return p
	}
	out := map[string]any{}
	for k, v := range d {
		out[k] = v
	}
	for k, v := range p {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}
