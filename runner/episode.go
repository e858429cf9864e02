package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// Episodes let a trainer play some of a task's agents from its own loop:
// the runner runs the task as usual, but the trainer's agents are A2A
// endpoints served in-process (agentsdk) whose handler hands each prompt to
// the trainer as a Turn and waits for Turn.End. Everything else of the task
// (peers, conversations, triggers, verifiers reading the trajectory) works
// unchanged, because to the rest of the task the trainer is an agent.

// EpisodeOptions configures an EpisodeSpec; nil means defaults.
type EpisodeOptions struct {
	// TrainerAgents are the agent names the trainer plays. Empty means the
	// one agent the task prompts; a task prompting several needs them
	// named.
	TrainerAgents []string
	// TurnTimeout is each turn's deadline; 0 means the timeout_seconds of
	// the prompt step that asked (600 by default), or 600 s for turns no
	// prompt step asked (trigger executors).
	TurnTimeout time.Duration
	// AbandonOnTurnTimeout abandons the whole episode when a turn times out
	// (the HTTP server sets it: a client that stops answering is gone).
	// Otherwise the timed-out turn fails like an agent error and the run
	// goes on to its verifiers.
	AbandonOnTurnTimeout bool
	// Context is the initial run context (metadata.user_overrides, seed,
	// agent_model, ...); it is deep-copied for every episode.
	Context map[string]any
	// Documents receives the task instance records; nil records nothing.
	Documents registry.DocumentStore
	// TeardownTimeout bounds each sandbox's teardown; 0 means 120 s.
	TeardownTimeout time.Duration
	// Logger; nil means the runner's.
	Logger *slog.Logger
}

// EpisodeSpec is a task ready to be played: checked once, started many
// times (Start, StartGroup).
type EpisodeSpec struct {
	r        *Runner
	task     *Task
	svc      *Services
	opts     EpisodeOptions
	trainer  map[string]bool
	prompts  map[string][]promptStep // agent name -> the prompt steps asking it
	log      *slog.Logger
	teardown time.Duration
}

// promptStep is what a turn learns from the prompt step that asked it.
type promptStep struct {
	stepID, promptID string
	timeout          time.Duration
}

// ErrEpisodeSpec is matched by every error NewEpisodeSpec returns for a
// task an outside player cannot play.
var ErrEpisodeSpec = errors.New("task cannot be played as an episode")

// EpisodeSpecError names the step (when one is at fault) and why.
type EpisodeSpecError struct {
	StepID string // "" when no single step is at fault
	Reason string
}

func (e *EpisodeSpecError) Error() string {
	if e.StepID == "" {
		return "episode: " + e.Reason
	}
	return fmt.Sprintf("episode: step %q: %s", e.StepID, e.Reason)
}

// Is makes errors.Is(err, ErrEpisodeSpec) hold.
func (e *EpisodeSpecError) Is(target error) bool { return target == ErrEpisodeSpec }

// LoadEpisodeSpec loads a stored task and builds its spec: an unknown task
// fails with the store's not-found error.
func (r *Runner) LoadEpisodeSpec(ctx context.Context, docs registry.DocumentStore, ref registry.Ref, svc *Services, o *EpisodeOptions) (*EpisodeSpec, error) {
	if docs == nil {
		return nil, fmt.Errorf("episode: task %s: %w", ref.ID, ErrNoStore)
	}
	t, err := r.LoadTask(ctx, docs, ref)
	if err != nil {
		return nil, fmt.Errorf("episode: task %s: %w", ref.ID, err)
	}
	return r.NewEpisodeSpec(t, svc, o)
}

