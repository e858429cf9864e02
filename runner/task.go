package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Sentinel errors of task validation; every one arrives wrapped in a
// *StepError naming the step and the field.
var (
	ErrInvalidTask        = errors.New("invalid task")
	ErrDuplicateStepID    = errors.New("duplicate step id")
	ErrForwardDependency  = errors.New("depends on a later step")
	ErrUnknownDependency  = errors.New("depends on an unknown step")
	ErrInvalidRetryConfig = errors.New("invalid retry_config")
)

// StepError locates a task problem: which step (list index and id) and
// which field. It unwraps to the cause, so errors.Is works with the
// sentinels above and with ErrUnknownStepType.
type StepError struct {
	Index  int    // 0-based list position, -1 when not about one step
	StepID string // "" when the step has no usable id
	Field  string // JSON field, "" when about the whole step
	Err    error
}

func (e *StepError) Error() string {
	var b strings.Builder
	if e.Index >= 0 {
		fmt.Fprintf(&b, "step %d", e.Index+1)
		if e.StepID != "" {
			fmt.Fprintf(&b, " (id %q)", e.StepID)
		}
	} else {
		b.WriteString("task")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *StepError) Unwrap() error { return e.Err }

// FieldError is what a step config's Validate returns for one field; the
// parser turns it into a *StepError with the field filled in.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

// Is makes a FieldError match ErrInvalidTask.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidTask }

// Required returns the error for a missing required field.
func Required(field string) error { return &FieldError{Field: field, Msg: "is required"} }

// Invalid returns a field error with a message.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// StepRef is one depends_on entry.
type StepRef struct {
	TaskStepID string `json:"task_step_id"`
}

// RetryConfig is a step's retry_config. go_to_step_id is accepted as an
// alias of retry_from_step_id on input.
type RetryConfig struct {
	RetryFromStepID string `json:"retry_from_step_id"`
	MaxRetries      int    `json:"max_retries"`
}

// StepDef is one step as written in a task: the common fields, the
// type-specific fields as given, and the config decoded from them.
type StepDef struct {
	ID              string
	Type            string
	Version         *int
	DependsOn       []StepRef // nil: absent or null; empty: ready at start
	FailTaskOnError bool
	RetryConfig     *RetryConfig
	// Fields holds the type-specific fields exactly as given (seed
	// substitution and re-encoding work on them).
	Fields map[string]json.RawMessage
	// Config is the decoded step (a pointer to the type's config struct).
	Config Step

	info StepInfo
}

// Info is the registration of the step's type.
func (d *StepDef) Info() StepInfo { return d.info }

var commonFields = map[string]bool{
	"id": true, "type": true, "version": true, "depends_on": true,
	"fail_task_on_error": true, "retry_config": true,
}

// MarshalJSON writes id, type, version and fail_task_on_error always,
// depends_on and retry_config only when set, then the type's fields.
func (d *StepDef) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	write := func(k string, v any) error {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(vb)
		return nil
	}
	_ = write("id", d.ID)
	_ = write("type", d.Type)
	_ = write("version", d.Version)
	_ = write("fail_task_on_error", d.FailTaskOnError)
	if d.DependsOn != nil {
		_ = write("depends_on", d.DependsOn)
	}
	if d.RetryConfig != nil {
		_ = write("retry_config", d.RetryConfig)
	}
	keys := make([]string, 0, len(d.Fields))
	for k := range d.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := write(k, d.Fields[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// ParseSteps decodes a task's JSON array of step objects and validates it
// (fields of every step, then the DAG rules of runner.md §3). The first
// problem is returned as a *StepError.
func ParseSteps(reg *StepRegistry, data []byte) ([]*StepDef, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raws []json.RawMessage
	if err := dec.Decode(&raws); err != nil {
		return nil, &StepError{Index: -1, Err: fmt.Errorf("%w: a task is a JSON array of step objects: %v", ErrInvalidTask, err)}
	}
	if dec.More() {
		return nil, &StepError{Index: -1, Err: fmt.Errorf("%w: trailing data after the step array", ErrInvalidTask)}
	}
	if raws == nil {
		return nil, &StepError{Index: -1, Err: fmt.Errorf("%w: a task is a JSON array of step objects, got null", ErrInvalidTask)}
	}
	if len(raws) == 0 {
		return nil, &StepError{Index: -1, Err: fmt.Errorf("%w: a task needs at least one step", ErrInvalidTask)}
	}
	defs := make([]*StepDef, 0, len(raws))
	for i, raw := range raws {
		d, err := parseStep(reg, i, raw)
		if err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	if err := ValidateDAG(defs); err != nil {
		return nil, err
	}
	return defs, nil
}

func parseStep(reg *StepRegistry, i int, raw json.RawMessage) (*StepDef, error) {
	fail := func(id, field string, err error) error {
		return &StepError{Index: i, StepID: id, Field: field, Err: err}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fail("", "", fmt.Errorf("%w: a step must be a JSON object", ErrInvalidTask))
	}
	d := &StepDef{Fields: map[string]json.RawMessage{}}
	if err := decodeString(obj["id"], &d.ID); err != nil || d.ID == "" {
		return nil, fail("", "id", fmt.Errorf("%w: a non-empty string is required", ErrInvalidTask))
	}
	if err := decodeString(obj["type"], &d.Type); err != nil || d.Type == "" {
		return nil, fail(d.ID, "type", fmt.Errorf("%w: a non-empty string is required", ErrInvalidTask))
	}
	info, err := reg.Lookup(d.Type)
	if err != nil {
		return nil, fail(d.ID, "type", err)
	}
	d.info = info
	if v, ok := obj["version"]; ok && !isNull(v) {
		var n int
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fail(d.ID, "version", fmt.Errorf("%w: must be an integer or null", ErrInvalidTask))
		}
		d.Version = &n
	}
	if v, ok := obj["depends_on"]; ok && !isNull(v) {
		if err := strictDecode(v, &d.DependsOn); err != nil {
			return nil, fail(d.ID, "depends_on", fmt.Errorf(`%w: must be a list of {"task_step_id": "<id>"}: %v`, ErrInvalidTask, err))
		}
		if d.DependsOn == nil {
			d.DependsOn = []StepRef{}
		}
		for _, r := range d.DependsOn {
			if r.TaskStepID == "" {
				return nil, fail(d.ID, "depends_on", fmt.Errorf("%w: an entry lacks task_step_id", ErrInvalidTask))
			}
		}
	}
	d.FailTaskOnError = !info.TolerateErrors
	if v, ok := obj["fail_task_on_error"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &d.FailTaskOnError); err != nil {
			return nil, fail(d.ID, "fail_task_on_error", fmt.Errorf("%w: must be a boolean", ErrInvalidTask))
		}
	}
	if info.MustTolerate && d.FailTaskOnError {
		return nil, fail(d.ID, "fail_task_on_error", fmt.Errorf("%w: must be false for %s", ErrInvalidTask, d.Type))
	}
	if v, ok := obj["retry_config"]; ok && !isNull(v) {
		rc, err := parseRetry(v)
		if err != nil {
			return nil, fail(d.ID, "retry_config", err)
		}
		d.RetryConfig = rc
	}
	for k, v := range obj {
		if !commonFields[k] {
			d.Fields[k] = v
		}
	}
	cfg, err := decodeConfig(info, d.Fields)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, fail(d.ID, fe.Field, err)
		}
		return nil, fail(d.ID, "", err)
	}
	d.Config = cfg
	return d, nil
}

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// decodeConfig decodes type-specific fields strictly into a fresh config
// and runs its Validate.
func decodeConfig(info StepInfo, fields map[string]json.RawMessage) (Step, error) {
	cfg := info.New()
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTask, err)
	}
	if err := strictDecode(b, cfg); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return nil, &FieldError{Field: te.Field, Msg: fmt.Sprintf("must be %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)}
		case unknownField.MatchString(err.Error()):
			f := unknownField.FindStringSubmatch(err.Error())[1]
			return nil, &FieldError{Field: f, Msg: fmt.Sprintf("unknown field for step type %s", info.Type)}
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidTask, err)
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "a list"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "a number"
}

