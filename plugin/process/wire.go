package process

import (
	"encoding/json"
	"errors"

	"github.com/sourcegraph/jsonrpc2"
)

// ProtocolVersion is the version of the process plugin protocol the host
// speaks. A plugin answers plugin/describe with the version it speaks; a
// different major version is refused.
const ProtocolVersion = "1"

// Method names of the protocol: requests the host sends, notifications the
// plugin sends.
const (
	MethodDescribe     = "plugin/describe"
	MethodShutdown     = "plugin/shutdown"
	MethodStepValidate = "step/validate"
	MethodStepRun      = "step/run"
	MethodCancel       = "$/cancelRequest"
	NotifyLog          = "$/log"
	NotifyProgress     = "$/progress"

	MethodSandboxCreate    = "sandbox/create"
	MethodSandboxExec      = "sandbox/exec"
	MethodSandboxWriteFile = "sandbox/write_file"
	MethodSandboxReadFile  = "sandbox/read_file"
	MethodSandboxStat      = "sandbox/stat"
	MethodSandboxTerminate = "sandbox/terminate"
	MethodTreeLstat        = "sandbox/tree_lstat"
	MethodTreeReadLink     = "sandbox/tree_readlink"
	MethodTreeReadDir      = "sandbox/tree_readdir"
	MethodTreeReadFile     = "sandbox/tree_read_file"
	MethodTreeInside       = "sandbox/tree_inside"
)

// Error codes a plugin uses in a JSON-RPC error so that the host can tell
// the kind of failure apart (the sandbox errors map to the runner's
// sandbox sentinels).
const (
	CodeMethodNotFound = jsonrpc2.CodeMethodNotFound // a method the plugin does not implement
	CodeCancelled      = -32800                      // the request was cancelled ($/cancelRequest)
	CodeNotSupported   = -32010                      // sandbox.ErrNotSupported
	CodeInvalidSpec    = -32011                      // sandbox.ErrInvalidSpec
	CodeNotFound       = -32012                      // fs.ErrNotExist / sandbox.ErrNotFound
	CodeTerminated     = -32013                      // sandbox.ErrTerminated
	// CodeContextResync: the plugin cannot apply a context delta (it holds
	// no copy, or another version); the host sends the whole context again.
	CodeContextResync = -32014
)

// DescribeParams are plugin/describe's params.
type DescribeParams struct {
	ProtocolVersion string `json:"protocol_version"`
	// Name is the name the host knows the plugin by ([plugins.<name>] or
	// the agentenv-plugin-<name> file name).
	Name string `json:"name"`
	// Settings is the plugin's [plugins.<name>] table without the keys the
	// host reads itself (command, timeout); {} when there is none.
	Settings map[string]any `json:"settings"`
}

// Description is plugin/describe's result.
type Description struct {
	ProtocolVersion string `json:"protocol_version"`
	Name            string `json:"name"`
	Version         string `json:"version"`
	// Steps are the step types the plugin contributes.
	Steps []StepType `json:"steps,omitempty"`
	// SandboxProviders are the sandbox providers it contributes.
	SandboxProviders []ProviderType `json:"sandbox_providers,omitempty"`
	// ContextDeltas: the plugin keeps a copy of the run context between
	// step/run calls, so that the host sends it whole once and then only
	// what changed (RunParams.ContextDelta). A plugin that does not say so
	// gets the whole context on every call.
	ContextDeltas bool `json:"context_deltas,omitempty"`
}

// StepType is one contributed step type.
type StepType struct {
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Schema is a JSON Schema of the step's own fields (not id, type,
	// depends_on and the other fields every step has).
	Schema json.RawMessage `json:"schema,omitempty"`
	// TolerateErrors makes fail_task_on_error default to false.
	TolerateErrors bool `json:"tolerate_errors,omitempty"`
	// Context is what step/run is sent of the run context: ContextFull
	// (the default) or ContextNone, for steps that do not read it (a large
	// context costs time to copy and send on every step).
	Context string `json:"context,omitempty"`
}