// NewEpisodeSpec checks that task can be played with the given trainer
// agents and returns its spec. Every problem names its step: a trainer
// agent no deploy_agent step deploys, a task prompting several agents
// without TrainerAgents, or a step that needs the trainer agent's sandbox
// (an outside player has none).
func (r *Runner) NewEpisodeSpec(task *Task, svc *Services, o *EpisodeOptions) (*EpisodeSpec, error) {
	var opts EpisodeOptions
	if o != nil {
		opts = *o
	}
	if opts.TurnTimeout < 0 {
		return nil, &EpisodeSpecError{Reason: fmt.Sprintf("TurnTimeout must not be negative, got %s", opts.TurnTimeout)}
	}
	if svc == nil {
		svc = &Services{}
	}
	s := &EpisodeSpec{r: r, task: task, svc: svc, opts: opts, trainer: map[string]bool{},
		prompts: map[string][]promptStep{}, log: opts.Logger, teardown: opts.TeardownTimeout}
	if s.log == nil {
		s.log = r.log
	}
	deployed := map[string]string{} // agent name -> deploy step id
	var promptedOrder []string
	for _, d := range task.Steps {
		switch d.Type {
		case "deploy_agent", "deploy_human_agent", "install_agent":
			deployed[fieldString(d, "agent_name", DefaultAgentName)] = d.ID
		case "prompt_agent":
			name := fieldString(d, "agent_name", DefaultAgentName)
			if _, seen := s.prompts[name]; !seen {
				promptedOrder = append(promptedOrder, name)
			}
			timeout := 600 * time.Second
			if secs, ok := fieldNumber(d, "timeout_seconds"); ok && secs > 0 {
				timeout = time.Duration(secs * float64(time.Second))
			}
			s.prompts[name] = append(s.prompts[name], promptStep{stepID: d.ID, promptID: fieldString(d, "prompt_id", ""), timeout: timeout})
		}
	}
	names := opts.TrainerAgents
	if len(names) == 0 {
		switch len(promptedOrder) {
		case 0:
			return nil, &EpisodeSpecError{Reason: "the task has no prompt_agent step, so there is no turn to play"}
		case 1:
			names = promptedOrder
		default:
			var by []string
			for _, n := range promptedOrder {
				by = append(by, fmt.Sprintf("%q (step %s)", n, s.prompts[n][0].stepID))
			}
			return nil, &EpisodeSpecError{Reason: "the task prompts several agents: " + strings.Join(by, ", ") + "; name the ones you play in TrainerAgents"}
		}
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return nil, &EpisodeSpecError{Reason: "TrainerAgents: an agent name is empty"}
		}
		if _, ok := deployed[n]; !ok {
			return nil, &EpisodeSpecError{Reason: fmt.Sprintf("trainer agent %q is not deployed by any step (deployed: %s)", n, describeDeployed(deployed))}
		}
		s.trainer[n] = true
	}
	for _, d := range task.Steps {
		if err := s.checkStep(d, deployed); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Task is the task the spec plays.
func (s *EpisodeSpec) Task() *Task { return s.task }

// TrainerAgents are the agent names the trainer plays, sorted.
func (s *EpisodeSpec) TrainerAgents() []string {
	out := make([]string, 0, len(s.trainer))
	for n := range s.trainer {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// sandboxAgentSteps are the step types that reach into an agent's sandbox
// (files, shell, snapshots) through the named field; an in-process agent
// has none. verify_sandbox and collect_artifacts default to default-agent
// when no other target is given.
var sandboxAgentSteps = map[string]struct {
	field         string
	defaultUnless []string // the default agent applies unless one of these is set
}{
	"load_artifact":        {field: "agent_name"},
	"verify_sandbox":       {field: "agent_name", defaultUnless: []string{"sandbox_name"}},
	"collect_artifacts":    {field: "agent_name", defaultUnless: []string{"sandbox_name", "env_id", "manifest_step_id"}},
	"run_code":             {field: "agent_name"},
	"snapshot_agent_state": {field: "agent_name"},
	"add_skills":           {field: "agent_name"},
	"verify_a2a_install":   {field: "agent_name"},
	"verify_a2a_snapshot":  {field: "agent_name"},
}

func (s *EpisodeSpec) checkStep(d *StepDef, deployed map[string]string) error {
	if d.Type == "deploy_agent" {
		name := fieldString(d, "agent_name", DefaultAgentName)
		if s.trainer[name] && fieldString(d, "sandbox_name", "") != "" {
			return &EpisodeSpecError{StepID: d.ID, Reason: fmt.Sprintf("deploy_agent places trainer agent %q on sandbox %q; an outside player has no sandbox", name, fieldString(d, "sandbox_name", ""))}
		}
		return nil
	}
	rule, ok := sandboxAgentSteps[d.Type]
	if !ok {
		return nil
	}
	name := fieldString(d, rule.field, "")
	if name == "" && rule.defaultUnless != nil {
		name = DefaultAgentName
		for _, f := range rule.defaultUnless {
			if fieldString(d, f, "") != "" {
				name = ""
			}
		}
	}
	if name != "" && s.trainer[name] {
		return &EpisodeSpecError{StepID: d.ID, Reason: fmt.Sprintf("%s works in the sandbox of trainer agent %q; an outside player has no sandbox", d.Type, name)}
	}
	return nil
}

func describeDeployed(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for n, step := range m {
		out = append(out, fmt.Sprintf("%q by step %s", n, step))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// fieldString reads a string field of a step as written in the task.
func fieldString(d *StepDef, name, def string) string {
	raw, ok := d.Fields[name]
	if !ok {
		return def
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || s == "" {
		return def
	}
	return s
}

func fieldNumber(d *StepDef, name string) (float64, bool) {
	raw, ok := d.Fields[name]
	if !ok {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}
