package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentenv/agentenv/internal/decodeerr"
	"github.com/agentenv/agentenv/registry"
)

// ErrInvalid is matched by every malformed-eval error.
var ErrInvalid = errors.New("invalid eval")

// TaskRef is one task of an eval; TaskVersion 0 means the latest.
type TaskRef struct {
	TaskID      string `json:"task_id"`
	TaskVersion int    `json:"task_version,omitempty"`
}

// Ref is the registry reference of the task.
func (t TaskRef) Ref() registry.Ref { return registry.Ref{ID: t.TaskID, Version: t.TaskVersion} }

// String is "id" or "id:version".
func (t TaskRef) String() string {
	if t.TaskVersion > 0 {
		return fmt.Sprintf("%s:%d", t.TaskID, t.TaskVersion)
	}
	return t.TaskID
}

// Eval is one stored version of an eval.
type Eval struct {
	ID      string    `json:"id"`
	Version int       `json:"version"`
	Type    string    `json:"type"`
	Tasks   []TaskRef `json:"tasks"`
}

// invalid names the file and the field of a malformed eval.
func invalid(file, field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s: %s", ErrInvalid, file, field, fmt.Sprintf(format, args...))
}

// ParseJSON parses the file of `eval create`: a JSON list of
// {"task_id": ..., "version": ...} objects ("version" optional; unknown
// keys refused). file names the input in errors.
func ParseJSON(file string, data []byte) ([]TaskRef, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, invalid(file, "(top level)", "a JSON list of {\"task_id\": ..., \"version\": ...} objects: %s", decodeerr.JSON(data, err))
	}
	refs := make([]TaskRef, 0, len(raw))
	for i, r := range raw {
		var e struct {
			TaskID  *string `json:"task_id"`
			Version *int    `json:"version"`
		}
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		field := fmt.Sprintf("[%d]", i)
		if err := dec.Decode(&e); err != nil {
			return nil, invalid(file, field, "an object with task_id and an optional version: %s", decodeerr.JSON(nil, err))
		}
		ref, err := taskRef(file, field, e.TaskID, e.Version)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, CheckList(file, "", refs)
}

func taskRef(file, field string, id *string, version *int) (TaskRef, error) {
	if id == nil || strings.TrimSpace(*id) == "" {
		return TaskRef{}, invalid(file, field+".task_id", "required")
	}
	if err := registry.ValidateID(*id); err != nil {
		return TaskRef{}, invalid(file, field+".task_id", "%v", err)
	}
	ref := TaskRef{TaskID: *id}
	if version != nil {
		if *version < 1 {
			return TaskRef{}, invalid(file, field+".version", "a version is 1 or more, got %d", *version)
		}
		ref.TaskVersion = *version
	}
	return ref, nil
}

// BundleEval is a bundle's evals/<name>.toml.
type BundleEval struct {
	Tasks []TaskRef // task ids as written: bare names are the bundle's tasks
	Type  string    // optional
	ID    string    // optional id override
}

// ParseTOML parses a bundle's evals/<name>.toml:
//
//	tasks = ["hello", {task = "other", version = 3}]
//	type = "eval"   # optional
//	id = "..."      # optional
func ParseTOML(file string, data []byte) (*BundleEval, error) {
	var doc struct {
		Tasks []any  `toml:"tasks"`
		Type  string `toml:"type"`
		ID    string `toml:"id"`
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) {
			return nil, invalid(file, "(top level)", "unknown key(s): %s (known: tasks, type, id)", strings.Join(missingKeys(sm), ", "))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, invalid(file, "(top level)", "line %d, column %d: %s", row, col, decodeerr.TOML(de))
		}
		return nil, invalid(file, "(top level)", "%s", decodeerr.TOML(err))
	}
	if doc.Tasks == nil {
		return nil, invalid(file, "tasks", "required: tasks = [\"name\", {task = \"name\", version = 2}, ...]")
	}
	be := &BundleEval{Type: doc.Type, ID: doc.ID}
	for i, e := range doc.Tasks {
		field := fmt.Sprintf("tasks[%d]", i)
		switch v := e.(type) {
		case string:
			ref, err := taskRef(file, field, &v, nil)
			if err != nil {
				return nil, err
			}
			be.Tasks = append(be.Tasks, ref)
		case map[string]any:
			var id *string
			var version *int
			for k, x := range v {
				switch k {
				case "task":
					s, ok := x.(string)
					if !ok {
						return nil, invalid(file, field+".task", "a string, got %T", x)
					}
					id = &s
				case "version":
					n, ok := x.(int64)
					if !ok {
						return nil, invalid(file, field+".version", "an integer, got %T", x)
					}
					iv := int(n)
					version = &iv
				default:
					return nil, invalid(file, field+"."+k, "unknown key (known: task, version)")
				}
			}
			ref, err := taskRef(file, field, id, version)
			if err != nil {
				return nil, err
			}
			be.Tasks = append(be.Tasks, ref)
		default:
			return nil, invalid(file, field, "a task name or {task = \"name\", version = N}, got %T", e)
		}
	}
	return be, CheckList(file, "tasks", be.Tasks)
}

