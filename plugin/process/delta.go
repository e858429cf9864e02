package process

import (
	"encoding/json"
	"sync"

	"github.com/agentenv/agentenv/runner"
)

// OpDelete removes the key at a path; it only appears in a ContextDelta.
const OpDelete = "delete"

// Why context deltas: the run context grows with every step (metadata,
// prompt responses), so sending all of it on every step/run made a
// step's cost grow with the task (3.5 ms per step at 200 steps, most of
// it encoding and decoding the copy). A plugin that declares
// context_deltas keeps its copy; the host remembers what that copy is
// (mirror, one per process, so a restarted plugin gets the whole context
// again) and sends only the operations that turn it into the current
// context.

// mirror is the host's record of the run context copy one plugin process
// holds. mu is held from computing a delta until the request carrying it
// is written, so that the plugin receives deltas in the order of their
// versions.
type mirror struct {
	mu      sync.Mutex
	version uint64         // of doc; 0 before the first whole send
	doc     map[string]any // nil: the plugin holds no copy
}

// contextFor fills params with what the plugin is sent of doc (the
// current context): the whole document (and its version) when the
// plugin holds no copy, else a delta from its copy. doc becomes the
// mirror; the caller must not change it afterwards. Called with m.mu
// held.
func (m *mirror) contextFor(params *RunParams, doc map[string]any) error {
	next := m.version + 1
	if m.doc == nil {
		params.Context, params.ContextVersion = doc, next
	} else {
		ops, err := deltaOps(m.doc, doc)
		if err != nil {
			return err
		}
		params.ContextDelta = &ContextDelta{Base: m.version, Version: next, Ops: ops}
	}
	m.doc, m.version = doc, next
	return nil
}

// forget makes the next call send the whole context (the plugin asked for
// it, or a request could not be sent). Called with m.mu held.
func (m *mirror) forget() { m.doc = nil }

// deltaOps are the protocol's operations that turn old into new:
// runner.Diff's sets, unsets (delete) and grown lists (one append per new
// element: the plugin appends plainly, so a repeated element is kept).
// Diff's paths are disjoint, so the order of the kinds does not matter;
// within a kind they are sorted, so a delta is reproducible.
func deltaOps(old, new map[string]any) ([]Op, error) {
	d := runner.Diff(old, new)
	ops := make([]Op, 0, len(d.Sets)+len(d.Unsets)+len(d.AddToSets))
	for _, st := range d.Sets {
		op, err := valueOp(OpSet, st.Path, st.Value)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	for _, u := range d.Unsets {
		ops = append(ops, Op{Op: OpDelete, Path: u})
	}
	for _, a := range d.AddToSets {
		for _, v := range a.Values {
			op, err := valueOp(OpAppend, a.Path, v)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		}
	}
	return ops, nil
}

func valueOp(kind string, path []string, v any) (Op, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Op{}, err
	}
	return Op{Op: kind, Path: path, Value: b}, nil
}
