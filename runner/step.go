package runner

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"sync"

	"github.com/agentenv/agentenv/internal/didyoumean"
)

// Step is one configured step of a task. Its config is the struct the step
// type decoded its JSON fields into; Run reads and writes the run context.
type Step interface {
	Run(ctx context.Context, rc *RunContext) error
}

// SandboxUser is implemented by steps that create sandboxes through a
// provider chosen by their own fields and the run's user overrides
// (deploy_sandbox, deploy_env, deploy_agent). SandboxProvider returns the
// provider spec the step would use in rc: a name or a comma list (a
// fallback chain); "" means the run's default (Services.DefaultSandbox).
// creates is false when, so configured, the step creates no sandbox.
//
// Why a declaration rather than a look at the step's fields: submitting to
// remote workers must refuse a step that needs a local-only provider, and
// only the step knows which field and which override decide its provider.
type SandboxUser interface {
	SandboxProvider(rc *RunContext) (spec string, creates bool)
}

// Validator is implemented by step configs that check their own fields
// (required fields, XOR rules). It runs when a task is parsed; the error
// should name the field.
type Validator interface {
	Validate() error
}

// Preflighter is implemented by steps whose configuration can be checked
// against the stores before anything is deployed (preflight):
// an artifact exists, a provider accepts the options.
type Preflighter interface {
	Preflight(ctx context.Context, s *Services) []error
}

// EntityRef declares a step field that holds the id of a stored entity, so
// that bundles can rewrite bare names ("greeting") to full ids and check
// that they exist.
type EntityRef struct {
	Field        string // JSON field name ("artifact_id")
	Collection   string // registry collection ("artifacts", "envs", "a2a_agents")
	VersionField string // the matching version field ("artifact_version"), "" when none
	List         bool   // the field is a list of ids
	ListKey      string // for lists of objects: the key holding the id ("id")
	// Output marks an entity the step writes (a new version of it, as
	// snapshot_agent_state's artifact_id): it need not exist beforehand,
	// so preflight and bundles neither check nor pin it.
	Output bool
}

// EntityRefser is implemented by step configs that reference entities.
type EntityRefser interface {
	EntityRefs() []EntityRef
}

// StepInfo registers a step type.
type StepInfo struct {
	// Type is the registry key, the step JSON's "type" ("deploy_sandbox").
	Type string
	// New returns a fresh, zero config that the step's JSON fields are
	// decoded into (unknown fields refused). It must be a pointer that
	// implements Step.
	New func() Step
	// TolerateErrors makes fail_task_on_error default to false
	// (teardown_sandboxes, reset_env).
	TolerateErrors bool
	// MustTolerate refuses fail_task_on_error=true (teardown_sandboxes).
	MustTolerate bool
}

// ErrUnknownStepType is matched by every unknown-type error.
var ErrUnknownStepType = errors.New("unknown task step type")

// UnknownStepTypeError names the type that is not registered, and the
// types that are.
type UnknownStepTypeError struct {
	Type  string
	Known []string // the registered types, sorted
}

func (e *UnknownStepTypeError) Error() string {
	return fmt.Sprintf("Unknown task step type %q", e.Type) + didyoumean.Hint(e.Type, e.Known)
}

// Is makes errors.Is(err, ErrUnknownStepType) hold.
func (e *UnknownStepTypeError) Is(target error) bool { return target == ErrUnknownStepType }

// StepRegistry maps step type names to their StepInfo. It is a value: the
// built-in set comes from runner/steps.Builtin(), and tests build their own.
type StepRegistry struct {
	mu    sync.RWMutex
	types map[string]StepInfo
}

// NewStepRegistry returns an empty registry.
func NewStepRegistry() *StepRegistry { return &StepRegistry{types: map[string]StepInfo{}} }

var stepTypeName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Register adds a step type. A duplicate or invalid name, or a nil New, is
// a programmer error and panics.
func (r *StepRegistry) Register(info StepInfo) {
	if !stepTypeName.MatchString(info.Type) {
		panic(fmt.Sprintf("runner: invalid step type name %q", info.Type))
	}
	if info.New == nil {
		panic(fmt.Sprintf("runner: step type %q has no New", info.Type))
	}
	if reflect.ValueOf(info.New()).Kind() != reflect.Pointer {
		panic(fmt.Sprintf("runner: step type %q: New must return a pointer to a config struct", info.Type))
	}
	if info.MustTolerate && !info.TolerateErrors {
		panic(fmt.Sprintf("runner: step type %q: MustTolerate without TolerateErrors", info.Type))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.types[info.Type]; dup {
		panic(fmt.Sprintf("runner: step type %q registered twice", info.Type))
	}
	r.types[info.Type] = info
}

// Lookup returns the StepInfo of a type, or an *UnknownStepTypeError.
func (r *StepRegistry) Lookup(typ string) (StepInfo, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	info, ok := r.types[typ]
	if !ok {
		known := make([]string, 0, len(r.types))
		for t := range r.types {
			known = append(known, t)
		}
		sort.Strings(known)
		return StepInfo{}, &UnknownStepTypeError{Type: typ, Known: known}
	}
	return info, nil
}

// Types lists the registered type names, sorted.
func (r *StepRegistry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.types))
	for t := range r.types {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
