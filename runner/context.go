package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/agentenv/agentenv/registry/redact"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Context keys.
const (
	KeyDeployedEnvs      = "deployed_envs"
	KeyDeployedAgents    = "deployed_agents"
	KeyDeployedSandboxes = "deployed_sandboxes"
	KeyPromptResponses   = "prompt_responses"
	KeyMetadata          = "metadata"
)

// ErrUnknownName is matched when a step looks up a sandbox, env, agent,
// prompt response or verification that the context does not hold.
var ErrUnknownName = errors.New("not in the run context")

// ErrDuplicateName is matched when a deploy step would add a name the
// context already holds.
var ErrDuplicateName = errors.New("already in the run context")

// NameError says which kind of name was looked up.
type NameError struct {
	Kind  string // "sandbox", "prompt response", "verification", ...
	Name  string
	Known []string
	Err   error // ErrUnknownName or ErrDuplicateName
}

func (e *NameError) Error() string {
	if errors.Is(e.Err, ErrDuplicateName) {
		return fmt.Sprintf("%s %q is already deployed in this run", e.Kind, e.Name)
	}
	if len(e.Known) == 0 {
		return fmt.Sprintf("no %s named %q in the run context (none deployed yet)", e.Kind, e.Name)
	}
	return fmt.Sprintf("no %s named %q in the run context (have: %v)", e.Kind, e.Name, e.Known)
}

func (e *NameError) Unwrap() error { return e.Err }

// DeployedSandbox is one deployed_sandboxes[] entry.
type DeployedSandbox struct {
	SandboxName   string                `json:"sandbox_name"`
	SandboxID     string                `json:"sandbox_id"`
	SandboxMode   sandbox.Mode          `json:"sandbox_mode"`
	SandboxType   string                `json:"sandbox_type"`
	TunnelURLs    map[string]string     `json:"tunnel_urls"`
	VNCURL        *string               `json:"vnc_url"`
	InstanceID    string                `json:"instance_id"`
	CreatedAtUTC  string                `json:"created_at_utc"`
	ExpiresAtUTC  string                `json:"expires_at_utc"`
	NetworkPolicy sandbox.NetworkPolicy `json:"network_policy"`
	// Handle lets a later process reconnect (resume, teardown). Ours.
	Handle *sandbox.Handle `json:"handle,omitempty"`
	// DeployStepID is the step that deployed it. Ours.
	DeployStepID string `json:"deploy_step_id,omitempty"`
}