func parseRetry(v json.RawMessage) (*RetryConfig, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: must be an object", ErrInvalidRetryConfig)
	}
	rc := &RetryConfig{MaxRetries: 1}
	for k, raw := range m {
		switch k {
		case "retry_from_step_id", "go_to_step_id":
			if err := decodeString(raw, &rc.RetryFromStepID); err != nil {
				return nil, fmt.Errorf("%w: %s must be a string", ErrInvalidRetryConfig, k)
			}
		case "max_retries":
			var n json.Number
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&n); err != nil {
				return nil, fmt.Errorf("%w: max_retries must be an integer", ErrInvalidRetryConfig)
			}
			i, err := n.Int64()
			if err != nil || i < 0 {
				return nil, fmt.Errorf("%w: max_retries must be an integer >= 0", ErrInvalidRetryConfig)
			}
			rc.MaxRetries = int(i)
		default:
			return nil, fmt.Errorf("%w: unknown field %q", ErrInvalidRetryConfig, k)
		}
	}
	if rc.RetryFromStepID == "" {
		return nil, fmt.Errorf("%w: retry_from_step_id is required", ErrInvalidRetryConfig)
	}
	return rc, nil
}

// ValidateDAG checks ids are unique, depends_on names only earlier steps,
// and retry_from_step_id is the step itself or a transitive ancestor.
func ValidateDAG(defs []*StepDef) error {
	pos := map[string]int{}
	for i, d := range defs {
		if j, dup := pos[d.ID]; dup {
			return &StepError{Index: i, StepID: d.ID, Field: "id", Err: fmt.Errorf("%w: also used by step %d", ErrDuplicateStepID, j+1)}
		}
		pos[d.ID] = i
	}
	for i, d := range defs {
		for _, r := range d.DependsOn {
			j, ok := pos[r.TaskStepID]
			switch {
			case !ok:
				return &StepError{Index: i, StepID: d.ID, Field: "depends_on", Err: fmt.Errorf("%w %q", ErrUnknownDependency, r.TaskStepID)}
			case j >= i:
				return &StepError{Index: i, StepID: d.ID, Field: "depends_on", Err: fmt.Errorf("%w %q (step %d); only earlier steps may be named", ErrForwardDependency, r.TaskStepID, j+1)}
			}
		}
	}
	deps := Dependencies(defs)
	for i, d := range defs {
		if d.RetryConfig == nil {
			continue
		}
		from, ok := pos[d.RetryConfig.RetryFromStepID]
		if !ok {
			return &StepError{Index: i, StepID: d.ID, Field: "retry_config", Err: fmt.Errorf("%w: retry_from_step_id %q is not a step of this task", ErrInvalidRetryConfig, d.RetryConfig.RetryFromStepID)}
		}
		if from != i && !ancestor(deps, from, i) {
			return &StepError{Index: i, StepID: d.ID, Field: "retry_config", Err: fmt.Errorf("%w: retry_from_step_id %q is neither this step nor one it depends on", ErrInvalidRetryConfig, d.RetryConfig.RetryFromStepID)}
		}
	}
	return nil
}

