package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// ErrSelfDependency is a step naming itself in depends_on.
var ErrSelfDependency = errors.New("depends on itself")

// TaskError holds every problem found in a task, in file order, so a
// file is fixed in one edit rather than one error per attempt. Each
// problem is a *StepError; errors.Is and errors.As see all of them.
type TaskError struct {
	Problems []*StepError
}

func newTaskError(probs []*StepError) error {
	if len(probs) == 0 {
		return nil
	}
	return &TaskError{Problems: probs}
}

// UnknownTypes lists the unknown step types named in the task, sorted and
// without repeats.
func (e *TaskError) UnknownTypes() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range e.Problems {
		var ut *UnknownStepTypeError
		if errors.As(p, &ut) && !seen[ut.Type] {
			seen[ut.Type] = true
			out = append(out, ut.Type)
		}
	}
	sort.Strings(out)
	return out
}

// Lines is the report, one line per problem, then a hint when step types
// are unknown (they usually come from a plugin that is not installed).
func (e *TaskError) Lines() []string {
	out := make([]string, 0, len(e.Problems)+1)
	for _, p := range e.Problems {
		out = append(out, p.Error())
	}
	if ut := e.UnknownTypes(); len(ut) > 0 {
		out = append(out, fmt.Sprintf("unknown step types: %s; a plugin may provide them (agent-env plugin list shows the installed step types)",
			strings.Join(ut, ", ")))
	}
	return out
}

func (e *TaskError) Error() string {
	lines := e.Lines()
	if len(e.Problems) == 1 {
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("%d problems in the task:\n  %s", len(e.Problems), strings.Join(lines, "\n  "))
}

// Unwrap gives errors.Is and errors.As every problem.
func (e *TaskError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// syntaxProblem describes a JSON syntax error with its line and column.
func syntaxProblem(data []byte, err error) error {
	var se *json.SyntaxError
	off := int64(len(data))
	msg := "the JSON ends early"
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte; the column is that byte's.
		off, msg = max(se.Offset-1, 0), se.Error()
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
	default:
		msg = plainJSONError(err)
	}
	line, col := lineCol(data, off)
	return invalidf("JSON syntax error at line %d, column %d: %s", line, col, msg)
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// jsonKindOf names the JSON kind of a raw value in words.
func jsonKindOf(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// valueWords turns encoding/json's UnmarshalTypeError.Value ("string",
// "number -1", "array") into words.
func valueWords(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "bool":
		return "a boolean"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return v
}

// goTypeWords names what a Go type accepts in JSON terms, from its
// printed name ("[]string", "map[string]any", "*int", "loadartifact.ArtifactRef").
func goTypeWords(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"), t == "json.Number":
		return "a number"
	}
	return "an object"
}

// kindWords names what a Go type accepts in JSON terms.
func kindWords(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

var goTypeInMessage = regexp.MustCompile(`json: cannot unmarshal (.+?) into Go (?:struct field (\S+) of type|value of type) (\S+)`)

// plainJSONError rewrites an encoding/json message that names Go types
// into words; a task author never sees a Go type name.
func plainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		return fmt.Sprintf("must be %s, got %s", kindWords(te.Type), valueWords(te.Value))
	}
	msg := err.Error()
	return goTypeInMessage.ReplaceAllStringFunc(msg, func(m string) string {
		sub := goTypeInMessage.FindStringSubmatch(m)
		return fmt.Sprintf("must be %s, got %s", goTypeWords(sub[3]), valueWords(sub[1]))
	})
}

// invalidf is a task problem that matches ErrInvalidTask without saying
// so in its text.
func invalidf(format string, a ...any) error {
	return &FieldError{Msg: fmt.Sprintf(format, a...)}
}
