// Package envoutcomeverifier is the env_outcome_verifier step: grade a
// deployed env's end state with no model. Each check reads a value — a
// tool called through the gateway's /step, or a backing server's data/get
// export — extracts a field and applies a predicate, with the same
// expressions gateway triggers use. Rows go to
// metadata.verifications[verifier_id].
//
// file_artifact_id instead runs a verifier file, under the contract the
// file's kind selects: a Python file with a top-level verify is run as the
// reference runs it, verify(mcp_url) called (and awaited) with a shipped
// agentenv_protocol client on PYTHONPATH (python.go); anything else is a
// program that prints its rows (program.go).
package envoutcomeverifier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step type name.
const Type = "env_outcome_verifier"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Check is one graded probe.
type Check struct {
	ID        string         `json:"id"`
	Criterion string         `json:"criterion,omitempty"`
	Weight    *float64       `json:"weight,omitempty"`
	Tool      string         `json:"tool,omitempty"` // call this tool ...
	Args      map[string]any `json:"args,omitempty"`
	Role      string         `json:"role,omitempty"` // as this role (default: the runner's own)
	Data      string         `json:"data,omitempty"` // ... or read this server's data/get
	Extract   *Extract       `json:"extract,omitempty"`
	Predicate *Predicate     `json:"predicate"`
	// ExpectError (ours) passes only when the tool call is refused (an
	// isError result or a 4xx such as a disabled tool); the predicate then
	// applies to the error text.
	ExpectError bool `json:"expect_error,omitempty"`
}

