package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// InitOptions tunes Init; nil means defaults.
type InitOptions struct {
	// Name is the task file's name (tasks/<Name>.json); "" = the last
	// segment of the task id.
	Name string
}

// Pin is one entity reference Init pinned to a version.
type Pin struct {
	StepID     string
	Field      string // "artifact_id", "artifacts[0]"
	EntityID   string
	Version    int
	Collection string
}

// Unpinned is a reference Init could not pin because the step type has no
// version field for it (env_ids of deploy_agent): it resolves to the latest
// version at run time.
type Unpinned struct {
	StepID, Field, EntityID string
}

// InitResult is what Init wrote.
type InitResult struct {
	Dir      string
	TaskFile string // absolute path of tasks/<name>.json
	Readme   string
	Pins     []Pin
	Unpinned []Unpinned
}

// Init writes task t as an editable bundle folder dir (tasks/<name>.json
// and a README.md): every entity reference a step declares (EntityRefs)
// that has a version field and no version yet is pinned to the version
// that is latest now, so that running the folder later uses exactly what
// the stored task would have used today. docsFor routes an entity id to
// its document store. dir must not exist or be empty; nothing is written
// when a reference does not resolve.
func Init(ctx context.Context, t *runner.Task, docsFor func(id string) registry.DocumentStore, dir string, o *InitOptions) (*InitResult, error) {
	var opts InitOptions
	if o != nil {
		opts = *o
	}
	name := opts.Name
	if name == "" {
		name = taskFileName(t.ID)
	}
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("%w: task file name %q: want a plain file name", ErrInvalid, name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%w: %s exists and is not empty; choose a new folder", ErrInvalid, dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	res := &InitResult{Dir: abs}
	lines := make([][]byte, 0, len(t.Steps))
	for i, d := range t.Steps {
		fields, err := pinStep(ctx, i, d, docsFor, res)
		if err != nil {
			return nil, err
		}
		line, err := editableStep(d, fields)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	var body bytes.Buffer
	body.WriteString("[\n")
	for i, l := range lines {
		body.WriteString("  ")
		body.Write(l)
		if i < len(lines)-1 {
			body.WriteByte(',')
		}
		body.WriteByte('\n')
	}
	body.WriteString("]\n")
	readme := fmt.Sprintf("Task %s version %d, exported with agent-env bundle init.\n\n"+
		"Edit tasks/%s.json, add artifacts/<name>/ folders, then run the folder:\n\n"+
		"    agent-env run %s\n\n"+
		"Entity references are pinned to the versions that were latest when the folder was written.\n",
		t.ID, t.Version, name, abs)
	res.TaskFile = filepath.Join(abs, "tasks", name+".json")
	res.Readme = filepath.Join(abs, "README.md")
	if err := os.MkdirAll(filepath.Dir(res.TaskFile), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(res.TaskFile, body.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(res.Readme, []byte(readme), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// taskFileName is the last id segment with characters a file name (and a
// bundle task name) should not carry replaced by '-'.
func taskFileName(id string) string {
	seg := id[strings.LastIndex(id, "/")+1:]
	var b strings.Builder
	for _, r := range seg {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), ".-")
}

// pinStep returns the step's fields with every versionable reference
// pinned.
func pinStep(ctx context.Context, i int, d *runner.StepDef, docsFor func(string) registry.DocumentStore, res *InitResult) (map[string]json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, len(d.Fields))
	for k, v := range d.Fields {
		fields[k] = v
	}
	refser, ok := d.Config.(runner.EntityRefser)
	if !ok {
		return fields, nil
	}
	latest := func(field, coll, id string) (int, error) {
		doc, err := docsFor(id).Get(ctx, registry.Collection(coll), registry.Ref{ID: id})
		if err != nil {
			return 0, &runner.StepError{Index: i, StepID: d.ID, Field: field, Err: err}
		}
		return doc.Version, nil
	}
	for _, ref := range refser.EntityRefs() {
		raw, ok := fields[ref.Field]
		if !ok || ref.Output {
			continue
		}
		switch {
		case !ref.List:
			var id string
			if json.Unmarshal(raw, &id) != nil || id == "" {
				continue
			}
			if ref.VersionField == "" {
				res.Unpinned = append(res.Unpinned, Unpinned{StepID: d.ID, Field: ref.Field, EntityID: id})
				continue
			}
			if v, ok := fields[ref.VersionField]; ok && string(v) != "null" {
				continue // already pinned
			}
			v, err := latest(ref.Field, ref.Collection, id)
			if err != nil {
				return nil, err
			}
			fields[ref.VersionField], _ = json.Marshal(v)
			res.Pins = append(res.Pins, Pin{StepID: d.ID, Field: ref.Field, EntityID: id, Version: v, Collection: ref.Collection})
		default:
			var list []any
			if json.Unmarshal(raw, &list) != nil {
				continue
			}
			changed := false
			for j, e := range list {
				field := fmt.Sprintf("%s[%d]", ref.Field, j)
				switch v := e.(type) {
				case string:
					res.Unpinned = append(res.Unpinned, Unpinned{StepID: d.ID, Field: field, EntityID: v})
				case map[string]any:
					id, _ := v[ref.ListKey].(string)
					if id == "" || ref.ListKey == "" {
						continue
					}
					if ref.VersionField == "" {
						res.Unpinned = append(res.Unpinned, Unpinned{StepID: d.ID, Field: field, EntityID: id})
						continue
					}
					if cur, ok := v[ref.VersionField]; ok && cur != nil {
						continue
					}
					ver, err := latest(field, ref.Collection, id)
					if err != nil {
						return nil, err
					}
					v[ref.VersionField] = ver
					changed = true
					res.Pins = append(res.Pins, Pin{StepID: d.ID, Field: field, EntityID: id, Version: ver, Collection: ref.Collection})
				}
			}
			if changed {
				b, err := json.Marshal(list)
				if err != nil {
					return nil, err
				}
				fields[ref.Field] = b
			}
		}
	}
	return fields, nil
}

// editableStep renders one step on one line for a person to edit: id and
// type first, the common fields only when they differ from their default
// (version is set by the store and left out), then the type's fields in
// name order.
func editableStep(d *runner.StepDef, fields map[string]json.RawMessage) ([]byte, error) {
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
			return fmt.Errorf("step %q: field %q: %w", d.ID, k, err)
		}
		buf.Write(vb)
		return nil
	}
	_ = write("id", d.ID)
	_ = write("type", d.Type)
	if d.DependsOn != nil {
		_ = write("depends_on", d.DependsOn)
	}
	if d.FailTaskOnError == d.Info().TolerateErrors {
		_ = write("fail_task_on_error", d.FailTaskOnError)
	}
	if d.RetryConfig != nil {
		_ = write("retry_config", d.RetryConfig)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := write(k, fields[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
