package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/registry"
)

// ErrEpisodeAbandoned is matched by NextTurn's error once the episode was
// abandoned (by Abandon, or by a timed-out turn under
// AbandonOnTurnTimeout).
var ErrEpisodeAbandoned = errors.New("episode abandoned")

// AbandonedError carries the reason given to Abandon.
type AbandonedError struct{ Reason string }

func (e *AbandonedError) Error() string { return "episode abandoned: " + e.Reason }

// Is makes errors.Is(err, ErrEpisodeAbandoned) hold.
func (e *AbandonedError) Is(target error) bool { return target == ErrEpisodeAbandoned }

// Episode is one run of a task with the trainer playing its agents.
type Episode struct {
	// ID names the episode ("ep-<16 hex>").
	ID string

	spec       *EpisodeSpec
	rc         *RunContext
	instanceID string
	cancel     context.CancelCauseFunc
	turnCh     chan *Turn
	stopping   chan struct{} // closed when the run returned: handlers give up
	done       chan struct{} // closed after teardown: Result is ready
	agents     map[string]*hostedEndpoint

	mu        sync.Mutex
	active    map[string][]promptStep // agent -> prompt steps running now
	abandoned *AbandonedError
	timedOut  []string
	turnSeq   int
	open      map[*Turn]bool // turns handed to the handler and not returned
	result    *EpisodeResult
}

// hostedEndpoint is one trainer agent served in-process.
type hostedEndpoint struct {
	name string
	url  string
	sdk  *agentsdk.Server
	http *http.Server
	ln   net.Listener
}

// EpisodeResult is what the run recorded.
type EpisodeResult struct {
	EpisodeID  string `json:"episode_id"`
	InstanceID string `json:"instance_id"`
	TaskID     string `json:"task_id"`
	// Status is the task instance status: completed, failed or cancelled
	// (an abandoned episode).
	Status string `json:"status"`
	// Abandoned is the reason the episode was abandoned ("" when not).
	Abandoned string `json:"abandoned,omitempty"`
	// Error is the run's fatal error ("" when none).
	Error string `json:"error,omitempty"`
	// Scores maps each verifier step id to its score: the numbers
	// `agent-env task run` prints as "score (verifier_id=…)".
	Scores map[string]float64 `json:"scores"`
	// Verifications lists every verification in step order.
	Verifications []EpisodeScore `json:"verifications"`
	// FailedSteps are the run's metadata.failed_steps.
	FailedSteps []FailedStep `json:"failed_steps"`
	// TimedOutTurns are the turns whose deadline passed before End.
	TimedOutTurns []string `json:"timed_out_turns"`
	// TornDown is how many sandboxes teardown terminated.
	TornDown int `json:"torn_down"`
}

// EpisodeScore is one verification of the run, with the rows that
// explain its score.
type EpisodeScore struct {
	StepID     string  `json:"step_id"`
	VerifierID string  `json:"verifier_id"`
	Score      float64 `json:"score"`
	// Results are the verifier's rows (criterion, result, score,
	// justification, ...); empty for an aggregate, which names its
	// sources in SourceVerifierIDs instead.
	Results           []Row    `json:"results"`
	SourceVerifierIDs []string `json:"source_verifier_ids,omitempty"`
}

// Start deploys nothing itself: it serves the trainer agents on loopback
// and starts the task's run in the background; the run's steps deploy the
// rest. ctx bounds Start only; the run lives until it ends or Abandon.
func (s *EpisodeSpec) Start(ctx context.Context) (*Episode, error) {
	return s.start(ctx, registry.RandomSuffix(32))
}