// PromptResponse is one prompt_responses[] entry (the fields verifiers
// read; the rest are carried in the context document).
type PromptResponse struct {
	PromptID     string `json:"prompt_id"`
	Response     string `json:"response"`
	PromptText   string `json:"prompt_text,omitempty"`
	AgentName    string `json:"agent_name,omitempty"`
	StepID       string `json:"step_id,omitempty"`
	ErrorType    string `json:"error_type,omitempty"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// runState is shared by every step of one run.
type runState struct {
	mu       sync.Mutex
	doc      map[string]any
	live     map[string]sandbox.Sandbox // by sandbox_id
	owners   map[string]string          // verifier_id -> step id
	services *Services
	torn     map[string]bool // sandbox ids already terminated
}

// RunContext is the mutable state of a run, as seen by one
// step. Steps find envs, agents and sandboxes by name, never by return
// value. It is safe for concurrent use by the steps running in parallel.
type RunContext struct {
	st   *runState
	step *StepDef
}

// NewRunContext returns a context holding a deep copy of initial (nil for
// an empty context), with the list keys and metadata present.
func NewRunContext(initial map[string]any, s *Services) *RunContext {
	doc := map[string]any{}
	if initial != nil {
		doc = deepCopy(toJSONValue(initial)).(map[string]any)
	}
	for _, k := range []string{KeyDeployedEnvs, KeyDeployedAgents, KeyDeployedSandboxes, KeyPromptResponses} {
		if _, ok := doc[k].([]any); !ok {
			doc[k] = []any{}
		}
	}
	if _, ok := doc[KeyMetadata].(map[string]any); !ok {
		doc[KeyMetadata] = map[string]any{}
	}
	if s == nil {
		s = &Services{}
	}
	return &RunContext{st: &runState{doc: doc, live: map[string]sandbox.Sandbox{},
		owners: map[string]string{}, services: s, torn: map[string]bool{}}}
}

// Copy returns an independent context with a deep copy of the document and
// the same services (for --k runs); live sandboxes are not shared.
func (rc *RunContext) Copy() *RunContext { return NewRunContext(rc.Snapshot(), rc.st.services) }

func (rc *RunContext) forStep(d *StepDef) *RunContext { return &RunContext{st: rc.st, step: d} }

// StepID is the id of the step this view belongs to ("" outside a step).
func (rc *RunContext) StepID() string {
	if rc.step == nil {
		return ""
	}
	return rc.step.ID
}

// Services are the stores and providers of the run.
func (rc *RunContext) Services() *Services { return rc.st.services }

// Logger is the run's logger, with the step id attached.
func (rc *RunContext) Logger() *slog.Logger {
	l := rc.st.services.logger()
	if rc.step != nil {
		l = l.With("step_id", rc.step.ID)
	}
	return l
}

// Snapshot returns a deep copy of the whole context document.
func (rc *RunContext) Snapshot() map[string]any {
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	return deepCopy(rc.st.doc).(map[string]any)
}

// SafeSnapshot is Snapshot without the safe-form secret keys; it is what is
// persisted and printed.
func (rc *RunContext) SafeSnapshot() map[string]any {
	return redact.Strip(rc.Snapshot()).(map[string]any)
}

// replace swaps the whole document (retry rebuilds).
func (rc *RunContext) replace(doc map[string]any) {
	rc.st.mu.Lock()
	rc.st.doc = doc
	rc.st.mu.Unlock()
}

// Metadata returns a deep copy of metadata[key].
func (rc *RunContext) Metadata(key string) (any, bool) {
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	v, ok := rc.st.doc[KeyMetadata].(map[string]any)[key]
	return deepCopy(v), ok
}

// SetMetadata sets metadata[key] to the JSON form of v.
func (rc *RunContext) SetMetadata(key string, v any) {
	jv := toJSONValue(v)
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	rc.st.doc[KeyMetadata].(map[string]any)[key] = jv
}

// SetMetadataEntry sets metadata[key][sub] (creating the map).
func (rc *RunContext) SetMetadataEntry(key, sub string, v any) {
	jv := toJSONValue(v)
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	md := rc.st.doc[KeyMetadata].(map[string]any)
	m, ok := md[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		md[key] = m
	}
	m[sub] = jv
}

// AppendMetadata appends the JSON form of v to the list metadata[key].
func (rc *RunContext) AppendMetadata(key string, v any) {
	jv := toJSONValue(v)
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	md := rc.st.doc[KeyMetadata].(map[string]any)
	l, _ := md[key].([]any)
	md[key] = append(l, jv)
}

// UserOverride returns metadata.user_overrides[key] as a string ("" when
// absent).
func (rc *RunContext) UserOverride(key string) string {
	v, _ := rc.Metadata("user_overrides")
	m, _ := v.(map[string]any)
	s, _ := m[key].(string)
	return s
}

// StepParams returns metadata.user_overrides.step_params[<this step>]: the
// per-run field overrides a step may opt in to.
func (rc *RunContext) StepParams() map[string]any {
	v, _ := rc.Metadata("user_overrides")
	m, _ := v.(map[string]any)
	sp, _ := m["step_params"].(map[string]any)
	p, _ := sp[rc.StepID()].(map[string]any)
	return p
}

// Seed is metadata.seed as strings (seed substitution).
func (rc *RunContext) Seed() map[string]string {
	v, _ := rc.Metadata("seed")
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch s := v.(type) {
		case string:
			out[k] = s
		case nil:
		default:
			b, _ := json.Marshal(s)
			out[k] = string(b)
		}
	}
	return out
}

// AddSandbox records a deployed sandbox and keeps its live handle for the
// run's steps and teardown. A duplicate sandbox_name is refused.
func (rc *RunContext) AddSandbox(ds DeployedSandbox, sb sandbox.Sandbox) error {
	if ds.DeployStepID == "" {
		ds.DeployStepID = rc.StepID()
	}
	jv := toJSONValue(ds)
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	for _, e := range rc.st.doc[KeyDeployedSandboxes].([]any) {
		if m, _ := e.(map[string]any); m["sandbox_name"] == ds.SandboxName {
			return &NameError{Kind: "sandbox", Name: ds.SandboxName, Err: ErrDuplicateName}
		}
	}
	rc.st.doc[KeyDeployedSandboxes] = append(rc.st.doc[KeyDeployedSandboxes].([]any), jv)
	if sb != nil {
		rc.st.live[ds.SandboxID] = sb
	}
	return nil
}

// Sandboxes lists deployed_sandboxes[].
func (rc *RunContext) Sandboxes() []DeployedSandbox {
	rc.st.mu.Lock()
	list := deepCopy(rc.st.doc[KeyDeployedSandboxes])
	rc.st.mu.Unlock()
	var out []DeployedSandbox
	_ = fromJSONValue(list, &out)
	return out
}

// Sandbox finds a deployed sandbox by sandbox_name and returns its record
// and live handle, reconnecting through its provider when this process did
// not create it (a resumed run).
func (rc *RunContext) Sandbox(ctx context.Context, name string) (DeployedSandbox, sandbox.Sandbox, error) {
	all := rc.Sandboxes()
	var known []string
	for _, ds := range all {
		if ds.SandboxName != name {
			known = append(known, ds.SandboxName)
			continue
		}
		rc.st.mu.Lock()
		sb, ok := rc.st.live[ds.SandboxID]
		torn := rc.st.torn[ds.SandboxID]
		rc.st.mu.Unlock()
		if torn {
			return ds, nil, fmt.Errorf("sandbox %q (%s) was torn down: %w", name, ds.SandboxID, sandbox.ErrTerminated)
		}
		if ok {
			return ds, sb, nil
		}
		if ds.Handle == nil {
			return ds, nil, fmt.Errorf("sandbox %q (%s) has no handle to reconnect with", name, ds.SandboxID)
		}
		sb, err := rc.st.services.Reconnect(ctx, *ds.Handle)
		if err != nil {
			return ds, nil, fmt.Errorf("sandbox %q: %w", name, err)
		}
		rc.st.mu.Lock()
		rc.st.live[ds.SandboxID] = sb
		rc.st.mu.Unlock()
		return ds, sb, nil
	}
	sort.Strings(known)
	return DeployedSandbox{}, nil, &NameError{Kind: "sandbox", Name: name, Known: known, Err: ErrUnknownName}
}

// TerminateSandbox terminates one sandbox by id (once) and records it in
// metadata.torn_down_sandbox_ids.
func (rc *RunContext) TerminateSandbox(ctx context.Context, id string) error {
	rc.st.mu.Lock()
	if rc.st.torn[id] {
		rc.st.mu.Unlock()
		return nil
	}
	sb := rc.st.live[id]
	rc.st.mu.Unlock()
	if sb == nil {
		for _, ds := range rc.Sandboxes() {
			if ds.SandboxID == id && ds.Handle != nil {
				if s, err := rc.st.services.Reconnect(ctx, *ds.Handle); err == nil {
					sb = s
				} else if errors.Is(err, sandbox.ErrNotFound) {
					sb = nil
				} else {
					return err
				}
			}
		}
	}
	if sb != nil {
		if err := sb.Terminate(ctx); err != nil {
			return fmt.Errorf("terminate sandbox %s: %w", id, err)
		}
	}
	rc.st.mu.Lock()
	rc.st.torn[id] = true
	delete(rc.st.live, id)
	rc.st.mu.Unlock()
	rc.AppendMetadata("torn_down_sandbox_ids", id)
	return nil
}

// PromptResponse finds prompt_responses[] by prompt_id (the last one when
// the same id was prompted twice).
func (rc *RunContext) PromptResponse(id string) (PromptResponse, error) {
	rc.st.mu.Lock()
	list := deepCopy(rc.st.doc[KeyPromptResponses])
	rc.st.mu.Unlock()
	var all []PromptResponse
	_ = fromJSONValue(list, &all)
	var known []string
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].PromptID == id {
			return all[i], nil
		}
		known = append(known, all[i].PromptID)
	}
	return PromptResponse{}, &NameError{Kind: "prompt response", Name: id, Known: known, Err: ErrUnknownName}
}

// AddPromptResponse appends to prompt_responses[].
func (rc *RunContext) AddPromptResponse(pr PromptResponse) {
	if pr.StepID == "" {
		pr.StepID = rc.StepID()
	}
	jv := toJSONValue(pr)
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	rc.st.doc[KeyPromptResponses] = append(rc.st.doc[KeyPromptResponses].([]any), jv)
}

// SetVerification writes metadata.verifications[id] and remembers the
// step that owns it (for summaries).
func (rc *RunContext) SetVerification(id string, v Verification) {
	rc.SetMetadataEntry("verifications", id, v)
	rc.st.mu.Lock()
	rc.st.owners[id] = rc.StepID()
	rc.st.mu.Unlock()
}

// Verification reads metadata.verifications[id].
func (rc *RunContext) Verification(id string) (Verification, error) {
	all := rc.Verifications()
	if v, ok := all[id]; ok {
		return v, nil
	}
	known := make([]string, 0, len(all))
	for k := range all {
		known = append(known, k)
	}
	sort.Strings(known)
	return Verification{}, &NameError{Kind: "verification", Name: id, Known: known, Err: ErrUnknownName}
}

// Verifications reads metadata.verifications.
func (rc *RunContext) Verifications() map[string]Verification {
	v, _ := rc.Metadata("verifications")
	out := map[string]Verification{}
	m, _ := v.(map[string]any)
	for k, e := range m {
		var ver Verification
		em, _ := e.(map[string]any)
		ver.Score, _ = number(em["score"])
		if rows, ok := em["results"].([]any); ok {
			ver.Results = make([]Row, 0, len(rows))
			for _, r := range rows {
				rm, _ := r.(map[string]any)
				ver.Results = append(ver.Results, Row(rm))
			}
		}
		if ids, ok := em["source_verifier_ids"].([]any); ok {
			ver.SourceVerifierIDs = []string{}
			for _, id := range ids {
				s, _ := id.(string)
				ver.SourceVerifierIDs = append(ver.SourceVerifierIDs, s)
			}
		}
		out[k] = ver
	}
	return out
}

// VerifierOwner is the id of the step that wrote verification id ("" when
// it came from a loaded context).
func (rc *RunContext) VerifierOwner(id string) string {
	rc.st.mu.Lock()
	defer rc.st.mu.Unlock()
	return rc.st.owners[id]
}

// liveSandboxIDs lists sandboxes this run holds and has not torn down,
// plus recorded ones with a handle.
func (rc *RunContext) teardownTargets() []string {
	var ids []string
	seen := map[string]bool{}
	for _, ds := range rc.Sandboxes() {
		if !seen[ds.SandboxID] {
			seen[ds.SandboxID] = true
			ids = append(ids, ds.SandboxID)
		}
	}
	rc.st.mu.Lock()
	for id := range rc.st.live {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for i := 0; i < len(ids); {
		if rc.st.torn[ids[i]] {
			ids = append(ids[:i], ids[i+1:]...)
			continue
		}
		i++
	}
	rc.st.mu.Unlock()
	return ids
}

// toJSONValue converts v to its JSON-shaped form (maps, slices, float64,
// string, bool, nil).
func toJSONValue(v any) any {
	switch v.(type) {
	case nil, string, bool, float64:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func fromJSONValue(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// RandomHex returns 2n hex characters from crypto/rand (default ids such
// as verifier_id and prompt_id).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// EntrySandboxID finds the sandbox_id of the entry named name under key
// ("deployed_agents" by "agent_name", "deployed_envs" by "env_id").
func (rc *RunContext) EntrySandboxID(listKey, nameField, name string) (string, error) {
	rc.st.mu.Lock()
	list, _ := rc.st.doc[listKey].([]any)
	var known []string
	id := ""
	found := false
	for _, e := range list {
		m, _ := e.(map[string]any)
		n, _ := m[nameField].(string)
		if n == name {
			id, _ = m["sandbox_id"].(string)
			found = true
		}
		known = append(known, n)
	}
	rc.st.mu.Unlock()
	if !found {
		kind := strings.TrimSuffix(strings.TrimPrefix(listKey, "deployed_"), "s")
		return "", &NameError{Kind: kind, Name: name, Known: known, Err: ErrUnknownName}
	}
	return id, nil
}

// SandboxByID returns the live sandbox with that id, reconnecting through a
// recorded handle when needed.
func (rc *RunContext) SandboxByID(ctx context.Context, id string) (sandbox.Sandbox, error) {
	rc.st.mu.Lock()
	sb, ok := rc.st.live[id]
	torn := rc.st.torn[id]
	rc.st.mu.Unlock()
	if torn {
		return nil, fmt.Errorf("sandbox %s was torn down: %w", id, sandbox.ErrTerminated)
	}
	if ok {
		return sb, nil
	}
	for _, ds := range rc.Sandboxes() {
		if ds.SandboxID == id {
			_, sb, err := rc.Sandbox(ctx, ds.SandboxName)
			return sb, err
		}
	}
	return nil, &NameError{Kind: "sandbox id", Name: id, Err: ErrUnknownName}
}

// Held lists the live sandboxes of the run that are not torn down (what
// TeardownRun terminates in this process), ordered by id: deploy_sandbox
// sandboxes and the InstanceSandbox of every env and agent.
func (rc *RunContext) Held() []sandbox.Sandbox {
	rc.st.mu.Lock()
	out := make([]sandbox.Sandbox, 0, len(rc.st.live))
	for id, sb := range rc.st.live {
		if !rc.st.torn[id] {
			out = append(out, sb)
		}
	}
	rc.st.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// HoldSandbox keeps a live handle for a sandbox deployed by another kind of
// step (an env or agent host), so that teardown terminates it.
func (rc *RunContext) HoldSandbox(sb sandbox.Sandbox) {
	rc.st.mu.Lock()
	rc.st.live[sb.ID()] = sb
	rc.st.mu.Unlock()
}

// MarkTornDown records that sandbox id was terminated elsewhere (by a
// worker's activity, or before this context was rebuilt from a snapshot):
// later lookups fail with sandbox.ErrTerminated and teardown skips it. The
// id is added to metadata.torn_down_sandbox_ids unless already listed.
func (rc *RunContext) MarkTornDown(id string) {
	rc.st.mu.Lock()
	if rc.st.torn[id] {
		rc.st.mu.Unlock()
		return
	}
	rc.st.torn[id] = true
	delete(rc.st.live, id)
	listed, _ := rc.st.doc[KeyMetadata].(map[string]any)["torn_down_sandbox_ids"].([]any)
	rc.st.mu.Unlock()
	for _, v := range listed {
		if v == id {
			return
		}
	}
	rc.AppendMetadata("torn_down_sandbox_ids", id)
}

// Apply applies ops (a step's changes made elsewhere, such as on a worker)
// to the context document.
func (rc *RunContext) Apply(o Ops) {
	rc.st.mu.Lock()
	o.Apply(rc.st.doc)
	rc.st.mu.Unlock()
}
