package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentenv/agentenv/runner"
)

// StepInfos returns a runner.StepInfo for every step type in d (the
// plugin's description): its steps validate through the schema and
// step/validate, and run through step/run.
func (p *Plugin) StepInfos(d *Description) ([]runner.StepInfo, error) {
	var out []runner.StepInfo
	for _, st := range d.Steps {
		var schema *jsonschema.Resolved
		if len(st.Schema) > 0 {
			s, err := compileSchema(st.Schema)
			if err != nil {
				return nil, &Error{Plugin: p.spec.Name, Err: fmt.Errorf("step type %s: schema: %w", st.Type, err)}
			}
			schema = s
		}
		out = append(out, runner.StepInfo{
			Type:           st.Type,
			TolerateErrors: st.TolerateErrors,
			New: func() runner.Step {
				return &stepConfig{p: p, typ: st.Type, schema: schema, noContext: st.Context == ContextNone,
					fields: map[string]json.RawMessage{}}
			},
		})
	}
	return out, nil
}

// stepConfig is the config of a plugin step: the step's fields kept as
// given (the runner decodes them one at a time into it), checked by the
// plugin rather than by a Go struct.
type stepConfig struct {
	p      *Plugin
	typ    string
	schema *jsonschema.Resolved
	// noContext: the type asked for no copy of the run context.
	noContext bool
	fields    map[string]json.RawMessage
}

var (
	_ runner.Step      = (*stepConfig)(nil)
	_ runner.Validator = (*stepConfig)(nil)
	_ json.Marshaler   = (*stepConfig)(nil)
)

// UnmarshalJSON adds the fields of an object to the config.
func (c *stepConfig) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if c.fields == nil {
		c.fields = map[string]json.RawMessage{}
	}
	maps.Copy(c.fields, m)
	return nil
}

// MarshalJSON writes the fields as given.
func (c *stepConfig) MarshalJSON() ([]byte, error) { return json.Marshal(c.fields) }

// Validate checks the fields against the step type's schema, then asks
// the plugin (step/validate). A plugin that does not implement
// step/validate accepts every step its schema accepts.
func (c *stepConfig) Validate() error {
	if c.schema != nil {
		inst := map[string]any{}
		for k, v := range c.fields {
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return runner.Invalid(k, "is not valid JSON")
			}
			inst[k] = x
		}
		if err := c.schema.Validate(inst); err != nil {
			return &runner.FieldError{Msg: fmt.Sprintf("does not match the schema of step type %s (plugin %s): %v", c.typ, c.p.spec.Name, err)}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.p.spec.Timeout, c.p.opts.StartTimeout))
	defer cancel()
	var res ValidateResult
	err := c.p.Call(ctx, MethodStepValidate, ValidateParams{Type: c.typ, Fields: c.fields}, &res)
	switch {
	case errMethodNotFound(err):
		return nil
	case err != nil:
		return &runner.FieldError{Msg: fmt.Sprintf("could not be checked: %v", err)}
	}
	var errs []error
	for _, pr := range res.Problems {
		msg := pr.Message
		if msg == "" {
			msg = "is invalid"
		}
		errs = append(errs, &runner.FieldError{Field: pr.Field, Msg: msg})
	}
	return errors.Join(errs...)
}

// Run sends the step to the plugin and applies the context operations it
// returns, all or none. The context goes whole, or as a delta to a
// plugin that keeps its copy (delta.go); a plugin that lost its copy
// answers CodeContextResync and is sent the whole context once more.
func (c *stepConfig) Run(ctx context.Context, rc *runner.RunContext) error {
	token := runner.RandomHex(8)
	c.p.tokens.Store(token, rc.Logger().With("plugin", c.p.spec.Name))
	defer c.p.tokens.Delete(token)
	base := RunParams{Type: c.typ, StepID: rc.StepID(), Fields: c.fields, Seed: rc.Seed(), Token: token}
	var res RunResult
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var delta *proc // the process sent a delta, if one was
		build := func(pr *proc) (any, func(bool), error) {
			params := base
			switch {
			case c.noContext:
				params.Context = map[string]any{}
			case !pr.deltas:
				params.Context = rc.SafeSnapshot()
			default:
				pr.ctx.mu.Lock()
				if err := pr.ctx.contextFor(&params, rc.SafeSnapshot()); err != nil {
					pr.ctx.forget()
					pr.ctx.mu.Unlock()
					return nil, nil, err
				}
				if params.ContextDelta != nil {
					delta = pr
				}
				return params, func(ok bool) {
					if !ok {
						pr.ctx.forget()
					}
					pr.ctx.mu.Unlock()
				}, nil
			}
			return params, nil, nil
		}
		var pr *proc
		if pr, err = c.p.process(ctx); err != nil {
			return err
		}
		res = RunResult{}
		err = c.p.callWith(ctx, pr, MethodStepRun, build, &res)
		if delta == nil || !remoteCode(err, CodeContextResync) {
			break
		}
		delta.ctx.mu.Lock()
		delta.ctx.forget()
		delta.ctx.mu.Unlock()
		c.p.log.Debug("plugin lost its copy of the run context; sending it whole", "step_id", rc.StepID())
	}
	if err != nil {
		return err
	}
	if err := applyOps(rc, rc.StepID(), res.Ops); err != nil {
		return &Error{Plugin: c.p.spec.Name, Method: MethodStepRun, Err: err}
	}
	return nil
}
