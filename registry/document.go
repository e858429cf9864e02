package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Collection names a set of documents. Versioned collections hold
// immutable (id, version) documents; record collections hold one mutable
// document per key. The set is fixed by the reference: a
// backend refuses any other name with ErrInvalid, so a typo never creates
// a table.
type Collection string

// Versioned collections.
const (
	Envs      Collection = "envs"
	Artifacts Collection = "artifacts"
	A2AAgents Collection = "a2a_agents"
	Tasks     Collection = "tasks"
	TaskSteps Collection = "task_steps"
	Evals     Collection = "evals"
)

// Record collections.
const (
	EnvInstances      Collection = "env_instances"
	A2AAgentInstances Collection = "a2a_agent_instances"
	TaskInstances     Collection = "task_instances"
	TaskStepJournal   Collection = "task_step_journal"
	Runs              Collection = "runs"
	BundleLedger      Collection = "bundle_ledger"
	// TaskReviews holds the review step's awaiting reviews and the
	// decisions recorded on them (by another process: the CLI).
	TaskReviews Collection = "task_reviews"
	// EnvStateInstances holds the database (state) instance of each
	// service_db env instance, keyed by env_state_instance_id.
	EnvStateInstances Collection = "env_state_instances"
)

type collectionInfo struct {
	versioned bool
	kind      string // for messages: "Task tasks/hello version=2 not found"
	keyField  string // record collections: the field the key is stamped into ("" = none)
}

var collections = map[Collection]collectionInfo{
	Envs:              {true, "Env", ""},
	Artifacts:         {true, "Artifact", ""},
	A2AAgents:         {true, "A2A agent", ""},
	Tasks:             {true, "Task", ""},
	TaskSteps:         {true, "Task step", ""},
	Evals:             {true, "Eval", ""},
	EnvInstances:      {false, "Env instance", "instance_id"},
	A2AAgentInstances: {false, "A2A agent instance", "instance_id"},
	TaskInstances:     {false, "Task instance", "instance_id"},
	TaskStepJournal:   {false, "Journal entry", ""},
	Runs:              {false, "Run", "run_id"},
	BundleLedger:      {false, "Ledger entry", ""},
	TaskReviews:       {false, "Review", ""},
	EnvStateInstances: {false, "Env state instance", "env_state_instance_id"},
}

// Collections returns every known collection, versioned first.
func Collections() []Collection {
	return []Collection{Envs, Artifacts, A2AAgents, Tasks, TaskSteps, Evals,
		EnvInstances, A2AAgentInstances, TaskInstances, TaskStepJournal, Runs, BundleLedger, TaskReviews, EnvStateInstances}
}

// Known reports whether c is one of the reference's collections.
func (c Collection) Known() bool { _, ok := collections[c]; return ok }

// Versioned reports whether c holds (id, version) documents.
func (c Collection) Versioned() bool { return collections[c].versioned }

// Kind is the human name used in messages ("Task", "Env instance").
func (c Collection) Kind() string {
	if k := collections[c].kind; k != "" {
		return k
	}
	return string(c)
}

// KeyField is the document field a record's key is written into
// ("instance_id", "run_id"), or "" when the key is not part of the body.
func (c Collection) KeyField() string { return collections[c].keyField }

// CheckVersioned returns an ErrInvalid error unless c is a known versioned
// collection. Backends call it at every entry point.
func (c Collection) CheckVersioned() error {
	info, ok := collections[c]
	if !ok {
		return invalid("collection", string(c), "unknown collection")
	}
	if !info.versioned {
		return invalid("collection", string(c), "is a record collection, not versioned")
	}
	return nil
}

// CheckRecords returns an ErrInvalid error unless c is a known record
// collection.
func (c Collection) CheckRecords() error {
	info, ok := collections[c]
	if !ok {
		return invalid("collection", string(c), "unknown collection")
	}
	if info.versioned {
		return invalid("collection", string(c), "is versioned, not a record collection")
	}
	return nil
}

// Document is one immutable version of a versioned entity.
type Document struct {
	Collection Collection
	ID         string
	Version    int
	Type       string    // the body's "type" field ("" when absent)
	CreatedAt  time.Time // UTC, set by the store
	// Data is the whole stored JSON object. The store has written "id",
	// "version" and "created_at_utc" into it, and removed the safe-form
	// secret keys (registry/redact) at any depth.
	Data json.RawMessage
}

// Decode unmarshals Data into v.
func (d Document) Decode(v any) error { return json.Unmarshal(d.Data, v) }

// Ref returns the pinned reference of d.
func (d Document) Ref() Ref { return Ref{ID: d.ID, Version: d.Version} }

// PutOptions tunes DocumentStore.Put. A nil *PutOptions means defaults.
type PutOptions struct {
	// Version, when > 0, is the version the caller expects to create: the put
	// fails with ErrConflict unless it is exactly latest+1. Zero: the next
	// version, whatever it is. Artifacts use it because their object keys
	// carry the version and are written before the document.
	Version int
}