// What a step type is sent of the run context (StepType.Context).
const (
	ContextFull = "full"
	ContextNone = "none"
)

// ProviderType is one contributed sandbox provider.
type ProviderType struct {
	Name         string           `json:"name"`
	Capabilities ProviderFeatures `json:"capabilities"`
}

// ProviderFeatures mirrors sandbox.Capabilities (reconnect is not offered
// over the protocol: a plugin's sandboxes live no longer than its run).
type ProviderFeatures struct {
	VM            bool `json:"vm"`
	Container     bool `json:"container"`
	NetworkPolicy bool `json:"network_policy"`
}

// ValidateParams are step/validate's params.
type ValidateParams struct {
	Type   string                     `json:"type"`
	Fields map[string]json.RawMessage `json:"fields"`
}

// ValidateResult is step/validate's result.
type ValidateResult struct {
	Problems []Problem `json:"problems"`
}

// Problem is one thing wrong with a step's fields.
type Problem struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// RunParams are step/run's params.
type RunParams struct {
	Type   string                     `json:"type"`
	StepID string                     `json:"step_id"`
	Fields map[string]json.RawMessage `json:"fields"`
	// Context is a copy of the run context document (secrets removed);
	// changing it changes nothing: the plugin returns operations instead.
	// It is {} for a step type that asked for no context, and left out
	// when ContextDelta is sent instead.
	Context map[string]any `json:"context,omitzero"`
	// ContextVersion, sent only to a plugin with context deltas along with
	// the whole Context, numbers that copy: the plugin keeps it (replacing
	// the copy it had) for the deltas that follow.
	ContextVersion uint64 `json:"context_version,omitempty"`
	// ContextDelta, sent only to a plugin with context deltas, replaces
	// Context: the changes since the copy the plugin holds.
	ContextDelta *ContextDelta `json:"context_delta,omitempty"`
	// Seed is the run's seed row (metadata.seed) as strings; {} when none.
	Seed map[string]string `json:"seed"`
	// Token names this call in $/log and $/progress notifications.
	Token string `json:"token"`
}

// RunResult is step/run's result.
type RunResult struct {
	Ops []Op `json:"ops"`
}

// ContextDelta is what changed in the run context since the copy the
// plugin holds (version Base): applying Ops to it, in order, gives the
// context of this call, whose version is Version.
type ContextDelta struct {
	Base    uint64 `json:"base"`
	Version uint64 `json:"version"`
	// Ops are "set", "append" and "delete" operations, paths from the
	// context document's root.
	Ops []Op `json:"ops"`
}

// Op is one context operation: one a step returns (set, append), or one
// of a ContextDelta (set, append, delete).
type Op struct {
	// Op is "set", "append" or (in a ContextDelta only) "delete".
	Op string `json:"op"`
	// Path is the key path from the context document's root; a step
	// writes ["metadata", "<step id>", ...] or
	// ["metadata", "verifications", "<verifier id>"].
	Path []string `json:"path"`
	// Value is the value set or appended (left out for delete).
	Value json.RawMessage `json:"value,omitempty"`
}

// LogParams are a $/log notification's params.
type LogParams struct {
	Token   string         `json:"token,omitempty"`
	Level   string         `json:"level,omitempty"` // debug, info (default), warn, error
	Message string         `json:"message"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// ProgressParams are a $/progress notification's params.
type ProgressParams struct {
	Token   string   `json:"token,omitempty"`
	Message string   `json:"message,omitempty"`
	Done    *float64 `json:"done,omitempty"`
	Total   *float64 `json:"total,omitempty"`
}

// CancelParams are $/cancelRequest's params: the id of the request to
// abandon.
type CancelParams struct {
	ID jsonrpc2.ID `json:"id"`
}

// errMethodNotFound reports whether err is a plugin's "method not found".
func errMethodNotFound(err error) bool { return remoteCode(err, CodeMethodNotFound) }

// remoteCode reports whether err is a plugin's error answer with code.
func remoteCode(err error, code int64) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Code == code
}
