package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// EpisodeStartRequest is the body of POST /episodes.
type EpisodeStartRequest struct {
	TaskID      string `json:"task_id"`
	TaskVersion int    `json:"task_version,omitempty"`
	// TrainerAgents are the agents the client plays (default: the one the
	// task prompts).
	TrainerAgents []string `json:"trainer_agents,omitempty"`
	// TurnTimeoutSeconds is each turn's deadline (default: the prompt
	// step's timeout_seconds).
	TurnTimeoutSeconds float64 `json:"turn_timeout_seconds,omitempty"`
	// K starts that many episodes of the task at once (default 1).
	K int `json:"k,omitempty"`
}

// EpisodeSpecFunc builds the spec of a start request from the stores; o
// carries the request's trainer agents and turn timeout, with
// AbandonOnTurnTimeout set. An unknown task must fail matching
// registry.ErrNotFound.
type EpisodeSpecFunc func(ctx context.Context, ref registry.Ref, o *EpisodeOptions) (*EpisodeSpec, error)

// EpisodeServerOptions configures an EpisodeServer; nil means defaults.
type EpisodeServerOptions struct {
	// MaxEpisodes bounds the episodes running at once (429 past it);
	// 0 means 256.
	MaxEpisodes int
	// MaxWait caps a long poll's wait_seconds; 0 means 60 s.
	MaxWait time.Duration
	// Retention is how long an ended episode's result stays readable;
	// 0 means 10 minutes.
	Retention time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// EpisodeServer serves episodes over REST/JSON (docs/episodes.md) so a
// trainer in any language plays agents with plain HTTP and any MCP client.
// A client that disappears stops ending turns: its turns time out and the
// episode is abandoned and torn down.
type EpisodeServer struct {
	specs EpisodeSpecFunc
	opts  EpisodeServerOptions
	mux   *http.ServeMux

	mu     sync.Mutex
	eps    map[string]*servedEpisode
	live   int
	closed bool
}

type servedEpisode struct {
	ep *Episode

	mu      sync.Mutex
	pending []*Turn // taken from the episode, not yet delivered
	turns   map[string]*servedTurn
}

type servedTurn struct {
	t     *Turn
	once  sync.Once
	tools *TurnTools
	err   error
}

// NewEpisodeServer returns the server; specs is required.
func NewEpisodeServer(specs EpisodeSpecFunc, o *EpisodeServerOptions) *EpisodeServer {
	if specs == nil {
		panic("runner: NewEpisodeServer needs an EpisodeSpecFunc")
	}
	s := &EpisodeServer{specs: specs, eps: map[string]*servedEpisode{}}
	if o != nil {
		s.opts = *o
	}
	if s.opts.MaxEpisodes <= 0 {
		s.opts.MaxEpisodes = 256
	}
	if s.opts.MaxWait <= 0 {
		s.opts.MaxWait = 60 * time.Second
	}
	if s.opts.Retention <= 0 {
		s.opts.Retention = 10 * time.Minute
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := http.NewServeMux()
	for _, rt := range s.routes() {
		m.HandleFunc(rt.pattern, rt.handle)
	}
	s.mux = m
	return s
}

// EpisodeRoute is one route of an EpisodeServer, as a person reads it.
type EpisodeRoute struct {
	// Method is the HTTP method ("" for the MCP route, which takes POST
	// and DELETE).
	Method string
	// Path is the route with its placeholders ({id}, {turn_id}, {server})
	// and its main query parameter.
	Path string
	// Doc says what the route does.
	Doc string
}

type episodeRoute struct {
	EpisodeRoute
	pattern string
	handle  http.HandlerFunc
}

// routes is the one list of the server's routes: NewEpisodeServer serves
// it and Routes describes it, so the two cannot disagree.
func (s *EpisodeServer) routes() []episodeRoute {
	return []episodeRoute{
		{EpisodeRoute{"POST", "/episodes", `start episodes of a task: {"task_id": ..., "k"?: N}`}, "POST /episodes", s.start},
		{EpisodeRoute{"GET", "/episodes/{id}", "whether an episode is running"}, "GET /episodes/{id}", s.status},
		{EpisodeRoute{"GET", "/episodes/{id}/turns/next?wait_seconds=30", "the next turn to play (long poll)"}, "GET /episodes/{id}/turns/next", s.next},
		{EpisodeRoute{"POST", "/episodes/{id}/turns/{turn_id}/end", `end a turn with the agent's reply: {"response": ...}`}, "POST /episodes/{id}/turns/{turn}/end", s.end},
		{EpisodeRoute{"POST", "/episodes/{id}/abandon", "stop an episode and tear it down"}, "POST /episodes/{id}/abandon", s.abandon},
		{EpisodeRoute{"GET", "/episodes/{id}/result?wait_seconds=30", "scores, with each verifier's rows"}, "GET /episodes/{id}/result", s.result},
		{EpisodeRoute{"", "/episodes/{id}/turns/{turn_id}/mcp/{server}", "a turn's MCP endpoint for one env server"}, "/episodes/{id}/turns/{turn}/mcp/{server}", s.mcp},
	}
}

// Routes lists the served routes, in the order a client uses them.
func (s *EpisodeServer) Routes() []EpisodeRoute {
	rs := s.routes()
	out := make([]EpisodeRoute, len(rs))
	for i, r := range rs {
		out[i] = r.EpisodeRoute
	}
	return out
}

// ServeHTTP serves the routes.
func (s *EpisodeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close abandons every running episode and waits for their teardown (or
// ctx); later starts are refused.
func (s *EpisodeServer) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	eps := make([]*servedEpisode, 0, len(s.eps))
	for _, se := range s.eps {
		eps = append(eps, se)
	}
	s.mu.Unlock()
	var errs []error
	for _, se := range eps {
		if err := se.ep.Abandon(ctx, "the episode server is shutting down"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Live is how many started episodes are still running. It reads each
// episode's done channel rather than the admission counter, which is
// released by a goroutine a moment after an episode ends: an Abandon that
// has returned is never counted.
func (s *EpisodeServer) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, se := range s.eps {
		select {
		case <-se.ep.Done():
		default:
			n++
		}
	}
	return n
}

type apiError struct {
	status int
	code   string
	msg    string
}

func writeEpisodeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeAPIError(w http.ResponseWriter, e apiError) {
	writeEpisodeJSON(w, e.status, map[string]string{"error": e.msg, "code": e.code})
}

func decodeStrict(r *http.Request, dst any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("invalid JSON body: %w", err)
	}
	return nil
}

func (s *EpisodeServer) start(w http.ResponseWriter, r *http.Request) {
	var req EpisodeStartRequest
	if err := decodeStrict(r, &req); err != nil {
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", err.Error()})
		return
	}
	switch {
	case req.TaskID == "":
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", "task_id: required"})
		return
	case req.TaskVersion < 0:
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", "task_version: must be >= 1"})
		return
	case req.TurnTimeoutSeconds < 0:
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", "turn_timeout_seconds: must not be negative"})
		return
	case req.K < 0 || req.K > s.opts.MaxEpisodes:
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("k: must be between 1 and %d", s.opts.MaxEpisodes)})
		return
	}
	k := max(req.K, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeAPIError(w, apiError{http.StatusServiceUnavailable, "shutting_down", "the episode server is shutting down"})
		return
	}
	if s.live+k > s.opts.MaxEpisodes {
		s.mu.Unlock()
		writeAPIError(w, apiError{http.StatusTooManyRequests, "too_many_episodes", fmt.Sprintf("%d episodes are running (at most %d)", s.live, s.opts.MaxEpisodes)})
		return
	}
	s.live += k // reserved
	s.mu.Unlock()
	eps, err := s.startEpisodes(r.Context(), req, k)
	if err != nil {
		s.mu.Lock()
		s.live -= k
		s.mu.Unlock()
		switch {
		case errors.Is(err, registry.ErrNotFound):
			writeAPIError(w, apiError{http.StatusNotFound, "unknown_task", err.Error()})
		case errors.Is(err, ErrEpisodeSpec), errors.Is(err, registry.ErrInvalid):
			writeAPIError(w, apiError{http.StatusBadRequest, "bad_spec", err.Error()})
		default:
			s.opts.Logger.Error("episode start", "task_id", req.TaskID, "error", err)
			writeAPIError(w, apiError{http.StatusInternalServerError, "start_failed", err.Error()})
		}
		return
	}
	out := make([]map[string]string, 0, len(eps))
	for _, ep := range eps {
		out = append(out, map[string]string{"episode_id": ep.ID, "instance_id": ep.InstanceID()})
	}
	writeEpisodeJSON(w, http.StatusCreated, map[string]any{"episodes": out})
}

func (s *EpisodeServer) startEpisodes(ctx context.Context, req EpisodeStartRequest, k int) ([]*Episode, error) {
	spec, err := s.specs(ctx, registry.Ref{ID: req.TaskID, Version: req.TaskVersion}, &EpisodeOptions{
		TrainerAgents: req.TrainerAgents, TurnTimeout: time.Duration(req.TurnTimeoutSeconds * float64(time.Second)),
		AbandonOnTurnTimeout: true})
	if err != nil {
		return nil, err
	}
	eps, err := spec.StartGroup(ctx, k)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	for _, ep := range eps {
		s.eps[ep.ID] = &servedEpisode{ep: ep, turns: map[string]*servedTurn{}}
	}
	s.mu.Unlock()
	for _, ep := range eps {
		go func() {
			<-ep.Done()
			s.mu.Lock()
			s.live--
			s.mu.Unlock()
			time.AfterFunc(s.opts.Retention, func() {
				s.mu.Lock()
				delete(s.eps, ep.ID)
				s.mu.Unlock()
			})
		}()
	}
	return eps, nil
}

func (s *EpisodeServer) episode(w http.ResponseWriter, r *http.Request) *servedEpisode {
	id := r.PathValue("id")
	s.mu.Lock()
	se := s.eps[id]
	s.mu.Unlock()
	if se == nil {
		writeAPIError(w, apiError{http.StatusNotFound, "unknown_episode", fmt.Sprintf("no episode %q", id)})
	}
	return se
}

func (s *EpisodeServer) status(w http.ResponseWriter, r *http.Request) {
	se := s.episode(w, r)
	if se == nil {
		return
	}
	st := "running"
	select {
	case <-se.ep.Done():
		st = "ended"
	default:
	}
	writeEpisodeJSON(w, http.StatusOK, map[string]string{"episode_id": se.ep.ID, "instance_id": se.ep.InstanceID(), "status": st})
}

// waitParam reads ?wait_seconds (default 30, capped at MaxWait).
func (s *EpisodeServer) waitParam(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	wait := min(30*time.Second, s.opts.MaxWait)
	if v := r.URL.Query().Get("wait_seconds"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", "wait_seconds: must be a non-negative number"})
			return 0, false
		}
		wait = min(time.Duration(f*float64(time.Second)), s.opts.MaxWait)
	}
	return wait, true
}

func (s *EpisodeServer) next(w http.ResponseWriter, r *http.Request) {
	se := s.episode(w, r)
	if se == nil {
		return
	}
	wait, ok := s.waitParam(w, r)
	if !ok {
		return
	}
	se.mu.Lock()
	var t *Turn
	if len(se.pending) > 0 {
		t, se.pending = se.pending[0], se.pending[1:]
	}
	se.mu.Unlock()
	var err error
	if t == nil {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		t, err = se.ep.NextTurn(ctx)
		cancel()
	}
	if t != nil && r.Context().Err() != nil { // the client left: keep the turn for the next poll
		se.mu.Lock()
		se.pending = append(se.pending, t)
		se.mu.Unlock()
		return
	}
	switch {
	case t != nil:
		se.mu.Lock()
		se.turns[t.ID] = &servedTurn{t: t}
		se.mu.Unlock()
		writeEpisodeJSON(w, http.StatusOK, map[string]any{"turn": turnJSON(r, se.ep, t), "done": false})
	case errors.Is(err, ErrEpisodeAbandoned):
		writeEpisodeJSON(w, http.StatusOK, map[string]any{"turn": nil, "done": true, "abandoned": err.Error()})
	case err != nil: // the wait ended
		writeEpisodeJSON(w, http.StatusOK, map[string]any{"turn": nil, "done": false})
	default:
		writeEpisodeJSON(w, http.StatusOK, map[string]any{"turn": nil, "done": true})
	}
}

// turnJSON is a turn as the client sees it: MCP servers are this server's
// per-turn MCP endpoints, which record each call in the agent's trajectory.
func turnJSON(r *http.Request, ep *Episode, t *Turn) map[string]any {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	var servers []map[string]any
	names := make([]string, 0, len(t.MCPServers))
	for n := range t.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		headers := map[string]string{}
		if t.Role != "" {
			headers["AgentEnv-Role"] = t.Role
		}
		servers = append(servers, map[string]any{"name": n,
			"url":     fmt.Sprintf("%s://%s/episodes/%s/turns/%s/mcp/%s", scheme, r.Host, ep.ID, t.ID, n),
			"headers": headers})
	}
	if servers == nil {
		servers = []map[string]any{}
	}
	return map[string]any{"turn_id": t.ID, "episode_id": ep.ID, "agent_name": t.AgentName, "prompt_id": t.PromptID,
		"step_id": t.StepID, "system_prompt": t.SystemPrompt, "prompt": t.Prompt, "parts": t.Parts, "role": t.Role,
		"config": t.Config, "deadline": t.Deadline.UTC().Format(time.RFC3339Nano),
		"deadline_seconds": max(time.Until(t.Deadline).Seconds(), 0), "mcp_servers": servers}
}

