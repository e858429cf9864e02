package envgates

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// TypeSpecConformance is verify_spec_conformance's type name.
const TypeSpecConformance = "verify_spec_conformance"

// GateSpecConformance is its gate key. It is not among
// DefaultRequiredGates: the reference records it without enforcing it
// (name it in required_gates to enforce).
const GateSpecConformance = "spec_conformance"

// SpecPath is where a backing server serves the OpenAPI document its tools
// follow (YAML or JSON), relative to its base URL.
const SpecPath = "/openapi.yaml"

// blockingKinds are the findings that break a caller reading only the
// spec. A server offering more than it documents (extra_tool, an optional
// extra_param) breaks nobody, so those are reported but do not fail.
var blockingKinds = map[string]bool{
	"missing_tool": true, "missing_param": true, "type_mismatch": true, "enum_mismatch": true,
	"required_mismatch": true, "ambiguous_tool": true, "extra_required_param": true,
}

// SpecConformanceInfo registers verify_spec_conformance.
func SpecConformanceInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeSpecConformance, New: func() runner.Step { return new(SpecConformance) }}
}

// SpecConformance is verify_spec_conformance: each backing server that
// serves an OpenAPI document at SpecPath is diffed, request side, against
// the env's live tools: tool presence, parameter names, types, enums and
// required-ness. The spec is a floor: a server may offer more. A server
// serving no spec is skipped (advisory). Details go to
// metadata.mcp_spec_conformance.
type SpecConformance struct {
	EnvID     string `json:"env_id"`
	EnvStepID string `json:"env_step_id,omitempty"`
}

var (
	_ runner.Step         = (*SpecConformance)(nil)
	_ runner.Validator    = (*SpecConformance)(nil)
	_ runner.EntityRefser = (*SpecConformance)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *SpecConformance) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

// Validate implements runner.Validator.
func (c *SpecConformance) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *SpecConformance) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if tok := gwclient.ControlToken(ctx, rc, env.Entry); tok != "" && env.Gateway != nil {
		hc.Transport = bearer{token: tok}
	}
	specs := map[string]map[string]any{}
	servers := map[string]any{}
	var skipped []string
	for _, name := range env.Servers {
		u := serverBase(env, name) + SpecPath
		spec, reason, err := fetchSpec(ctx, hc, u)
		if err != nil {
			// An unreachable server is an execution error, not a verdict.
			return fmt.Errorf("%s: env %s server %s: %w", TypeSpecConformance, c.EnvID, name, err)
		}
		if reason != "" {
			servers[name] = map[string]any{"skipped": true, "reason": reason, "findings": []any{}, "blocking_findings": 0}
			skipped = append(skipped, fmt.Sprintf("server %s: %s", name, reason))
			continue
		}
		specs[name] = spec
	}
	details := map[string]any{"env_id": c.EnvID, "servers": servers}
	if len(specs) == 0 {
		details["skipped"] = true
		details["reason"] = strings.Join(skipped, "; ")
		details["passed"] = false // nothing was checked: never read as a pass
		rc.SetVerification(GateSpecConformance, runner.Verification{Score: 1, Results: []runner.Row{{"gate": GateSpecConformance,
			"result": true, "score": 1.0, "skipped": true, "justification": "no OpenAPI spec served: " + details["reason"].(string)}}})
		rc.SetMetadata("mcp_spec_conformance", details)
		return nil
	}
	e, err := rc.EnvEntry(c.EnvID, c.EnvStepID)
	if err != nil {
		return fmt.Errorf("env_id: %w", err)
	}
	u, _ := e["mcp_url"].(string)
	hdr := map[string]string{}
	if tok := gwclient.ControlToken(ctx, rc, e); tok != "" {
		hdr["Authorization"] = "Bearer " + protocol.RoleToken(tok, gwclient.VerifierRole)
	}
	tools, err := listTools(ctx, u, hdr)
	if err != nil {
		return fmt.Errorf("%s: env %s: %w", TypeSpecConformance, c.EnvID, err)
	}
	live := map[string]map[string]any{}
	for _, t := range tools {
		raw, _ := json.Marshal(t.InputSchema)
		if len(t.RawInputSchema) > 0 {
			raw = t.RawInputSchema
		}
		var schema map[string]any
		_ = json.Unmarshal(raw, &schema)
		live[t.Name] = schema
	}
	var problems []string
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		// With several servers, a server's spec is held against its own
		// tools (named <server>_...), not its neighbours'.
		mine := live
		if len(env.Servers) > 1 {
			mine = map[string]map[string]any{}
			for n, s := range live {
				if strings.HasPrefix(n, name+"_") {
					mine[n] = s
				}
			}
		}
		res := DiffSpec(specs[name], mine, name)
		servers[name] = res
		for _, f := range res["findings"].([]map[string]any) {
			if f["blocking"] == true {
				problems = append(problems, fmt.Sprintf("server %s: %s %s: %s", name, f["kind"], f["tool"], f["detail"]))
			}
		}
	}
	record(rc, GateSpecConformance, "mcp_spec_conformance", details, problems)
	return nil
}

