package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/agentenv/agentenv/internal/decodeerr"
	"github.com/agentenv/agentenv/internal/didyoumean"
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

// StepRef is one depends_on entry. The reference writes it as
// {"task_step_id": "<id>"}; task files also give a bare step id. Bare
// keeps the form an entry was written in, so a stored task reads back as
// it was written.
type StepRef struct {
	TaskStepID string
	Bare       bool
}

// MarshalJSON writes the entry in the form it was read in.
func (r StepRef) MarshalJSON() ([]byte, error) {
	if r.Bare {
		return json.Marshal(r.TaskStepID)
	}
	return json.Marshal(map[string]string{"task_step_id": r.TaskStepID})
}

// UnmarshalJSON reads either form; its errors say what was expected in
// words.
func (r *StepRef) UnmarshalJSON(b []byte) error {
	ref, msg := parseStepRef(b)
	if msg != "" {
		return errors.New(msg)
	}
	*r = ref
	return nil
}

const stepRefForms = `a step id ("deploy") or {"task_step_id": "deploy"}`

// parseStepRef reads one depends_on entry; msg says what is wrong.
func parseStepRef(raw json.RawMessage) (StepRef, string) {
	switch jsonKindOf(raw) {
	case "a string":
		var id string
		_ = json.Unmarshal(raw, &id)
		if id == "" {
			return StepRef{}, "is an empty step id"
		}
		return StepRef{TaskStepID: id, Bare: true}, ""
	case "an object":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return StepRef{}, "must be " + stepRefForms
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			if k != "task_step_id" {
				keys = append(keys, strconv.Quote(k))
			}
		}
		if len(keys) > 0 {
			sort.Strings(keys)
			return StepRef{}, fmt.Sprintf("has unknown key %s; an entry is %s", strings.Join(keys, ", "), stepRefForms)
		}
		v, ok := m["task_step_id"]
		if !ok {
			return StepRef{}, "lacks task_step_id; an entry is " + stepRefForms
		}
		var id string
		if jsonKindOf(v) != "a string" || json.Unmarshal(v, &id) != nil || id == "" {
			return StepRef{}, fmt.Sprintf("task_step_id must be a non-empty string, got %s", jsonKindOf(v))
		}
		return StepRef{TaskStepID: id}, ""
	}
	return StepRef{}, fmt.Sprintf("must be %s, got %s", stepRefForms, jsonKindOf(raw))
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
// (fields of every step, then the DAG rules of). Every
// problem found is reported, as a *TaskError holding one *StepError per
// problem.
func ParseSteps(reg *StepRegistry, data []byte) ([]*StepDef, error) {
	taskErr := func(err error) error { return &TaskError{Problems: []*StepError{{Index: -1, Err: err}}} }
	var whole json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&whole); err != nil {
		return nil, taskErr(syntaxProblem(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(data, dec.InputOffset())
		return nil, taskErr(invalidf("trailing data after the step array at line %d, column %d", line, col))
	}
	if k := jsonKindOf(whole); k != "a list" {
		return nil, taskErr(invalidf("a task is a JSON array of step objects, got %s", k))
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(whole, &raws); err != nil {
		return nil, taskErr(invalidf("%s", plainJSONError(err)))
	}
	if len(raws) == 0 {
		return nil, taskErr(invalidf("a task needs at least one step"))
	}
	defs := make([]*StepDef, 0, len(raws))
	var probs []*StepError
	for i, raw := range raws {
		d, errs := parseStep(reg, i, raw)
		probs = append(probs, errs...)
		if d == nil {
			d = &StepDef{}
		}
		defs = append(defs, d)
	}
	probs = append(probs, dagProblems(defs)...)
	sort.SliceStable(probs, func(a, b int) bool { return probs[a].Index < probs[b].Index })
	if len(probs) > 0 {
		return nil, &TaskError{Problems: probs}
	}
	return defs, nil
}

// parseStep decodes one step; it returns the step as far as it could be
// read (nil when it is not an object) and every problem found in it.
func parseStep(reg *StepRegistry, i int, raw json.RawMessage) (*StepDef, []*StepError) {
	var probs []*StepError
	d := &StepDef{Fields: map[string]json.RawMessage{}}
	fail := func(field string, err error) {
		probs = append(probs, &StepError{Index: i, StepID: d.ID, Field: field, Err: err})
	}
	var obj map[string]json.RawMessage
	if k := jsonKindOf(raw); k != "an object" || json.Unmarshal(raw, &obj) != nil {
		fail("", invalidf("a step must be a JSON object, got %s", k))
		return nil, probs
	}
	if v, ok := obj["id"]; !ok {
		fail("id", invalidf("is required (a non-empty string)"))
	} else if err := decodeString(v, &d.ID); err != nil || d.ID == "" {
		d.ID = ""
		fail("id", invalidf("must be a non-empty string, got %s", describe(v)))
	}
	var info StepInfo
	known := false
	if v, ok := obj["type"]; !ok {
		fail("type", invalidf("is required (a step type such as deploy_sandbox)"))
	} else if err := decodeString(v, &d.Type); err != nil || d.Type == "" {
		fail("type", invalidf("must be a non-empty string, got %s", describe(v)))
	} else if info, err = reg.Lookup(d.Type); err != nil {
		fail("type", err)
	} else {
		known = true
		d.info = info
	}
	if v, ok := obj["version"]; ok && !isNull(v) {
		var n int
		if jsonKindOf(v) != "a number" || json.Unmarshal(v, &n) != nil {
			fail("version", invalidf("must be an integer or null, got %s", describe(v)))
		} else {
			d.Version = &n
		}
	}
	if v, ok := obj["depends_on"]; ok && !isNull(v) {
		var entries []json.RawMessage
		if jsonKindOf(v) != "a list" || json.Unmarshal(v, &entries) != nil {
			fail("depends_on", invalidf(`must be a list of step ids ("deploy") or {"task_step_id": "deploy"} objects, got %s`, jsonKindOf(v)))
		} else {
			d.DependsOn = []StepRef{}
			for j, e := range entries {
				ref, msg := parseStepRef(e)
				if msg != "" {
					fail(fmt.Sprintf("depends_on[%d]", j), invalidf("%s", msg))
					continue
				}
				d.DependsOn = append(d.DependsOn, ref)
			}
		}
	}
	d.FailTaskOnError = !info.TolerateErrors
	if v, ok := obj["fail_task_on_error"]; ok && !isNull(v) {
		if jsonKindOf(v) != "a boolean" || json.Unmarshal(v, &d.FailTaskOnError) != nil {
			fail("fail_task_on_error", invalidf("must be true or false, got %s", describe(v)))
		}
	}
	if known && info.MustTolerate && d.FailTaskOnError {
		fail("fail_task_on_error", invalidf("must be false for %s", d.Type))
	}
	if v, ok := obj["retry_config"]; ok && !isNull(v) {
		rc, err := parseRetry(v)
		if err != nil {
			fail("retry_config", err)
		}
		d.RetryConfig = rc
	}
	for k, v := range obj {
		if !commonFields[k] {
			d.Fields[k] = v
		}
	}
	if !known {
		return d, probs
	}
	cfg, errs := decodeConfig(info, d.Fields)
	for _, err := range errs {
		var fe *FieldError
		if errors.As(err, &fe) {
			fail(fe.Field, err)
		} else {
			fail("", err)
		}
	}
	if len(errs) == 0 {
		d.Config = cfg
	}
	return d, probs
}

// describe is a raw JSON value for a message: short values verbatim,
// long ones by kind.
func describe(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) <= 40 && jsonKindOf(raw) != "an object" && jsonKindOf(raw) != "a list" {
		return jsonKindOf(raw) + " (" + s + ")"
	}
	return jsonKindOf(raw)
}

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// decodeConfig decodes the type-specific fields into a fresh config one
// field at a time, so every bad field is reported, then runs Validate
// (a Validate error made with errors.Join reports each of its parts).
func decodeConfig(info StepInfo, fields map[string]json.RawMessage) (Step, []error) {
	cfg := info.New()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		b, err := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		if err != nil {
			errs = append(errs, &FieldError{Field: k, Msg: "is not valid JSON"})
			continue
		}
		if err := strictDecode(b, cfg); err != nil {
			errs = append(errs, fieldDecodeError(info, k, err))
		}
	}
	// Validate runs even after a field failed to decode, so a missing
	// required field is reported too; what it says about a field already
	// reported is dropped.
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			verrs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				verrs = j.Unwrap()
			}
			for _, ve := range verrs {
				if !reported(errs, ve) {
					errs = append(errs, ve)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// reported tells whether err is about a field errs already name.
func reported(errs []error, err error) bool {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return false
	}
	for _, e := range errs {
		var have *FieldError
		if errors.As(e, &have) && (have.Field == fe.Field || strings.HasPrefix(have.Field, fe.Field+".")) {
			return true
		}
	}
	return false
}

// fieldDecodeError words a decode error of field k.
func fieldDecodeError(info StepInfo, k string, err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Type != nil:
		field := k
		if te.Field != "" {
			field = te.Field
		}
		return &FieldError{Field: field, Msg: fmt.Sprintf("must be %s, got %s", decodeerr.KindWords(te.Type), decodeerr.ValueWords(te.Value))}
	case unknownField.MatchString(err.Error()):
		if f := unknownField.FindStringSubmatch(err.Error())[1]; f != k {
			return &FieldError{Field: k, Msg: fmt.Sprintf("has no field %q", f)} // an object inside k
		}
		return &FieldError{Field: k, Msg: fmt.Sprintf("is not a field of step type %s", info.Type) + didyoumean.Suffix(k, stepFields(info))}
	}
	return &FieldError{Field: k, Msg: plainJSONError(err)}
}