func (s *EpisodeServer) turn(w http.ResponseWriter, r *http.Request) (*servedEpisode, *servedTurn) {
	se := s.episode(w, r)
	if se == nil {
		return nil, nil
	}
	id := r.PathValue("turn")
	se.mu.Lock()
	st := se.turns[id]
	se.mu.Unlock()
	if st == nil {
		writeAPIError(w, apiError{http.StatusNotFound, "unknown_turn", fmt.Sprintf("episode %s has handed out no turn %q", se.ep.ID, id)})
		return nil, nil
	}
	return se, st
}

func (s *EpisodeServer) end(w http.ResponseWriter, r *http.Request) {
	_, st := s.turn(w, r)
	if st == nil {
		return
	}
	var body struct {
		Response *string `json:"response"`
	}
	if err := decodeStrict(r, &body); err != nil {
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", err.Error()})
		return
	}
	if body.Response == nil {
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", "response: required"})
		return
	}
	if err := st.t.End(r.Context(), *body.Response); err != nil {
		code := "turn_ended"
		if errors.Is(err, ErrTurnTimedOut) {
			code = "turn_timed_out"
		}
		writeAPIError(w, apiError{http.StatusConflict, code, err.Error()})
		return
	}
	writeEpisodeJSON(w, http.StatusOK, map[string]any{"status": "ended", "turn_id": st.t.ID, "tool_call_count": st.t.ToolCalls()})
}

func (s *EpisodeServer) abandon(w http.ResponseWriter, r *http.Request) {
	se := s.episode(w, r)
	if se == nil {
		return
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeStrict(r, &body); err != nil {
		writeAPIError(w, apiError{http.StatusBadRequest, "bad_request", err.Error()})
		return
	}
	if err := se.ep.Abandon(r.Context(), body.Reason); err != nil {
		writeAPIError(w, apiError{http.StatusGatewayTimeout, "teardown_pending", "abandoned; teardown still running: " + err.Error()})
		return
	}
	res, _ := se.ep.Result(r.Context())
	writeEpisodeJSON(w, http.StatusOK, map[string]any{"status": "abandoned", "result": res})
}

func (s *EpisodeServer) result(w http.ResponseWriter, r *http.Request) {
	se := s.episode(w, r)
	if se == nil {
		return
	}
	wait, ok := s.waitParam(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	res, err := se.ep.Result(ctx)
	if err != nil {
		writeEpisodeJSON(w, http.StatusAccepted, map[string]string{"episode_id": se.ep.ID, "status": "running"})
		return
	}
	writeEpisodeJSON(w, http.StatusOK, res)
}