// fetchSpec GETs a server's spec. A 404, 405 or 501, or a document with no
// paths, is a reason to skip; other statuses are errors.
func fetchSpec(ctx context.Context, hc *http.Client, u string) (map[string]any, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", u, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return nil, fmt.Sprintf("no OpenAPI spec served at %s (HTTP %d)", u, resp.StatusCode), nil
	default:
		return nil, "", fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	var spec map[string]any
	if yaml.Unmarshal(b, &spec) != nil || spec["paths"] == nil {
		return nil, fmt.Sprintf("OpenAPI spec at %s has no usable paths section", u), nil
	}
	return spec, "", nil
}

// param is one parameter as both sides are compared: its type, its sorted
// enum (nil = none) and whether it is required.
type param struct {
	typ      string
	enum     []string
	required bool
}

var httpMethods = []string{"get", "post", "put", "delete", "patch", "head", "options", "trace"}

// DiffSpec diffs an OpenAPI document against live tools (name → input
// schema). Names are compared with a leading "<server>_" removed on both
// sides, since tools are namespaced and operationIds mostly are not. It
// returns {passed, total_tools, spec_operations, findings[{kind, tool,
// param?, detail, blocking}], blocking_findings}; passed counts blocking
// findings only.
func DiffSpec(spec map[string]any, tools map[string]map[string]any, server string) map[string]any {
	ops := specParams(spec)
	findings := []map[string]any{}
	add := func(kind, tool, p, detail string) {
		f := map[string]any{"kind": kind, "tool": tool, "detail": detail, "blocking": blockingKinds[kind]}
		if p != "" {
			f["param"] = p
		}
		findings = append(findings, f)
	}
	type named struct {
		name   string
		params map[string]param
	}
	index := func(what string, in map[string]map[string]param) map[string]named {
		out := map[string]named{}
		keys := make([]string, 0, len(in))
		for k := range in {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, n := range keys {
			k := strings.TrimPrefix(n, server+"_")
			if prev, ok := out[k]; ok {
				add("ambiguous_tool", n, "", fmt.Sprintf("%s '%s' and '%s' both reduce to '%s' after stripping the '%s_' prefix", what, prev.name, n, k, server))
			}
			out[k] = named{n, in[n]}
		}
		return out
	}
	liveParams := map[string]map[string]param{}
	for n, s := range tools {
		liveParams[n] = toolParams(s)
	}
	so := index("spec operationIds", ops)
	lo := index("MCP tools", liveParams)
	keys := map[string]bool{}
	for k := range so {
		keys[k] = true
	}
	for k := range lo {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		s, inSpec := so[k]
		l, inLive := lo[k]
		switch {
		case !inLive:
			add("missing_tool", s.name, "", fmt.Sprintf("operationId '%s' in spec has no matching MCP tool", s.name))
			continue
		case !inSpec:
			add("extra_tool", l.name, "", fmt.Sprintf("MCP tool '%s' is not declared in the spec", l.name))
			continue
		}
		for _, p := range sortedKeys(s.params) {
			sp := s.params[p]
			lp, ok := l.params[p]
			if !ok {
				add("missing_param", l.name, p, fmt.Sprintf("spec param '%s' absent from tool inputSchema", p))
				continue
			}
			if sp.typ != "" && lp.typ != "" && sp.typ != lp.typ {
				add("type_mismatch", l.name, p, fmt.Sprintf("spec type '%s' != tool type '%s'", sp.typ, lp.typ))
			}
			if sp.enum != nil && lp.enum != nil && strings.Join(sp.enum, "\x00") != strings.Join(lp.enum, "\x00") {
				add("enum_mismatch", l.name, p, fmt.Sprintf("spec enum %v != tool enum %v", sp.enum, lp.enum))
			}
			if sp.required != lp.required {
				add("required_mismatch", l.name, p, fmt.Sprintf("spec required=%v != tool required=%v", sp.required, lp.required))
			}
		}
		for _, p := range sortedKeys(l.params) {
			if _, ok := s.params[p]; ok {
				continue
			}
			if l.params[p].required {
				add("extra_required_param", l.name, p, fmt.Sprintf("tool param '%s' not declared in spec and is required, so a spec-following caller cannot call this tool", p))
			} else {
				add("extra_param", l.name, p, fmt.Sprintf("tool param '%s' not declared in spec", p))
			}
		}
	}
	blocking := 0
	for _, f := range findings {
		if f["blocking"] == true {
			blocking++
		}
	}
	return map[string]any{"passed": blocking == 0, "total_tools": len(tools), "spec_operations": len(ops),
		"findings": findings, "blocking_findings": blocking}
}

func sortedKeys(m map[string]param) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// specParams maps each operationId to its parameters: path-item and
// operation parameters (the operation's win) and the JSON request body's
// properties.
func specParams(spec map[string]any) map[string]map[string]param {
	out := map[string]map[string]param{}
	paths, _ := spec["paths"].(map[string]any)
	for _, item := range paths {
		methods, _ := item.(map[string]any)
		shared, _ := methods["parameters"].([]any)
		for _, m := range httpMethods {
			op, _ := methods[m].(map[string]any)
			id, _ := op["operationId"].(string)
			if id == "" {
				continue
			}
			params := map[string]param{}
			own, _ := op["parameters"].([]any)
			for _, raw := range append(append([]any{}, shared...), own...) {
				p, _ := openAPIRef(raw, spec).(map[string]any)
				name, _ := p["name"].(string)
				if name == "" {
					continue
				}
				t, e := typeEnum(p["schema"], spec, nil)
				req, _ := p["required"].(bool)
				params[name] = param{t, e, req}
			}
			body, _ := openAPIRef(op["requestBody"], spec).(map[string]any)
			content, _ := body["content"].(map[string]any)
			js, _ := content["application/json"].(map[string]any)
			schema, _ := openAPIRef(js["schema"], spec).(map[string]any)
			req := map[string]bool{}
			rl, _ := schema["required"].([]any)
			for _, r := range rl {
				if s, ok := r.(string); ok {
					req[s] = true
				}
			}
			props, _ := schema["properties"].(map[string]any)
			for name, ps := range props {
				t, e := typeEnum(ps, spec, nil)
				p := param{t, e, req[name]}
				if prev, ok := params[name]; ok {
					// A parameter and a body property share the name: keep
					// the parameter's type and enum; required if either is.
					if prev.typ != "" {
						p.typ = prev.typ
					}
					if prev.enum != nil {
						p.enum = prev.enum
					}
					p.required = p.required || prev.required
				}
				params[name] = p
			}
			out[id] = params
		}
	}
	return out
}

// toolParams maps a live tool's input schema to its parameters.
func toolParams(schema map[string]any) map[string]param {
	out := map[string]param{}
	props, _ := schema["properties"].(map[string]any)
	req := map[string]bool{}
	rl, _ := schema["required"].([]any)
	for _, r := range rl {
		if s, ok := r.(string); ok {
			req[s] = true
		}
	}
	for name, ps := range props {
		t, e := typeEnum(ps, nil, schema)
		out[name] = param{t, e, req[name]}
	}
	return out
}

// typeEnum is a schema node's comparable type and sorted enum: $ref
// followed (#/components/... against spec, #/$defs/... against the
// tool's schema), else the first typed non-null anyOf/oneOf/allOf variant.
func typeEnum(node any, spec, toolSchema map[string]any) (string, []string) {
	resolve := func(n any) map[string]any {
		if spec != nil {
			n = openAPIRef(n, spec)
		}
		m, _ := n.(map[string]any)
		if toolSchema != nil && m != nil {
			m = resolveRef(m, toolSchema)
		}
		return m
	}
	m := resolve(node)
	if m == nil {
		return "", nil
	}
	t, _ := m["type"].(string)
	enum, _ := m["enum"].([]any)
	if t == "" {
	variants:
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			vs, _ := m[k].([]any)
			for _, v := range vs {
				vm := resolve(v)
				if vt, _ := vm["type"].(string); vt != "" && vt != "null" {
					t = vt
					if enum == nil {
						enum, _ = vm["enum"].([]any)
					}
					break variants
				}
			}
		}
	}
	if len(enum) == 0 {
		return t, nil
	}
	out := make([]string, len(enum))
	for i, e := range enum {
		out[i] = fmt.Sprint(e)
	}
	sort.Strings(out)
	return t, out
}

// openAPIRef follows "#/..." pointers against the whole spec; the
// referencing node's other keys win. A cycle or a dangling pointer leaves
// the node as it is.
func openAPIRef(node any, spec map[string]any) any {
	seen := map[string]bool{}
	for {
		m, ok := node.(map[string]any)
		if !ok {
			return node
		}
		ref, _ := m["$ref"].(string)
		if !strings.HasPrefix(ref, "#/") || seen[ref] {
			return node
		}
		seen[ref] = true
		var target any = spec
		for _, part := range strings.Split(ref[2:], "/") {
			tm, ok := target.(map[string]any)
			if !ok {
				return node
			}
			if target, ok = tm[part]; !ok {
				return node
			}
		}
		tm, ok := target.(map[string]any)
		if !ok {
			return target
		}
		merged := map[string]any{}
		for k, v := range tm {
			merged[k] = v
		}
		for k, v := range m {
			if k != "$ref" {
				merged[k] = v
			}
		}
		node = merged
	}
}