// ListOptions selects the latest version of each id of a collection,
// ordered by id ascending. The zero value lists everything.
type ListOptions struct {
	IDPrefix string // only ids starting with this
	Type     string // only documents whose latest version has this type
	Limit    int    // 0: no limit
	Offset   int
}

// Record is the current state of one mutable record (an instance, a run).
type Record struct {
	Collection Collection
	Key        string
	// Rev counts writes: 1 after the insert, +1 per update. Updates are a
	// compare-and-swap on it.
	Rev       int64
	CreatedAt time.Time // first write, UTC
	UpdatedAt time.Time // last write, UTC
	// Data is the stored JSON object; for collections with a KeyField the
	// key is written into that field. Safe-form secret keys are removed.
	Data json.RawMessage
}

// Decode unmarshals Data into v.
func (r Record) Decode(v any) error { return json.Unmarshal(r.Data, v) }

// RecordQuery filters and orders records. Filters are equality on dotted
// paths of the JSON body ("task_id", "metadata.deploy_step_id") compared as
// JSON values; all must hold. The zero value returns every record in
// creation order.
type RecordQuery struct {
	Where map[string]any
	// Filters are further predicates (Ne, Gte, Lte, In, Exists, ...), ANDed
	// with Where.
	Filters  []Filter
	OrderBy  string // dotted path; "" = creation time. Absent values sort last.
	Desc     bool
	Limit    int // 0: no limit
	Offset   int
	KeyStart string // only keys starting with this ("" = all)
}

// Mutator changes a record in place. It receives the decoded body (numbers
// as json.Number) and may return ErrNoChange to leave the record as is.
// It can be called more than once when writers race, so it must be a pure
// function of its input.
type Mutator func(doc map[string]any) error

// ErrNoChange, returned by a Mutator, ends an UpdateRecord without writing.
var ErrNoChange = errors.New("no change")

// DocumentStore keeps versioned documents and mutable records.
//
// Contract (checked by storetest.RunDocumentStore):
//   - Put inserts version latest+1 (1 for a new id); concurrent puts of one
//     id each get their own version with no gap and no duplicate.
//   - A put whose "type" differs from the id's existing type is refused
//     with ErrConflict; nothing is overwritten, ever.
//   - Get with Version 0 returns the latest; missing → *NotFoundError.
//   - A reader sees a document whole or not at all.
//   - Records change only through compare-and-swap on Rev.
//   - Every write strips the safe-form secret keys (registry/redact).
//   - A backend that cannot be reached returns errors matching
//     ErrUnavailable, naming the backend.
type DocumentStore interface {
	Put(ctx context.Context, c Collection, id string, body json.RawMessage, o *PutOptions) (Document, error)
	Get(ctx context.Context, c Collection, ref Ref) (Document, error)
	// Versions returns every version of id, oldest first (ErrNotFound if none).
	Versions(ctx context.Context, c Collection, id string) ([]Document, error)
	// List returns the latest version of each id.
	List(ctx context.Context, c Collection, o *ListOptions) ([]Document, error)

	// InsertRecord creates a record; ErrAlreadyExists if the key is taken.
	InsertRecord(ctx context.Context, c Collection, key string, body json.RawMessage) (Record, error)
	// UpsertRecord replaces the whole body (or creates it), bumping Rev.
	UpsertRecord(ctx context.Context, c Collection, key string, body json.RawMessage) (Record, error)
	GetRecord(ctx context.Context, c Collection, key string) (Record, error)
	// UpdateRecord applies m under compare-and-swap, retrying on races.
	UpdateRecord(ctx context.Context, c Collection, key string, m Mutator) (Record, error)
	QueryRecords(ctx context.Context, c Collection, q *RecordQuery) ([]Record, error)
	DeleteRecord(ctx context.Context, c Collection, key string) error

	// Ping checks the backend is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// DecodeObject decodes a JSON object body keeping numbers exact
// (json.Number). It is what backends hand to a Mutator.
func DecodeObject(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, invalid("document", "", "not a JSON object: "+err.Error())
	}
	if m == nil {
		return nil, invalid("document", "", "not a JSON object (null)")
	}
	if dec.More() {
		return nil, invalid("document", "", "trailing data after the JSON object")
	}
	return m, nil
}

// MetadataUpdater is an optional DocumentStore ability: the one in-place
// change a version allows. UpdateMetadata merges patch
// into the "metadata" object of version ref.Version (which must be given)
// and stamps metadata.updated_at, provided the stored metadata.updated_at
// equals expectUpdatedAt ("" = never updated); otherwise ErrConflict.
// Safe-form secret keys are stripped as on any write.
type MetadataUpdater interface {
	UpdateMetadata(ctx context.Context, c Collection, ref Ref, expectUpdatedAt string, patch map[string]any) (Document, error)
}
