package explorer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// RunSummary is one row of the runs list.
type RunSummary struct {
	InstanceID  string `json:"instance_id"`
	TaskID      string `json:"task_id"`
	TaskVersion int    `json:"task_version"`
	Status      string `json:"status"`
	CreatedAt   string `json:"created_at_utc"`
	CompletedAt string `json:"completed_at_utc,omitempty"`
	Error       string `json:"error,omitempty"`
	Steps       string `json:"steps"` // "3/6"
	// Score is the mean of the run's verification scores; nil when it has
	// none. Passed: completed and every verification scored 1 (as evals
	// grade a run).
	Score      *float64 `json:"score"`
	Passed     bool     `json:"passed"`
	EvalID     string   `json:"eval_id,omitempty"`
	RunGroupID string   `json:"run_group_id,omitempty"`
}

// summaryFields are the paths a runs list reads of each instance: never
// the whole context.
var summaryFields = []string{"instance_id", "task_id", "task_version", "status", "created_at_utc",
	"completed_at_utc", "error", "total_steps", "current_step", "context.metadata.verifications",
	"context.metadata.eval_id", "context.metadata.run_group_id"}

type instanceSummaryDoc struct {
	InstanceID     string  `json:"instance_id"`
	TaskID         string  `json:"task_id"`
	TaskVersion    int     `json:"task_version"`
	Status         string  `json:"status"`
	CreatedAtUTC   string  `json:"created_at_utc"`
	CompletedAtUTC *string `json:"completed_at_utc"`
	Error          *string `json:"error"`
	TotalSteps     int     `json:"total_steps"`
	CurrentStep    int     `json:"current_step"`
	Context        struct {
		Metadata struct {
			Verifications map[string]runner.Verification `json:"verifications"`
			EvalID        string                         `json:"eval_id"`
			RunGroupID    string                         `json:"run_group_id"`
		} `json:"metadata"`
	} `json:"context"`
}

func summarize(rec registry.Record) RunSummary {
	var d instanceSummaryDoc
	_ = json.Unmarshal(rec.Data, &d) // a malformed record still lists, by key
	s := RunSummary{InstanceID: rec.Key, TaskID: d.TaskID, TaskVersion: d.TaskVersion, Status: d.Status,
		CreatedAt: d.CreatedAtUTC, Steps: fmt.Sprintf("%d/%d", d.CurrentStep, d.TotalSteps),
		EvalID: d.Context.Metadata.EvalID, RunGroupID: d.Context.Metadata.RunGroupID}
	if d.CompletedAtUTC != nil {
		s.CompletedAt = *d.CompletedAtUTC
	}
	if d.Error != nil {
		s.Error = *d.Error
	}
	if s.CreatedAt == "" {
		s.CreatedAt = registry.FormatMinute(rec.CreatedAt)
	}
	s.Score, s.Passed = grade(s.Status, d.Context.Metadata.Verifications)
	return s
}

// grade scores a run as evals do: the mean of its verification scores;
// passed when completed and each scored 1.
func grade(status string, vs map[string]runner.Verification) (*float64, bool) {
	if len(vs) == 0 {
		return nil, false
	}
	sum, all := 0.0, true
	for _, v := range vs {
		sum += v.Score
		all = all && v.Score >= 1
	}
	mean := sum / float64(len(vs))
	return &mean, all && status == runner.StatusCompleted
}

// RunsQuery filters the runs list.
type RunsQuery struct {
	Task, Status, Eval string
	From, To           time.Time // creation date; zero = open
	MinScore, MaxScore *float64
	After              string
	Limit              int
	Store              int // index into Stores.all()
}

// RunsPage is one page of the runs list.
type RunsPage struct {
	Runs []RunSummary `json:"runs"`
	Next string       `json:"next,omitempty"`
	// Scanned is set when a score filter stopped early: the page may hold
	// fewer rows than asked although more match further on (follow Next).
	Scanned int `json:"scanned,omitempty"`
}

