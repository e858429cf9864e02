package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
)

// Stores is where a bundle is written: the @local document store (tasks
// and the bundle ledger) and the artifact store over it.
type Stores struct {
	Documents registry.DocumentStore
	Artifacts *artifact.Store
	// LockDir holds the per-id file locks (<state root>/locks); "" = none.
	LockDir string
}

// Entity is one materialised artifact or task.
type Entity struct {
	Path    string // "artifacts/greeting", "tasks/hello.json"
	ID      string
	Version int
	Status  string // "new", "changed", "unchanged" (dry run: "would be new", ...)
}

// Line is how materialisation reports an entity.
func (e Entity) Line() string {
	switch e.Status {
	case "unchanged":
		return fmt.Sprintf("%s: v%d, unchanged", e.Path, e.Version)
	default:
		return fmt.Sprintf("%s: v%d (%s)", e.Path, e.Version, e.Status)
	}
}

// Task is a materialised task, ready to run.
type Task struct {
	File   string // "tasks/hello.json"
	Name   string
	Entity Entity
	Task   *runner.Task
}

// Materialised is a bundle whose entities are in the stores.
type Materialised struct {
	Bundle    *Bundle
	Artifacts []Entity
	Tasks     []Task
	Evals     []Eval // evals.go
}

const ledgerScheme = "sha256-v1"

// MaterialiseOptions tunes Materialise; nil means defaults.
type MaterialiseOptions struct {
	// DryRun checks everything and reports what would be written, writing
	// nothing.
	DryRun bool
}

// Materialise parses the bundle's tasks (rewriting bare entity names to
// bundle ids), then writes every artifact and task whose content changed
// since the last run, printing one line per entity to out. An error leaves
// no task half-written: tasks are parsed and checked before anything is
// stored.
func Materialise(ctx context.Context, b *Bundle, st Stores, reg *runner.StepRegistry, out io.Writer, o *MaterialiseOptions) (*Materialised, error) {
	var opts MaterialiseOptions
	if o != nil {
		opts = *o
	}
	if st.Documents == nil || st.Artifacts == nil {
		return nil, fmt.Errorf("bundle: %w", runner.ErrNoStore)
	}
	m := &Materialised{Bundle: b}
	names := map[string]string{}
	for _, a := range b.Artifacts {
		names[a.Name] = b.IDRoot + "/" + a.Name
	}
	// Parse and rewrite every task first: bad input fails before any write.
	type parsed struct {
		tf    TaskFile
		steps json.RawMessage
	}
	var tasks []parsed
	for _, tf := range b.Tasks {
		steps, err := prepareTask(ctx, tf, reg, names, st.Documents)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, parsed{tf, steps})
	}
	evals, err := prepareEvals(ctx, b, st.Documents)
	if err != nil {
		return nil, err
	}
	for _, a := range b.Artifacts {
		e, err := putArtifact(ctx, st, b, a, opts.DryRun)
		if err != nil {
			return nil, fmt.Errorf("artifacts/%s: %w", a.Name, err)
		}
		m.Artifacts = append(m.Artifacts, e)
		fmt.Fprintln(out, e.Line())
	}
	for _, p := range tasks {
		id := b.IDRoot + "/" + p.tf.Name
		body, _ := json.Marshal(map[string]any{"type": "task", "steps": p.steps})
		e, err := putLedgered(ctx, st, b, registry.Tasks, id, p.tf.File, digestOf("task", nil, map[string][]byte{"steps": p.steps}), opts.DryRun,
			func() (int, error) {
				d, err := st.Documents.Put(ctx, registry.Tasks, id, body, nil)
				return d.Version, err
			})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.tf.File, err)
		}
		t, err := runner.ParseSteps(reg, p.steps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.tf.File, err)
		}
		m.Tasks = append(m.Tasks, Task{File: p.tf.File, Name: p.tf.Name, Entity: e,
			Task: &runner.Task{ID: id, Version: e.Version, Steps: t}})
		fmt.Fprintln(out, e.Line())
	}
	for _, pe := range evals {
		e, err := putEval(ctx, st, m, pe, opts.DryRun)
		if err != nil {
			return nil, err
		}
		m.Evals = append(m.Evals, e)
		fmt.Fprintln(out, e.Entity.Line())
	}
	return m, nil
}