// Config is the step's fields.
type Config struct {
	EnvID               string            `json:"env_id"`
	EnvStepID           string            `json:"env_step_id,omitempty"`
	FileArtifactID      string            `json:"file_artifact_id,omitempty"`
	FileArtifactVersion int               `json:"file_artifact_version,omitempty"`
	Checks              []Check           `json:"checks,omitempty"`
	ScoreAggregator     runner.Aggregator `json:"score_aggregator,omitempty"`
	VerifierID          string            `json:"verifier_id,omitempty"`
	// WaitForTriggers (ours) waits, before grading, until each named
	// gateway trigger has fired or failed (up to WaitTimeoutSeconds, 30 s):
	// time and nl triggers settle after the steps that provoke them.
	WaitForTriggers    []string `json:"wait_for_triggers,omitempty"`
	WaitTimeoutSeconds *float64 `json:"wait_timeout_seconds,omitempty"`
	// PromptID (ours), when set, makes the verifier score 0 when that
	// prompt has no response or its response carries an error.
	PromptID string `json:"prompt_id,omitempty"`
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	if (c.FileArtifactID == "") == (len(c.Checks) == 0) {
		return runner.Invalid("checks", "give exactly one of file_artifact_id or checks[]")
	}
	seen := map[string]bool{}
	for i := range c.Checks {
		ck := &c.Checks[i]
		where := fmt.Sprintf("checks[%d]", i)
		if ck.ID == "" {
			ck.ID = fmt.Sprintf("check_%d", i)
		}
		if seen[ck.ID] {
			return runner.Invalid("checks", "%s: duplicate id %q", where, ck.ID)
		}
		seen[ck.ID] = true
		if (ck.Tool == "") == (ck.Data == "") {
			return runner.Invalid("checks", "%s: give exactly one of tool or data", where)
		}
		if ck.ExpectError && ck.Tool == "" {
			return runner.Invalid("checks", "%s: expect_error needs tool", where)
		}
		if ck.Predicate == nil {
			return runner.Invalid("checks", "%s.predicate: required", where)
		}
		if err := ck.Predicate.compile(where + ".predicate"); err != nil {
			return runner.Invalid("checks", "%v", err)
		}
		if ck.Extract != nil {
			if err := ck.Extract.compile(where + ".extract"); err != nil {
				return runner.Invalid("checks", "%v", err)
			}
		}
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	id := runner.VerifierIDOrNew(c.VerifierID)
	agg := c.ScoreAggregator.OrDefault()
	if c.PromptID != "" {
		pr, err := rc.PromptResponse(c.PromptID)
		if err != nil {
			rc.SetVerification(id, runner.Verification{Score: 0, Results: []runner.Row{{"id": "missing_prompt",
				"result": false, "score": 0.0, "message": fmt.Sprintf("no response for prompt_id %q: %v", c.PromptID, err)}}})
			return nil
		}
		if pr.ErrorType != "" {
			rc.SetVerification(id, runner.PromptErrorVerification(pr))
			return nil
		}
	}
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return err
	}
	if err := c.waitTriggers(ctx, env); err != nil {
		return err
	}
	if c.FileArtifactID != "" {
		mcpURL, _ := env.Entry["mcp_url"].(string)
		var auth fileAuth
		if tok := gwclient.ControlToken(ctx, rc, env.Entry); tok != "" {
			auth = fileAuth{mcp: "Bearer " + protocol.RoleToken(tok, gwclient.VerifierRole), control: "Bearer " + tok}
		}
		rows, err := c.runFile(ctx, rc, mcpURL, auth)
		if err != nil {
			return err
		}
		rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), Results: rows})
		return nil
	}
	exports := map[string]any{}
	rows := make([]runner.Row, 0, len(c.Checks))
	for i, ck := range c.Checks {
		v, why := c.value(ctx, env, ck, exports)
		row := runner.Row{"id": ck.ID, "criterion_index": i}
		if ck.Criterion != "" {
			row["criterion"] = ck.Criterion
		}
		if ck.Weight != nil {
			row["weight"] = *ck.Weight
		}
		ok := why == "" && ck.Predicate.Eval(v)
		row["result"], row["score"] = ok, b2f(ok)
		switch {
		case why != "":
			row["justification"] = why
		case ok:
			row["justification"] = "predicate holds for " + short(v)
		default:
			row["justification"] = "predicate fails for " + short(v)
		}
		rows = append(rows, row)
	}
	rc.SetVerification(id, runner.Verification{Score: agg.Aggregate(rows), Results: rows})
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func short(v any) string {
	s := asText(v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// value reads a check's value; why is non-empty when it could not.
func (c *Config) value(ctx context.Context, env *gwclient.Env, ck Check, exports map[string]any) (any, string) {
	var data any
	if ck.Tool != "" {
		role := ck.Role
		if role == "" {
			role = gwclient.VerifierRole
		}
		res, err := env.CallTool(ctx, role, ck.Tool, ck.Args)
		var se *gwclient.StatusError
		if ck.ExpectError {
			switch {
			case errors.As(err, &se) && se.Status < 500:
				return se.Body, ""
			case err != nil:
				return nil, fmt.Sprintf("tool %s: %v", ck.Tool, err)
			case res.IsError:
				return res.Text(), ""
			}
			return nil, fmt.Sprintf("tool %s succeeded (as role %s); an error was expected", ck.Tool, role)
		}
		if err != nil {
			return nil, fmt.Sprintf("tool %s: %v", ck.Tool, err)
		}
		if res.IsError {
			return nil, fmt.Sprintf("tool %s returned an error: %s", ck.Tool, res.Text())
		}
		text := res.Text()
		if v, err := decodeJSON([]byte(text)); err == nil {
			data = v
		} else {
			data = text
		}
	} else {
		d, ok := exports[ck.Data]
		if !ok {
			v, err := export(ctx, env, ck.Data)
			if err != nil {
				return nil, err.Error()
			}
			exports[ck.Data], d = v, v
		}
		data = d
	}
	if ck.Extract != nil {
		return ck.Extract.Apply(data), ""
	}
	return data, ""
}

// export reads server's data/get and decodes its first JSON part.
func export(ctx context.Context, env *gwclient.Env, server string) (any, error) {
	known := false
	for _, s := range env.Servers {
		known = known || s == server
	}
	if !known {
		return nil, fmt.Errorf("env %s has no server %q (have: %s)", env.EnvID, server, strings.Join(env.Servers, ", "))
	}
	parts, err := env.Server(server).GetData(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("data/get on %s: %v", server, err)
	}
	for _, p := range parts {
		var raw []byte
		switch {
		case p.Kind == protocol.PartKindData:
			raw = p.Data
		case p.Kind == protocol.PartKindFile && p.File != nil && p.File.Bytes != nil:
			raw = p.File.Bytes
		default:
			continue
		}
		if v, err := decodeJSON(raw); err == nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("data/get on %s returned no JSON part", server)
}

// waitTriggers polls the gateway's /triggers/state until every trigger in
// WaitForTriggers has fired at least once or failed.
func (c *Config) waitTriggers(ctx context.Context, env *gwclient.Env) error {
	if len(c.WaitForTriggers) == 0 {
		return nil
	}
	timeout := 30 * time.Second
	if c.WaitTimeoutSeconds != nil {
		timeout = time.Duration(*c.WaitTimeoutSeconds * float64(time.Second))
	}
	if env.Gateway == nil {
		return &gwclient.NoGatewayError{Step: Type, EnvID: c.EnvID, Need: "wait_for_triggers (trigger states)"}
	}
	deadline := time.Now().Add(timeout)
	for {
		st, err := env.Gateway.TriggersState(ctx)
		if err != nil {
			return fmt.Errorf("env %s: trigger state: %w", c.EnvID, err)
		}
		var waiting []string
		for _, id := range c.WaitForTriggers {
			settled := false
			for _, t := range st.Triggers {
				if t.ID == id && (t.FireCount > 0 || t.Status == "failed") && t.Status != "firing" && t.Status != "queued" {
					settled = true
				}
			}
			if !settled {
				waiting = append(waiting, id)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			// Grade anyway: the checks say what did not happen.
			return nil
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