func parseRunsQuery(c echo.Context, stores int) (RunsQuery, error) {
	q := RunsQuery{Task: c.QueryParam("task"), Status: c.QueryParam("status"), Eval: c.QueryParam("eval"), After: c.QueryParam("after")}
	var err error
	if v := c.QueryParam("limit"); v != "" {
		if q.Limit, err = strconv.Atoi(v); err != nil || q.Limit < 1 || q.Limit > registry.MaxPageLimit {
			return q, badRequest("limit", "must be a number in 1..1000")
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Time
		add  time.Duration
	}{{"from", &q.From, 0}, {"to", &q.To, 24 * time.Hour}} {
		if v := c.QueryParam(d.name); v != "" {
			t, err := time.Parse(time.DateOnly, v)
			if err != nil {
				return q, badRequest(d.name, "must be a date such as 2026-03-02")
			}
			*d.dst = t.Add(d.add)
		}
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"min_score", &q.MinScore}, {"max_score", &q.MaxScore}} {
		if v := c.QueryParam(f.name); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return q, badRequest(f.name, "must be a number such as 0.5")
			}
			*f.dst = &x
		}
	}
	if v := c.QueryParam("store"); v != "" {
		if q.Store, err = strconv.Atoi(v); err != nil || q.Store < 0 || q.Store >= stores {
			return q, badRequest("store", fmt.Sprintf("must be 0..%d", stores-1))
		}
	}
	return q, nil
}

// maxScoreScanPages bounds the pages one request reads when a score
// filter (applied after the store's page) keeps few rows.
const maxScoreScanPages = 20

func (s *Server) listRuns(ctx context.Context, q RunsQuery) (*RunsPage, error) {
	where := map[string]string{}
	if q.Task != "" {
		where["task_id"] = q.Task
	}
	if q.Status != "" {
		where["status"] = q.Status
	}
	if q.Eval != "" {
		where["context.metadata.eval_id"] = q.Eval
	}
	limit := q.Limit
	if limit == 0 {
		limit = 50
	}
	ds := s.st.all()[q.Store]
	out := &RunsPage{Runs: []RunSummary{}}
	after := q.After
	for pages := 0; ; pages++ {
		p, err := registry.PageRecords(ctx, ds, registry.TaskInstances, &registry.PageQuery{
			Where: where, Fields: summaryFields, CreatedFrom: q.From, CreatedTo: q.To, After: after, Limit: limit - len(out.Runs)})
		if err != nil {
			return nil, err
		}
		for _, r := range p.Records {
			sum := summarize(r)
			if (q.MinScore != nil || q.MaxScore != nil) && (sum.Score == nil ||
				(q.MinScore != nil && *sum.Score < *q.MinScore) || (q.MaxScore != nil && *sum.Score > *q.MaxScore)) {
				continue
			}
			out.Runs = append(out.Runs, sum)
		}
		out.Next = p.Next
		if p.Next == "" || len(out.Runs) >= limit {
			return out, nil
		}
		if pages+1 >= maxScoreScanPages {
			out.Scanned = (pages + 1) * limit
			return out, nil
		}
		after = p.Next
	}
}

func (s *Server) apiRuns(c echo.Context) error {
	q, err := parseRunsQuery(c, len(s.st.all()))
	if err != nil {
		return err
	}
	p, err := s.listRuns(c.Request().Context(), q)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, p)
}

type runsView struct {
	Q        RunsQuery
	Params   map[string]string
	Page     *RunsPage
	Err      string
	Stores   int
	NextLink string
}

func (s *Server) pageRuns(c echo.Context) error {
	v := &runsView{Stores: len(s.st.all()), Params: map[string]string{}}
	for _, k := range []string{"task", "status", "eval", "from", "to", "min_score", "max_score", "limit", "store"} {
		v.Params[k] = c.QueryParam(k)
	}
	q, err := parseRunsQuery(c, v.Stores)
	if err != nil {
		return err
	}
	v.Q = q
	if v.Page, err = s.listRuns(c.Request().Context(), q); err != nil {
		v.Err = panelError("the runs", err)
	} else if v.Page.Next != "" {
		u := c.Request().URL.Query()
		u.Set("after", v.Page.Next)
		u.Del("token")
		v.NextLink = "/runs?" + u.Encode()
	}
	return s.render(c, http.StatusOK, "runs", &page{Title: "Runs", Nav: "runs", Data: v})
}

// storeError maps a store error to an HTTP error: bad input and missing
// things keep their (user-facing) message, the rest is a 500 logged by the
// error handler.
func storeError(err error) error {
	switch {
	case errors.Is(err, registry.ErrInvalid):
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	case errors.Is(err, registry.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	case errors.Is(err, registry.ErrUnavailable):
		return echo.NewHTTPError(http.StatusServiceUnavailable, err.Error())
	}
	return err
}

// panelError is the message a panel shows for err.
func panelError(what string, err error) string {
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return "Cannot show " + what + ": " + err.Error() + "."
	case errors.Is(err, registry.ErrInvalid), errors.Is(err, registry.ErrUnavailable):
		return "Cannot show " + what + ": " + err.Error()
	}
	return "Cannot show " + what + ": reading the store failed (the explorer's log has the details)."
}

