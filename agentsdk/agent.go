package agentsdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/agentenv/agentenv/protocol"
)

// Agent runs tasks. Handler is the usual implementation; a struct may
// implement Agent to also implement the optional interfaces below.
type Agent interface {
	Run(ctx context.Context, t *Task) (*Result, error)
}

// Handler is an Agent made of one function.
type Handler func(ctx context.Context, t *Task) (*Result, error)

// Run calls h.
func (h Handler) Run(ctx context.Context, t *Task) (*Result, error) { return h(ctx, t) }

// Middleware wraps a Handler (logging, metrics, policy), net/http style.
type Middleware func(Handler) Handler

// Optional interfaces: Configurable, Streamer, SkillInstaller.

// Configurable is implemented by agents with typed settings. ConfigDefaults
// returns a pointer to a struct whose json tags are the agent-config wire
// names and whose values are the defaults; a field tagged
// `agentenv:"writeonly"` is a secret that reads back as "***". If the
// struct has a Validate() error method it is called on every set.
type Configurable interface {
	ConfigDefaults() any
}

// Streamer is implemented by agents that stream progress: when Streaming
// returns true the card says streaming:true, message/stream is served and
// Task.Emit sends progress events.
type Streamer interface {
	Streaming() bool
}

// Result is what a successful run returns.
type Result struct {
	// Parts of the terminal message, in order; at least one is required.
	Parts []protocol.Part
	// StructuredOutput, when non-nil, becomes a {"structured_output": …}
	// data part after Parts.
	StructuredOutput json.RawMessage
	// Usage is reported in the trailing data part when non-zero.
	Usage protocol.Usage
	// SessionRef is handed to the next task of the same context
	// (Task.SessionRef); it never travels on the wire.
	SessionRef string
	// Trajectory, when set, is the task's native trajectory (compact JSON);
	// it wins over the events logged to Task.Trajectory for whole reads.
	Trajectory json.RawMessage
}

// Text returns a Result with one text part.
func Text(text string) *Result { return &Result{Parts: []protocol.Part{protocol.TextPart(text)}} }

// Failure is an expected failure: the task ends failed with Parts (default:
// one text part with Message) and the trailing data part
// {error_type, error_code, error_message}. Return it as the run's error.
type Failure struct {
	// Type is protocol.ErrorTypeAgent (default) or protocol.ErrorTypeInfra.
	Type    string
	Code    string
	Message string
	Parts   []protocol.Part
	// Usage consumed before failing, reported with the error.
	Usage protocol.Usage
}

// Fail returns an agent_error Failure.
func Fail(code, message string) *Failure {
	return &Failure{Type: protocol.ErrorTypeAgent, Code: code, Message: message}
}

// InfraFail returns an infra_error Failure.
func InfraFail(code, message string) *Failure {
	return &Failure{Type: protocol.ErrorTypeInfra, Code: code, Message: message}
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// ErrTaskEnded is returned by Task.Emit after the run returned.
var ErrTaskEnded = errors.New("agentsdk: the task has ended")

// ErrNotStreaming is returned by Task.Emit when the agent does not stream.
var ErrNotStreaming = errors.New("agentsdk: agent does not stream (implement Streamer)")

// Task is one run's request. It is detached from the caller's data: the
// run may keep it, but changing it changes nothing on the server.
type Task struct {
	ID, ContextID string
	// Parts of the user message (text, data with exact JSON, file).
	Parts []protocol.Part
	// Metadata is the inbound message.metadata with "role" overridden by
	// the configured role when set.
	Metadata map[string]any
	// Role is the configured agent-config role ("" when unset).
	Role string
	// MCPServers are the servers added through mcp-config, by name.
	MCPServers map[string]MCPServer
	// Skills are the skills added through skill-config (identity skills
	// of the card excluded).
	Skills []RegisteredSkill
	// Peers is the peer-agents routing table.
	Peers []protocol.Peer
	// SessionRef is the last Result.SessionRef of this context.
	SessionRef string
	// Header holds the HTTP headers of the A2A request that created the
	// task (X-A2A-Extensions, AgentEnv-Role, …).
	Header http.Header
	// Trajectory is this task's live trajectory log.
	Trajectory *TrajectoryLog

	config   map[string]json.RawMessage
	srv      *Server
	emit     func(ctx context.Context, parts []protocol.Part, metadata map[string]any) error
	sessions *mcpSessions
	ended    atomic.Bool
}

// MCPServer is one server registered through mcp-config.
type MCPServer struct {
	URL string
	// Headers to send (sandbox auth); nil when none.
	Headers map[string]string
}

// Text joins the text parts with newlines.
func (t *Task) Text() string {
	var b []string
	for _, p := range t.Parts {
		if p.Kind == protocol.PartKindText {
			b = append(b, p.Text)
		}
	}
	return strings.Join(b, "\n")
}

// Config decodes the effective config (defaults ∪ values set so far) into
// dst, a pointer to the agent's config struct (or any struct or map).
func (t *Task) Config(dst any) error {
	b, err := json.Marshal(t.config)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// ConfigValue is the raw effective value of one wire name (nil if unset
// and without default).
func (t *Task) ConfigValue(name string) json.RawMessage { return t.config[name] }

// Emit sends a progress event (a working status update carrying parts).
// It fails with ErrNotStreaming unless the agent implements Streamer.
func (t *Task) Emit(ctx context.Context, parts []protocol.Part, metadata map[string]any) error {
	if t.emit == nil {
		return ErrNotStreaming
	}
	return t.emit(ctx, parts, metadata)
}