// Dependencies returns, per step index, the indexes it waits for: a chain
// when no step has depends_on; otherwise null means every earlier step and
// a list means exactly those.
func Dependencies(defs []*StepDef) [][]int {
	pos := make(map[string]int, len(defs))
	any := false
	for i, d := range defs {
		pos[d.ID] = i
		if d.DependsOn != nil {
			any = true
		}
	}
	out := make([][]int, len(defs))
	for i, d := range defs {
		switch {
		case !any:
			if i > 0 {
				out[i] = []int{i - 1}
			}
		case d.DependsOn == nil:
			out[i] = make([]int, i)
			for j := range i {
				out[i][j] = j
			}
		default:
			seen := map[int]bool{}
			for _, r := range d.DependsOn {
				if j, ok := pos[r.TaskStepID]; ok && j < i && !seen[j] {
					seen[j] = true
					out[i] = append(out[i], j)
				}
			}
			sort.Ints(out[i])
		}
	}
	return out
}

// ancestor reports whether a is a transitive dependency of b.
func ancestor(deps [][]int, a, b int) bool {
	seen := map[int]bool{}
	stack := append([]int{}, deps[b]...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == a {
			return true
		}
		if !seen[n] {
			seen[n] = true
			stack = append(stack, deps[n]...)
		}
	}
	return false
}

func decodeString(raw json.RawMessage, s *string) error {
	if raw == nil {
		return errors.New("missing")
	}
	return json.Unmarshal(raw, s)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}