// StepView is one step of a run page.
type StepView struct {
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	DependsOn []string `json:"depends_on"`
	// Status: pending, running, success or failure.
	Status     string     `json:"status"`
	FinishedAt string     `json:"finished_at,omitempty"`
	Seconds    *float64   `json:"seconds,omitempty"`
	Error      string     `json:"error,omitempty"`
	Diff       []DiffLine `json:"diff"`
	Level      int        `json:"-"`
}

// DiffLine is one context change a step made.
type DiffLine struct {
	Op    string `json:"op"` // set, unset, add
	Path  string `json:"path"`
	Value string `json:"value,omitempty"` // JSON, shortened
}

// RunDetail is a run page's data.
type RunDetail struct {
	Run   RunSummary `json:"run"`
	Steps []StepView `json:"steps"`
	// StepsError is set when the task document or the journal could not be
	// read; Steps then holds what the instance alone says.
	StepsError    string             `json:"steps_error,omitempty"`
	Verifications []VerificationView `json:"verifications"`
	Prompts       []PromptView       `json:"prompts"`
	Envs          []LinkView         `json:"envs"`
	Agents        []LinkView         `json:"agents"`
	Sandboxes     []LinkView         `json:"sandboxes"`
	// EnvTrajectories are the gateway trajectories the runner stored
	// (metadata.env_trajectories).
	EnvTrajectories []EnvTrajectoryView `json:"env_trajectories"`
	Live            bool                `json:"live"`
	Rev             int64               `json:"rev"`
}

// VerificationView is one verifier's result.
type VerificationView struct {
	ID      string    `json:"id"`
	Score   float64   `json:"score"`
	Sources []string  `json:"source_verifier_ids,omitempty"`
	Rows    []RowView `json:"rows"`
}

// RowView is one verifier row.
type RowView struct {
	Criterion     string  `json:"criterion"`
	Result        bool    `json:"result"`
	Skipped       bool    `json:"skipped,omitempty"`
	Score         float64 `json:"score"`
	Justification string  `json:"justification,omitempty"`
	Extra         string  `json:"extra,omitempty"` // the other keys, JSON
}

// PromptView is one prompt_agent response with its trajectory.
type PromptView struct {
	StepID        string `json:"step_id"`
	PromptID      string `json:"prompt_id"`
	Prompt        string `json:"prompt"`
	Response      string `json:"response"`
	ToolCalls     int    `json:"tool_call_count"`
	TrajectoryKey string `json:"trajectory_key,omitempty"`
	// TrajectoryError says why the trajectory cannot be opened.
	TrajectoryError string `json:"trajectory_error,omitempty"`
	// GatewayKey is the env's gateway trajectory, shown with the agent's
	// on one timeline.
	GatewayKey string `json:"gateway_trajectory_key,omitempty"`
}

// EnvTrajectoryView is one env's stored gateway trajectory, or why there
// is none.
type EnvTrajectoryView struct {
	EnvID string `json:"env_id"`
	Key   string `json:"key,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	Error string `json:"error,omitempty"`
}

// LinkView is an env, agent or sandbox the run created.
type LinkView struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail"`
	Sandbox string `json:"sandbox,omitempty"`
}

func (s *Server) runDetail(ctx context.Context, id string) (*RunDetail, error) {
	ds := s.st.docsFor(id)
	rec, err := ds.GetRecord(ctx, registry.TaskInstances, id)
	if err != nil {
		return nil, err
	}
	var inst runner.Instance
	if err := rec.Decode(&inst); err != nil {
		return nil, fmt.Errorf("task instance %s: %w", id, registry.ErrInvalid)
	}
	d := &RunDetail{Run: summarize(rec), Live: inst.Status == runner.StatusRunning, Rev: rec.Rev,
		Verifications: []VerificationView{}, Prompts: []PromptView{}, Envs: []LinkView{}, Agents: []LinkView{}, Sandboxes: []LinkView{}}
	d.Steps, d.StepsError = s.steps(ctx, ds, &inst)
	d.Verifications = verifications(inst.Context)
	d.Prompts = s.prompts(inst.Context)
	d.EnvTrajectories = s.envTrajectories(inst.Context)
	for _, et := range d.EnvTrajectories {
		if et.Key != "" {
			for i := range d.Prompts {
				d.Prompts[i].GatewayKey = et.Key
			}
			break
		}
	}
	d.Envs, d.Agents, d.Sandboxes = links(inst.Context)
	s.prefetchTrajectories(d)
	return d, nil
}

