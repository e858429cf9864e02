// Package agentsdk serves an AgentEnv agent over A2A 0.3 (JSON-RPC at /a2a,
// the card at both well-known paths, /health) with the AgentEnv REST
// extensions the runner drives: mcp-config (which MCP servers the agent
// may use), agent-config (typed settings), trajectory (what the agent did)
// and peer-agents (other agents it may delegate to).
//
// An agent is one function. The SDK turns its result into the terminal
// A2A message the runner reads, turns a *Failure into the reference's failed
// status with a trailing error data part, and turns anything else (a
// panic, an unexpected error) into an opaque failure whose correlation id
// is the only link to the logged cause.
//
//	srv, err := agentsdk.New(&agentsdk.Card{Name: "echo", Description: "Echoes", Version: "1.0.0"},
//		&agentsdk.Options{Agent: agentsdk.Handler(func(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
//			return agentsdk.Text("you said: " + t.Text()), nil
//		})})
//	if err != nil { … }
//	err = srv.ListenAndServe(ctx) // $A2A_HOST:$A2A_PORT, default 0.0.0.0:8000
//
// The SDK serves mcp-config, agent-config, skill-config, trajectory and
// peer-agents for every agent. Extra abilities are optional interfaces the
// Agent may implement: Configurable (a typed config struct for
// agent-config), Streamer (message/stream with progress events through
// Task.Emit), SkillInstaller (install skills as they are added),
// TriggerHost (the triggers extension of user simulators),
// ExtensionProvider (custom /ext/… operations) and OperationOverrider
// (replace SDK operations, with the default as next).
//
// Trajectories: the runner reads each turn's trajectory after the turn
// and stores it with the run. An agent appends JSON-object events to
// Task.Trajectory as it works, or returns a whole one in
// Result.Trajectory, or records nothing; the last is a quiet default (a
// whole read answers 404, the runner stores no trajectory for the turn
// and logs nothing above debug level).
//
// Subpackages: agentsdktest (serve an agent on loopback and drive it like
// the runner) and llm (an OpenAI-compatible model client whose failures
// are typed *Failure values).
//
// Tasks of one context run one at a time, in arrival order; different
// contexts run concurrently. The SDK is built on a2a-go v0.3.3 and works
// around its JSON-RPC handler not passing HTTP headers to the agent (see
// headers.go), so X-A2A-Extensions and AgentEnv-Role reach Task.Header.
package agentsdk
