package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentenv/agentenv/registry"
)

// EntityIDs returns the ids (and pinned versions, 0 = latest) that the
// step's fields give for ref, in the order written. Values of the wrong
// shape are skipped: parsing has already reported them.
func (d *StepDef) EntityIDs(ref EntityRef) []registry.Ref {
	raw, ok := d.Fields[ref.Field]
	if !ok {
		return nil
	}
	if !ref.List {
		var id string
		if json.Unmarshal(raw, &id) != nil || id == "" {
			return nil
		}
		r := registry.Ref{ID: id}
		if v, ok := d.Fields[ref.VersionField]; ok && ref.VersionField != "" {
			_ = json.Unmarshal(v, &r.Version)
		}
		return []registry.Ref{r}
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []registry.Ref
	for _, e := range list {
		var id string
		if json.Unmarshal(e, &id) == nil {
			if id != "" {
				out = append(out, registry.Ref{ID: id})
			}
			continue
		}
		var m map[string]json.RawMessage
		if ref.ListKey == "" || json.Unmarshal(e, &m) != nil || json.Unmarshal(m[ref.ListKey], &id) != nil || id == "" {
			continue
		}
		r := registry.Ref{ID: id}
		if v, ok := m[ref.VersionField]; ok && ref.VersionField != "" {
			_ = json.Unmarshal(v, &r.Version)
		}
		out = append(out, r)
	}
	return out
}

// artifactPreflight checks that every artifact a step's declared entity
// references name is stored, so a missing one is found before anything
// is deployed whatever the step type.
func artifactPreflight(ctx context.Context, d *StepDef, s *Services) []error {
	refser, ok := d.Config.(EntityRefser)
	if !ok || s == nil || s.Documents == nil {
		return nil
	}
	var errs []error
	for _, ref := range refser.EntityRefs() {
		if ref.Collection != string(registry.Artifacts) || ref.Output {
			continue
		}
		for _, id := range d.EntityIDs(ref) {
			if _, err := s.Documents.Get(ctx, registry.Artifacts, id); err != nil {
				errs = append(errs, &FieldError{Field: ref.Field, Msg: err.Error()})
			}
		}
	}
	return errs
}

// preflightProblem places a preflight problem on its step, and on its
// field when the problem is a *FieldError.
func preflightProblem(i int, d *StepDef, err error) *StepError {
	if fe, ok := err.(*FieldError); ok {
		return &StepError{Index: i, StepID: d.ID, Field: fe.Field, Err: fmt.Errorf("%s", fe.Msg)}
	}
	return &StepError{Index: i, StepID: d.ID, Err: err}
}

// EnvRef declares a field naming an env (for most steps, one deployed
// earlier in the run under that env id).
func EnvRef(field string) EntityRef {
	return EntityRef{Field: field, Collection: string(registry.Envs)}
}

// ArtifactRef declares a field naming a stored artifact, with the field
// that pins its version ("" when none).
func ArtifactRef(field, versionField string) EntityRef {
	return EntityRef{Field: field, Collection: string(registry.Artifacts), VersionField: versionField}
}