// prepareTask parses a task file, rewrites bare entity names that the
// bundle defines to its ids, checks that every other referenced entity
// exists, and returns the steps as they will be stored.
func prepareTask(ctx context.Context, tf TaskFile, reg *runner.StepRegistry, artifacts map[string]string, docs registry.DocumentStore) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(tf.Raw)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, fmt.Errorf("%s: %w: a task file is a JSON array of step objects", tf.File, ErrInvalid)
	}
	defs, err := runner.ParseSteps(reg, tf.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tf.File, err)
	}
	for i, d := range defs {
		refser, ok := d.Config.(runner.EntityRefser)
		if !ok {
			continue
		}
		for _, ref := range refser.EntityRefs() {
			raw, ok := d.Fields[ref.Field]
			if !ok || ref.Collection != string(registry.Artifacts) || ref.Output {
				continue
			}
			rewritten, ids, err := rewriteRef(raw, ref, artifacts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", tf.File, &runner.StepError{Index: i, StepID: d.ID, Field: ref.Field, Err: err})
			}
			d.Fields[ref.Field] = rewritten
			for _, id := range ids {
				if isBundleID(id, artifacts) {
					continue
				}
				if _, err := docs.Get(ctx, registry.Artifacts, registry.Ref{ID: id}); err != nil {
					return nil, fmt.Errorf("%s: %w", tf.File, &runner.StepError{Index: i, StepID: d.ID, Field: ref.Field,
						Err: fmt.Errorf("artifact %q is neither in the bundle's artifacts/ nor in the store: %w", id, err)})
				}
			}
		}
	}
	steps, err := json.Marshal(defs)
	if err != nil {
		return nil, err
	}
	return steps, nil
}

func isBundleID(id string, names map[string]string) bool {
	for _, v := range names {
		if v == id {
			return true
		}
	}
	return false
}

// rewriteRef maps bare names in one entity-ref field.
func rewriteRef(raw json.RawMessage, ref runner.EntityRef, names map[string]string) (json.RawMessage, []string, error) {
	mapName := func(s string) string {
		if full, ok := names[s]; ok && !strings.Contains(s, "/") && !strings.HasPrefix(s, "@") {
			return full
		}
		return s
	}
	if !ref.List {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return raw, nil, nil
		}
		s = mapName(s)
		b, _ := json.Marshal(s)
		return b, []string{s}, nil
	}
	var list []any
	if err := json.Unmarshal(raw, &list); err != nil {
		return raw, nil, nil
	}
	var ids []string
	for i, e := range list {
		switch v := e.(type) {
		case string:
			list[i] = mapName(v)
			ids = append(ids, list[i].(string))
		case map[string]any:
			if s, ok := v[ref.ListKey].(string); ok && ref.ListKey != "" {
				v[ref.ListKey] = mapName(s)
				ids = append(ids, v[ref.ListKey].(string))
			}
		}
	}
	b, err := json.Marshal(list)
	return b, ids, err
}