// stepFields lists the fields a step of info's type accepts: the common
// ones and the JSON names of its config struct (embedded structs included).
func stepFields(info StepInfo) []string {
	out := make([]string, 0, len(commonFields))
	for k := range commonFields {
		out = append(out, k)
	}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case f.Anonymous && name == "":
				walk(f.Type)
			case !f.IsExported():
			case name != "":
				out = append(out, name)
			default:
				out = append(out, f.Name)
			}
		}
	}
	walk(reflect.TypeOf(info.New()))
	return out
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

// ValidateDAG checks ids are unique, depends_on names only earlier steps
// (never the step itself), and retry_from_step_id is the step itself or a
// transitive ancestor. Every problem is reported in one *TaskError.
func ValidateDAG(defs []*StepDef) error { return newTaskError(dagProblems(defs)) }

func dagProblems(defs []*StepDef) []*StepError {
	var probs []*StepError
	add := func(i int, field string, err error) {
		probs = append(probs, &StepError{Index: i, StepID: defs[i].ID, Field: field, Err: err})
	}
	pos := map[string]int{}
	for i, d := range defs {
		if d.ID == "" {
			continue
		}
		if j, dup := pos[d.ID]; dup {
			add(i, "id", fmt.Errorf("%w: also used by step %d", ErrDuplicateStepID, j+1))
			continue
		}
		pos[d.ID] = i
	}
	for i, d := range defs {
		for k, r := range d.DependsOn {
			field := fmt.Sprintf("depends_on[%d]", k)
			j, ok := pos[r.TaskStepID]
			switch {
			case r.TaskStepID == d.ID:
				add(i, field, fmt.Errorf("%w: a step cannot wait for itself", ErrSelfDependency))
			case !ok:
				add(i, field, fmt.Errorf("%w %q", ErrUnknownDependency, r.TaskStepID))
			case j > i:
				add(i, field, fmt.Errorf("%w %q (step %d); only earlier steps may be named", ErrForwardDependency, r.TaskStepID, j+1))
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
			add(i, "retry_config", fmt.Errorf("%w: retry_from_step_id %q is not a step of this task", ErrInvalidRetryConfig, d.RetryConfig.RetryFromStepID))
			continue
		}
		if from != i && !ancestor(deps, from, i) {
			add(i, "retry_config", fmt.Errorf("%w: retry_from_step_id %q is neither this step nor one it depends on", ErrInvalidRetryConfig, d.RetryConfig.RetryFromStepID))
		}
	}
	return probs
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