// StartGroup starts k episodes of the spec at once, sharing one
// run_group_id (batched rollouts). When one fails to start, the ones
// started are abandoned.
func (s *EpisodeSpec) StartGroup(ctx context.Context, k int) ([]*Episode, error) {
	if k < 1 {
		return nil, fmt.Errorf("episode: k must be at least 1, got %d", k)
	}
	group := registry.RandomSuffix(32)
	eps := make([]*Episode, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() { eps[i], errs[i] = s.start(ctx, group) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, ep := range eps {
			if ep != nil {
				_ = ep.Abandon(context.WithoutCancel(ctx), "a sibling episode failed to start")
			}
		}
		return nil, err
	}
	return eps, nil
}

func (s *EpisodeSpec) start(ctx context.Context, group string) (ep *Episode, err error) {
	ep = &Episode{ID: "ep-" + RandomHex(8), spec: s, turnCh: make(chan *Turn), stopping: make(chan struct{}),
		done: make(chan struct{}), agents: map[string]*hostedEndpoint{}, active: map[string][]promptStep{}, open: map[*Turn]bool{}}
	defer func() {
		if err != nil {
			ep.closeAgents()
		}
	}()
	for _, name := range s.TrainerAgents() {
		h, err := ep.serveAgent(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("episode: serve agent %q: %w", name, err)
		}
		ep.agents[name] = h
	}
	initial := map[string]any{}
	if s.opts.Context != nil {
		initial = deepCopy(toJSONValue(s.opts.Context)).(map[string]any)
	}
	ep.rc = NewRunContext(initial, s.svc)
	ep.rc.SetMetadata("run_group_id", group)
	ep.rc.SetMetadata("runner", "episode")
	ep.rc.SetMetadata("episode_id", ep.ID)
	ep.instanceID = registry.NewInstanceID(s.task.ID)
	runCtx, cancel := context.WithCancelCause(WithAgentHost(context.WithoutCancel(ctx), ep))
	ep.cancel = cancel
	go ep.run(runCtx)
	return ep, nil
}

// HostedAgent implements AgentHost: trainer agents are served here.
func (ep *Episode) HostedAgent(name string) (HostedAgent, bool) {
	h, ok := ep.agents[name]
	if !ok {
		return HostedAgent{}, false
	}
	return HostedAgent{BaseURL: h.url}, true
}

var _ AgentHost = (*Episode)(nil)

// InstanceID is the task instance the run records.
func (ep *Episode) InstanceID() string { return ep.instanceID }

// Done is closed once the run ended and was torn down.
func (ep *Episode) Done() <-chan struct{} { return ep.done }

func (ep *Episode) run(ctx context.Context) {
	s := ep.spec
	res, runErr := s.r.Run(ctx, s.task, ep.rc, &RunOptions{
		InstanceID: ep.instanceID, Documents: s.opts.Documents,
		OnStepStart: func(_, _ int, d *StepDef) {
			if d.Type != "prompt_agent" {
				return
			}
			name := fieldString(d, "agent_name", DefaultAgentName)
			for _, p := range s.prompts[name] {
				if p.stepID == d.ID {
					ep.mu.Lock()
					ep.active[name] = append(ep.active[name], p)
					ep.mu.Unlock()
				}
			}
		},
		OnStepComplete: func(_, _ int, d *StepDef, _ float64, _ error) {
			if d.Type != "prompt_agent" {
				return
			}
			name := fieldString(d, "agent_name", DefaultAgentName)
			ep.mu.Lock()
			defer ep.mu.Unlock()
			l := ep.active[name]
			for i, p := range l {
				if p.stepID == d.ID {
					ep.active[name] = append(l[:i:i], l[i+1:]...)
					break
				}
			}
		},
	})
	close(ep.stopping)
	ep.mu.Lock()
	for t := range ep.open { // no turn outlives the run, even before its handler notices
		t.finish(turnCancelled)
	}
	ep.mu.Unlock()
	n, terr := s.r.TeardownRun(context.WithoutCancel(ctx), ep.rc, s.teardown)
	if terr != nil {
		s.log.Warn("episode teardown", "episode_id", ep.ID, "error", terr)
	}
	ep.closeAgents()
	out := &EpisodeResult{EpisodeID: ep.ID, InstanceID: ep.instanceID, TaskID: s.task.ID, Status: res.Status,
		Scores: map[string]float64{}, Verifications: []EpisodeScore{}, FailedSteps: res.Failed, TornDown: n}
	if out.FailedSteps == nil {
		out.FailedSteps = []FailedStep{}
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	order := map[string]int{}
	for i, d := range s.task.Steps {
		order[d.ID] = i
	}
	for id, v := range ep.rc.Verifications() {
		rows := v.Results
		if rows == nil {
			rows = []Row{}
		}
		out.Verifications = append(out.Verifications, EpisodeScore{StepID: ep.rc.VerifierOwner(id), VerifierID: id, Score: v.Score,
			Results: rows, SourceVerifierIDs: v.SourceVerifierIDs})
	}
	sort.Slice(out.Verifications, func(i, j int) bool {
		a, b := out.Verifications[i], out.Verifications[j]
		if order[a.StepID] != order[b.StepID] {
			return order[a.StepID] < order[b.StepID]
		}
		return a.VerifierID < b.VerifierID
	})
	for _, v := range out.Verifications {
		if _, dup := out.Scores[v.StepID]; !dup {
			out.Scores[v.StepID] = v.Score
		}
	}
	ep.mu.Lock()
	if ep.abandoned != nil {
		out.Abandoned = ep.abandoned.Reason
	}
	out.TimedOutTurns = append([]string{}, ep.timedOut...)
	ep.result = out
	ep.mu.Unlock()
	ep.cancel(nil)
	close(ep.done)
}

func (ep *Episode) closeAgents() {
	for _, h := range ep.agents {
		_ = h.http.Close()
		_ = h.sdk.Close()
	}
}

// NextTurn waits for the next turn. It returns nil, nil when the run
// ended and no turn is left, and an error matching ErrEpisodeAbandoned
// once the episode was abandoned.
func (ep *Episode) NextTurn(ctx context.Context) (*Turn, error) {
	select {
	case t := <-ep.turnCh:
		return t, nil
	case <-ep.stopping:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.abandoned != nil {
		return nil, ep.abandoned
	}
	return nil, nil
}

// Abandon stops the run (its instance is recorded cancelled with the
// reason), ends every open turn and waits until everything the run
// deployed is torn down, or ctx ends. Abandoning an episode that already
// ended does nothing.
func (ep *Episode) Abandon(ctx context.Context, reason string) error {
	if reason == "" {
		reason = "abandoned by the trainer"
	}
	ep.mu.Lock()
	if ep.abandoned == nil && ep.result == nil {
		ep.abandoned = &AbandonedError{Reason: reason}
		ep.cancel(ep.abandoned)
	}
	ep.mu.Unlock()
	select {
	case <-ep.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Result waits for the run to end (and be torn down) and returns what it
// recorded.
func (ep *Episode) Result(ctx context.Context) (*EpisodeResult, error) {
	select {
	case <-ep.done:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	r := *ep.result
	r.Scores = maps.Clone(ep.result.Scores)
	r.Verifications = slices.Clone(ep.result.Verifications)
	return &r, nil
}

// promptFor picks the running prompt step that asked agent (the oldest).
func (ep *Episode) promptFor(agent string) promptStep {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if l := ep.active[agent]; len(l) > 0 {
		return l[0]
	}
	return promptStep{}
}

func (ep *Episode) turnTimedOut(t *Turn) {
	ep.mu.Lock()
	ep.timedOut = append(ep.timedOut, t.ID)
	abandon := ep.spec.opts.AbandonOnTurnTimeout && ep.abandoned == nil && ep.result == nil
	if abandon {
		ep.abandoned = &AbandonedError{Reason: fmt.Sprintf("turn %s timed out after %s", t.ID, t.timeout)}
		ep.cancel(ep.abandoned)
	}
	ep.mu.Unlock()
}

// track records t as open (or not) for the run's end.
func (ep *Episode) track(t *Turn, open bool) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if open {
		ep.open[t] = true
	} else {
		delete(ep.open, t)
	}
}

func (ep *Episode) nextTurnID() string {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.turnSeq++
	return fmt.Sprintf("t%d", ep.turnSeq)
}

// serveAgent serves one trainer agent on a loopback port.
func (ep *Episode) serveAgent(ctx context.Context, name string) (*hostedEndpoint, error) {
	sdk, err := agentsdk.New(&agentsdk.Card{Name: name, Description: "An agent played by a trainer through an episode", Version: "0.1.0"},
		&agentsdk.Options{Agent: &trainerAgent{ep: ep, name: name}, Logger: ep.spec.log})
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: sdk, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return &hostedEndpoint{name: name, url: "http://" + ln.Addr().String(), sdk: sdk, http: hs, ln: ln}, nil
}