func digestOf(typ string, config any, files map[string][]byte) string {
	h := sha256.New()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	cfg, _ := json.Marshal(config)
	fmt.Fprintf(h, "type=%s\nconfig=%s\n", typ, cfg)
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(h, "file=%q sha256=%x\n", n, sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func ledgerKey(c registry.Collection, id string) string { return "@local|" + string(c) + "|" + id }

// putLedgered writes a new version of id (through put, which returns the
// version it stored) unless the ledger says the same digest is already
// stored.
func putLedgered(ctx context.Context, st Stores, b *Bundle, c registry.Collection, id, display, digest string, dry bool,
	put func() (int, error)) (Entity, error) {
	unlock, err := lockID(st.LockDir, id)
	if err != nil {
		return Entity{}, err
	}
	defer unlock()
	e := Entity{Path: display, ID: id}
	key := ledgerKey(c, id)
	if rec, err := st.Documents.GetRecord(ctx, registry.BundleLedger, key); err == nil {
		var l struct {
			Status  string `json:"status"`
			Digest  string `json:"digest"`
			Version int    `json:"version"`
		}
		if rec.Decode(&l) == nil && l.Status == "done" && l.Digest == digest {
			if _, err := st.Documents.Get(ctx, c, registry.Ref{ID: id, Version: l.Version}); err == nil {
				e.Version, e.Status = l.Version, "unchanged"
				return e, nil
			}
		}
	} else if !errors.Is(err, registry.ErrNotFound) {
		return e, err
	}
	latest := 0
	if vs, err := st.Documents.Versions(ctx, c, id); err == nil && len(vs) > 0 {
		latest = vs[len(vs)-1].Version
	} else if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return e, err
	}
	e.Version, e.Status = latest+1, "new"
	if latest > 0 {
		e.Status = "changed"
	}
	if dry {
		e.Status = "would be " + e.Status
		return e, nil
	}
	ledger := map[string]any{"store": "@local", "id": id, "bundle": b.IDRoot, "status": "pending",
		"scheme": ledgerScheme, "digest": digest, "version": e.Version, "at": registry.FormatISO(time.Now())}
	lb, _ := json.Marshal(ledger)
	if _, err := st.Documents.UpsertRecord(ctx, registry.BundleLedger, key, lb); err != nil {
		return e, err
	}
	v, err := put()
	if err != nil {
		return e, err
	}
	e.Version = v
	ledger["status"], ledger["version"] = "done", v
	lb, _ = json.Marshal(ledger)
	if _, err := st.Documents.UpsertRecord(ctx, registry.BundleLedger, key, lb); err != nil {
		return e, err
	}
	return e, nil
}

// putArtifact writes one artifacts/<name>/ folder: a file artifact for a
// single file, else a file_artifact_universe whose members are file
// artifacts "<universe id>/<filename>" (each ledgered on its own, so an
// unchanged member keeps its version).
func putArtifact(ctx context.Context, st Stores, b *Bundle, a Artifact, dry bool) (Entity, error) {
	id := b.IDRoot + "/" + a.Name
	digest := digestOf(a.Type(), nil, a.Files)
	display := "artifacts/" + a.Name
	if a.Type() == "file" {
		name := a.FileNames()[0]
		return putLedgered(ctx, st, b, registry.Artifacts, id, display, digest, dry, func() (int, error) {
			f, err := st.Artifacts.PutFile(ctx, id, artifact.FileInput{Filename: name, Body: bytes.NewReader(a.Files[name])})
			if err != nil {
				return 0, err
			}
			return f.Version, nil
		})
	}
	return putLedgered(ctx, st, b, registry.Artifacts, id, display, digest, dry, func() (int, error) {
		members := map[string]registry.Ref{}
		for _, name := range a.FileNames() {
			mid := id + "/" + name
			me, err := putLedgered(ctx, st, b, registry.Artifacts, mid, display+"/"+name, digestOf("file", nil, map[string][]byte{name: a.Files[name]}), false,
				func() (int, error) {
					f, err := st.Artifacts.PutFile(ctx, mid, artifact.FileInput{Filename: name, Body: bytes.NewReader(a.Files[name]),
						Description: "Member " + name + " of " + id})
					if err != nil {
						return 0, err
					}
					return f.Version, nil
				})
			if err != nil {
				return 0, err
			}
			members[name] = registry.Ref{ID: mid, Version: me.Version}
		}
		u, err := st.Artifacts.PutUniverse(ctx, id, members, &artifact.UniverseOptions{Description: b.Description})
		if err != nil {
			return 0, err
		}
		return u.Version, nil
	})
}
