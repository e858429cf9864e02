package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/internal/decodeerr"
	"github.com/agentenv/agentenv/internal/didyoumean"
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
		var known []string
		for _, p := range e.Problems {
			var u *UnknownStepTypeError
			if errors.As(p, &u) {
				known = u.Known
				break
			}
		}
		out = append(out, fmt.Sprintf("unknown step types: %s; a plugin may provide them (agent-env plugin list shows the installed step types)%s",
			strings.Join(ut, ", "), didyoumean.Known(known)))
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
	return invalidf("%s", decodeerr.JSON(data, err))
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) { return decodeerr.LineCol(data, off) }

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

// plainJSONError rewrites an encoding/json message that names Go types
// into words; a task author never sees a Go type name.
func plainJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		return fmt.Sprintf("must be %s, got %s", decodeerr.KindWords(te.Type), decodeerr.ValueWords(te.Value))
	}
	return decodeerr.Words(err.Error())
}

// invalidf is a task problem that matches ErrInvalidTask without saying
// so in its text.
func invalidf(format string, a ...any) error {
	return &FieldError{Msg: fmt.Sprintf(format, a...)}
}