// steps merges the task's step list, the instance's completed steps and
// the journal (finish times and context diffs).
func (s *Server) steps(ctx context.Context, ds registry.DocumentStore, inst *runner.Instance) ([]StepView, string) {
	var problems []string
	var defs []struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		DependsOn json.RawMessage `json:"depends_on"`
	}
	if doc, err := s.st.docsFor(inst.TaskID).Get(ctx, registry.Tasks, registry.Ref{ID: inst.TaskID, Version: inst.TaskVersion}); err != nil {
		problems = append(problems, panelError("the task's steps", err))
	} else {
		var body struct {
			Steps json.RawMessage `json:"steps"`
		}
		if err := doc.Decode(&body); err != nil || json.Unmarshal(body.Steps, &defs) != nil {
			problems = append(problems, "Cannot show the task's steps: task "+inst.TaskID+" has no readable steps list.")
			defs = nil
		}
	}
	status := map[string]string{}
	for _, cs := range inst.CompletedSteps {
		status[cs.StepID] = cs.Status
	}
	var out []StepView
	index := map[string]int{}
	for i, def := range defs {
		sv := StepView{ID: def.ID, Type: def.Type, Status: "pending", Diff: []DiffLine{}}
		switch deps := string(def.DependsOn); {
		case deps == "" || deps == "null":
			if i > 0 {
				sv.DependsOn = []string{defs[i-1].ID}
			}
		default:
			var refs []runner.StepRef
			if json.Unmarshal(def.DependsOn, &refs) == nil {
				for _, r := range refs {
					sv.DependsOn = append(sv.DependsOn, r.TaskStepID)
				}
			}
		}
		index[def.ID] = len(out)
		out = append(out, sv)
	}
	// Steps the instance knows but the task does not (a changed task).
	for _, cs := range inst.CompletedSteps {
		if _, ok := index[cs.StepID]; !ok {
			index[cs.StepID] = len(out)
			out = append(out, StepView{ID: cs.StepID, Status: cs.Status, Diff: []DiffLine{}})
		}
	}
	for i := range out {
		if st, ok := status[out[i].ID]; ok {
			out[i].Status = st
		}
	}
	// A failed run names its step in the error ("step \"env\" (deploy_env) failed: ...").
	if inst.Error != nil {
		for i := range out {
			if strings.HasPrefix(*inst.Error, fmt.Sprintf("step %q", out[i].ID)) {
				out[i].Error = *inst.Error
				if out[i].Status == "pending" {
					out[i].Status = "failure"
				}
			}
		}
	}
	if inst.Status == runner.StatusRunning {
		for i := range out {
			if out[i].Status == "pending" && depsDone(out[i], out, index) {
				out[i].Status = "running"
			}
		}
	}
	journal, err := ds.QueryRecords(ctx, registry.TaskStepJournal, &registry.RecordQuery{KeyStart: inst.InstanceID + "|"})
	if err != nil {
		problems = append(problems, panelError("the step journal", err))
	}
	type entry struct {
		StepID     string     `json:"step_id"`
		Seq        int        `json:"seq"`
		RecordedAt string     `json:"recorded_at"`
		Ops        runner.Ops `json:"ops"`
	}
	var entries []entry
	for _, r := range journal {
		var e entry
		if r.Decode(&e) == nil {
			entries = append(entries, e)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Seq < entries[j].Seq })
	var prev time.Time
	for _, e := range entries {
		at, terr := time.Parse(time.RFC3339Nano, e.RecordedAt)
		i, ok := index[e.StepID]
		if !ok {
			if e.StepID == runner.JournalSeedStep && terr == nil {
				prev = at
			}
			continue
		}
		out[i].FinishedAt = e.RecordedAt
		if terr == nil && !prev.IsZero() {
			secs := at.Sub(prev).Seconds()
			out[i].Seconds = &secs
		}
		if terr == nil {
			prev = at
		}
		out[i].Diff = diffLines(e.Ops)
	}
	levels(out, index)
	return out, strings.Join(problems, " ")
}