func missingKeys(sm *toml.StrictMissingError) []string {
	var out []string
	for _, e := range sm.Errors {
		out = append(out, strings.Join(e.Key(), "."))
	}
	return out
}

// CheckList refuses an empty eval and a task listed twice (by id, whatever
// the versions). list names the list in errors: "tasks" in a bundle's
// TOML, "" for the top-level list of an `eval create` file.
func CheckList(file, list string, refs []TaskRef) error {
	if len(refs) == 0 {
		where := list
		if where == "" {
			where = "(top level)"
		}
		return invalid(file, where, "an eval lists at least one task")
	}
	seen := map[string]int{}
	for i, r := range refs {
		if j, ok := seen[r.TaskID]; ok {
			return invalid(file, fmt.Sprintf("%s[%d]", list, i), "task %q is listed twice (also %s[%d]); list each task once", r.TaskID, list, j)
		}
		seen[r.TaskID] = i
	}
	return nil
}

// CheckTasks reports the first task of refs that docsFor's store does not
// hold, naming the file and the entry (list as for CheckList).
func CheckTasks(ctx context.Context, docsFor func(id string) registry.DocumentStore, file, list string, refs []TaskRef) error {
	for i, r := range refs {
		if _, err := docsFor(r.TaskID).Get(ctx, registry.Tasks, r.Ref()); err != nil {
			if errors.Is(err, registry.ErrNotFound) {
				return invalid(file, fmt.Sprintf("%s[%d].task_id", list, i), "unknown task %s: %v", r, err)
			}
			return fmt.Errorf("%s: %s[%d]: %w", file, list, i, err)
		}
	}
	return nil
}

// Create checks refs, the top-level list of file (listed once, every task
// known), and stores them as a new version of eval id. Nothing is stored
// when a check fails.
func Create(ctx context.Context, docs registry.DocumentStore, docsFor func(id string) registry.DocumentStore, id, file string, refs []TaskRef) (*Eval, error) {
	if err := registry.ValidateID(id); err != nil {
		return nil, fmt.Errorf("%w: --id: %v", ErrInvalid, err)
	}
	if err := CheckList(file, "", refs); err != nil {
		return nil, err
	}
	if err := CheckTasks(ctx, docsFor, file, "", refs); err != nil {
		return nil, err
	}
	return Put(ctx, docs, id, "eval", refs)
}

// Put stores refs as a new version of eval id, unchecked.
func Put(ctx context.Context, docs registry.DocumentStore, id, typ string, refs []TaskRef) (*Eval, error) {
	if typ == "" {
		typ = "eval"
	}
	body, err := json.Marshal(map[string]any{"type": typ, "tasks": refs})
	if err != nil {
		return nil, err
	}
	doc, err := docs.Put(ctx, registry.Evals, id, body, nil)
	if err != nil {
		return nil, err
	}
	return decode(doc)
}

// Load reads one version of an eval (0 = latest).
func Load(ctx context.Context, docs registry.DocumentStore, ref registry.Ref) (*Eval, error) {
	doc, err := docs.Get(ctx, registry.Evals, ref)
	if err != nil {
		return nil, err
	}
	return decode(doc)
}

func decode(doc registry.Document) (*Eval, error) {
	var e Eval
	if err := doc.Decode(&e); err != nil {
		return nil, fmt.Errorf("eval %s version %d: %w", doc.ID, doc.Version, err)
	}
	e.ID, e.Version = doc.ID, doc.Version
	return &e, nil
}