func depsDone(sv StepView, all []StepView, index map[string]int) bool {
	for _, d := range sv.DependsOn {
		if i, ok := index[d]; !ok || all[i].Status != "success" {
			return false
		}
	}
	return true
}

// levels sets each step's column in the DAG: one more than its deepest
// dependency.
func levels(steps []StepView, index map[string]int) {
	var level func(i, depth int) int
	level = func(i, depth int) int {
		if depth > len(steps) { // a cycle in a broken task: stop
			return 0
		}
		l := 0
		for _, d := range steps[i].DependsOn {
			if j, ok := index[d]; ok {
				l = max(l, level(j, depth+1)+1)
			}
		}
		return l
	}
	for i := range steps {
		steps[i].Level = level(i, 0)
	}
}

func diffLines(o runner.Ops) []DiffLine {
	out := []DiffLine{}
	for _, st := range o.Sets {
		out = append(out, DiffLine{Op: "set", Path: strings.Join(st.Path, "."), Value: shortJSON(st.Value)})
	}
	for _, u := range o.Unsets {
		out = append(out, DiffLine{Op: "unset", Path: strings.Join(u, ".")})
	}
	for _, a := range o.AddToSets {
		for _, v := range a.Values {
			out = append(out, DiffLine{Op: "add", Path: strings.Join(a.Path, "."), Value: shortJSON(v)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// shortJSON renders v as JSON cut to a readable length.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return truncate(string(b), 400)
}

func verifications(ctx map[string]any) []VerificationView {
	out := []VerificationView{}
	md, _ := ctx["metadata"].(map[string]any)
	raw, err := json.Marshal(md["verifications"])
	if err != nil {
		return out
	}
	var vs map[string]struct {
		Score   float64      `json:"score"`
		Results []runner.Row `json:"results"`
		Sources []string     `json:"source_verifier_ids"`
	}
	if json.Unmarshal(raw, &vs) != nil {
		return out
	}
	for id, v := range vs {
		vv := VerificationView{ID: id, Score: v.Score, Sources: v.Sources, Rows: []RowView{}}
		for i, r := range v.Results {
			rv := RowView{Result: r.Passed(), Skipped: r.Skipped(), Score: r.Score()}
			rv.Criterion, _ = r["criterion"].(string)
			if rv.Criterion == "" {
				if id, ok := r["id"].(string); ok {
					rv.Criterion = id
				} else if t, ok := r["type"].(string); ok {
					rv.Criterion = t
				} else {
					rv.Criterion = "row " + strconv.Itoa(i+1)
				}
			}
			rv.Justification, _ = r["justification"].(string)
			extra := map[string]any{}
			for k, x := range r {
				switch k {
				case "criterion", "result", "score", "justification", "skipped", "criterion_index":
				default:
					extra[k] = x
				}
			}
			if len(extra) > 0 {
				rv.Extra = shortJSON(extra)
			}
			vv.Rows = append(vv.Rows, rv)
		}
		out = append(out, vv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) prompts(ctx map[string]any) []PromptView {
	out := []PromptView{}
	list, _ := ctx["prompt_responses"].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		if m == nil {
			continue
		}
		str := func(k string) string { v, _ := m[k].(string); return v }
		pv := PromptView{StepID: str("step_id"), PromptID: str("prompt_id"), Prompt: str("prompt_text"), Response: str("response")}
		if n, ok := m["tool_call_count"].(float64); ok {
			pv.ToolCalls = int(n)
		}
		url := str("agent_trajectory_object_url")
		switch {
		case url == "":
			pv.TrajectoryError = "the agent returned no trajectory"
		case s.st.Objects == nil:
			pv.TrajectoryError = "no object store is configured"
		default:
			key, err := s.st.Objects.KeyOf(url)
			if err != nil {
				pv.TrajectoryError = "the trajectory is in another object store (" + url + ")"
			} else {
				pv.TrajectoryKey = key
			}
		}
		out = append(out, pv)
	}
	return out
}

func (s *Server) envTrajectories(ctx map[string]any) []EnvTrajectoryView {
	out := []EnvTrajectoryView{}
	md, _ := ctx["metadata"].(map[string]any)
	all, _ := md[runner.KeyEnvTrajectories].(map[string]any)
	for env, x := range all {
		m, _ := x.(map[string]any)
		if m == nil {
			continue
		}
		v := EnvTrajectoryView{EnvID: env}
		url, _ := m["object_url"].(string)
		v.Error, _ = m["error"].(string)
		if n, ok := m["bytes"].(float64); ok {
			v.Bytes = int64(n)
		}
		switch {
		case v.Error != "":
		case url == "" || s.st.Objects == nil:
			v.Error = "no object store is configured"
		default:
			key, err := s.st.Objects.KeyOf(url)
			if err != nil {
				v.Error = "the trajectory is in another object store (" + url + ")"
			} else {
				v.Key = key
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EnvID < out[j].EnvID })
	return out
}

func links(ctx map[string]any) (envs, agents, sandboxes []LinkView) {
	envs, agents, sandboxes = []LinkView{}, []LinkView{}, []LinkView{}
	each := func(key string, f func(m map[string]any)) {
		list, _ := ctx[key].([]any)
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				f(m)
			}
		}
	}
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	each("deployed_envs", func(m map[string]any) {
		envs = append(envs, LinkView{ID: str(m, "instance_id"), Kind: "env", Detail: fmt.Sprintf("%s v%v", str(m, "env_id"), m["env_version"]), Sandbox: str(m, "sandbox_id")})
	})
	each("deployed_agents", func(m map[string]any) {
		agents = append(agents, LinkView{ID: str(m, "instance_id"), Kind: "agent", Detail: fmt.Sprintf("%s v%v (%s)", str(m, "a2a_agent_id"), m["a2a_agent_version"], str(m, "role")), Sandbox: str(m, "sandbox_id")})
	})
	each("deployed_sandboxes", func(m map[string]any) {
		sandboxes = append(sandboxes, LinkView{ID: str(m, "sandbox_id"), Kind: "sandbox", Detail: str(m, "sandbox_type")})
	})
	return envs, agents, sandboxes
}

func (s *Server) apiRun(c echo.Context) error {
	id := c.QueryParam("id")
	if id == "" {
		return badRequest("id", "required (a task instance id)")
	}
	d, err := s.runDetail(c.Request().Context(), id)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) pageRun(c echo.Context) error {
	id := c.QueryParam("id")
	if id == "" {
		return badRequest("id", "required (a task instance id)")
	}
	d, err := s.runDetail(c.Request().Context(), id)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return echo.NewHTTPError(http.StatusNotFound, "no task instance "+id)
		}
		return storeError(err)
	}
	return s.render(c, http.StatusOK, "run", &page{Title: "Run " + id, Nav: "runs", Data: d})
}

// runPanels are the parts of a run page the live view re-renders.
var runPanels = map[string]bool{"summary": true, "steps": true, "verifications": true, "prompts": true, "links": true}

// pageRunPanel renders one panel of a run page (the live view swaps it in).
func (s *Server) pageRunPanel(c echo.Context) error {
	name := c.QueryParam("name")
	if !runPanels[name] {
		return badRequest("name", "must be one of summary, steps, verifications, prompts, links")
	}
	id := c.QueryParam("id")
	d, err := s.runDetail(c.Request().Context(), id)
	if err != nil {
		return storeError(err)
	}
	return s.renderTemplate(c, http.StatusOK, "run", "panel-"+name, &page{Data: d})
}

// apiRunEvents streams the run's summary as server-sent events: one
// "update" event whenever the instance changes, then "end" once it is no
// longer running.
func (s *Server) apiRunEvents(c echo.Context) error {
	id := c.QueryParam("id")
	if id == "" {
		return badRequest("id", "required (a task instance id)")
	}
	ctx := c.Request().Context()
	ds := s.st.docsFor(id)
	rec, err := ds.GetRecord(ctx, registry.TaskInstances, id)
	if err != nil {
		return storeError(err)
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set(echo.HeaderCacheControl, "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, rec registry.Record) error {
		b, _ := json.Marshal(summarize(rec))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		w.Flush()
		return nil
	}
	if err := send("update", rec); err != nil {
		return nil
	}
	t := time.NewTicker(s.opt.PollInterval)
	defer t.Stop()
	for {
		if summarize(rec).Status != runner.StatusRunning {
			_ = send("end", rec)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := ds.GetRecord(ctx, registry.TaskInstances, id)
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %q\n\n", "cannot read the task instance: "+err.Error())
			w.Flush()
			return nil
		}
		if cur.Rev != rec.Rev {
			if err := send("update", cur); err != nil {
				return nil
			}
		}
		rec = cur
	}
}
