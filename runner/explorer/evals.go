package explorer

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/eval"
)

// An eval run is the task instances sharing one metadata.run_group_id
// (`agent-env eval run` sets it, with metadata.eval_id); its scores are
// computed from the instances as the eval runner grades them.

// maxEvalInstances bounds the instances one eval page reads.
const maxEvalInstances = 20_000

// evalFields are the paths an eval page reads of each instance.
var evalFields = []string{"task_id", "status", "created_at_utc", "context.metadata.verifications",
	"context.metadata.eval_id", "context.metadata.run_group_id"}

// EvalRunView is one run of an eval.
type EvalRunView struct {
	Group     string      `json:"run_group_id"`
	EvalID    string      `json:"eval_id"`
	StartedAt string      `json:"started_at_utc"`
	Instances int         `json:"instances"`
	Passed    int         `json:"passed"`
	K         int         `json:"k"`
	Tasks     []TaskScore `json:"tasks"`
	// Histogram counts run scores in ten bins, [0,0.1) ... [0.9,1].
	Histogram [10]int `json:"histogram"`
	Truncated bool    `json:"truncated,omitempty"`
}

// TaskScore is one task's scores over an eval run.
type TaskScore struct {
	TaskID    string   `json:"task_id"`
	Runs      int      `json:"runs"`
	Passed    int      `json:"passed"`
	MeanScore float64  `json:"mean_score"`
	PassAt1   *float64 `json:"pass_at_1"`
	PassAtK   *float64 `json:"pass_at_k"`
}

// evalRuns reads the instances matching where and groups them by run.
func (s *Server) evalRuns(ctx context.Context, where map[string]string, k int) ([]*EvalRunView, error) {
	groups := map[string]*EvalRunView{}
	perTask := map[string]map[string][]RunSummary{}
	read := 0
	truncated := false
	for _, ds := range s.st.all() {
		after := ""
		for {
			p, err := registry.PageRecords(ctx, ds, registry.TaskInstances, &registry.PageQuery{Where: where, Fields: evalFields, After: after, Limit: registry.MaxPageLimit})
			if err != nil {
				return nil, err
			}
			for _, r := range p.Records {
				sum := summarize(r)
				g := groups[sum.RunGroupID]
				if g == nil {
					g = &EvalRunView{Group: sum.RunGroupID, EvalID: sum.EvalID}
					groups[sum.RunGroupID] = g
					perTask[sum.RunGroupID] = map[string][]RunSummary{}
				}
				if g.StartedAt == "" || sum.CreatedAt < g.StartedAt {
					g.StartedAt = sum.CreatedAt
				}
				perTask[sum.RunGroupID][sum.TaskID] = append(perTask[sum.RunGroupID][sum.TaskID], sum)
			}
			read += len(p.Records)
			if p.Next == "" {
				break
			}
			if read >= maxEvalInstances {
				truncated = true
				break
			}
			after = p.Next
		}
	}
	out := make([]*EvalRunView, 0, len(groups))
	for id, g := range groups {
		g.Truncated = truncated
		g.K = k
		if g.K == 0 { // the eval's k: runs per task (the smallest, to keep pass@k defined)
			for _, runs := range perTask[id] {
				if g.K == 0 || len(runs) < g.K {
					g.K = len(runs)
				}
			}
		}
		for task, runs := range perTask[id] {
			ts := TaskScore{TaskID: task, Runs: len(runs)}
			sum := 0.0
			for _, r := range runs {
				score := 0.0
				if r.Score != nil && r.Status == "completed" {
					score = *r.Score
				}
				sum += score
				g.Histogram[min(9, max(0, int(score*10)))]++
				if r.Passed {
					ts.Passed++
				}
			}
			ts.MeanScore = sum / float64(ts.Runs)
			if p, ok := eval.PassAtK(ts.Runs, ts.Passed, 1); ok {
				ts.PassAt1 = &p
			}
			if p, ok := eval.PassAtK(ts.Runs, ts.Passed, g.K); ok {
				ts.PassAtK = &p
			}
			g.Instances += ts.Runs
			g.Passed += ts.Passed
			g.Tasks = append(g.Tasks, ts)
		}
		sort.Slice(g.Tasks, func(i, j int) bool { return g.Tasks[i].TaskID < g.Tasks[j].TaskID })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].StartedAt != out[j].StartedAt {
			return out[i].StartedAt > out[j].StartedAt
		}
		return out[i].Group > out[j].Group
	})
	return out, nil
}

// EvalsList is the evals page: the stored evals.
type EvalsList struct {
	Evals []DocSummary `json:"evals"`
}

func (s *Server) apiEvals(c echo.Context) error {
	p, err := s.listDocs(c.Request().Context(), registry.Evals, "", 0, 1000)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(http.StatusOK, EvalsList{Evals: p.Docs})
}

func (s *Server) pageEvals(c echo.Context) error {
	v := struct {
		Evals []DocSummary
		Err   string
	}{}
	p, err := s.listDocs(c.Request().Context(), registry.Evals, "", 0, 1000)
	if err != nil {
		v.Err = panelError("the evals", err)
	} else {
		v.Evals = p.Docs
	}
	return s.render(c, http.StatusOK, "evals", &page{Title: "Evals", Nav: "evals", Data: v})
}

// EvalView is one eval's page: its runs, newest first.
type EvalView struct {
	ID   string         `json:"id"`
	Runs []*EvalRunView `json:"runs"`
}

func evalParams(c echo.Context) (k int, err error) {
	if v := c.QueryParam("k"); v != "" {
		if k, err = strconv.Atoi(v); err != nil || k < 1 {
			return 0, badRequest("k", "must be a number >= 1")
		}
	}
	return k, nil
}

func (s *Server) evalView(c echo.Context) (*EvalView, error) {
	id := c.QueryParam("id")
	if id == "" {
		return nil, badRequest("id", "required (an eval id)")
	}
	k, err := evalParams(c)
	if err != nil {
		return nil, err
	}
	runs, err := s.evalRuns(c.Request().Context(), map[string]string{"context.metadata.eval_id": id}, k)
	if err != nil {
		return nil, storeError(err)
	}
	return &EvalView{ID: id, Runs: runs}, nil
}

func (s *Server) apiEval(c echo.Context) error {
	v, err := s.evalView(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) pageEval(c echo.Context) error {
	v, err := s.evalView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "eval", &page{Title: "Eval " + v.ID, Nav: "evals", Data: v})
}

// Comparison sets two eval runs side by side, task by task.
type Comparison struct {
	A    *EvalRunView    `json:"a"`
	B    *EvalRunView    `json:"b"`
	Rows []ComparisonRow `json:"rows"`
}

// ComparisonRow is one task of a comparison (nil: the run lacks the task).
type ComparisonRow struct {
	TaskID string     `json:"task_id"`
	A      *TaskScore `json:"a"`
	B      *TaskScore `json:"b"`
}

func (s *Server) comparison(c echo.Context) (*Comparison, error) {
	k, err := evalParams(c)
	if err != nil {
		return nil, err
	}
	cmp := &Comparison{Rows: []ComparisonRow{}}
	for _, side := range []struct {
		name string
		dst  **EvalRunView
	}{{"a", &cmp.A}, {"b", &cmp.B}} {
		g := c.QueryParam(side.name)
		if g == "" {
			return nil, badRequest(side.name, "required (an eval run's run_group_id)")
		}
		runs, err := s.evalRuns(c.Request().Context(), map[string]string{"context.metadata.run_group_id": g}, k)
		if err != nil {
			return nil, storeError(err)
		}
		if len(runs) == 0 {
			return nil, echo.NewHTTPError(http.StatusNotFound, "no task instance has run_group_id "+g)
		}
		*side.dst = runs[0]
	}
	rows := map[string]*ComparisonRow{}
	for _, side := range []struct {
		run *EvalRunView
		a   bool
	}{{cmp.A, true}, {cmp.B, false}} {
		for i := range side.run.Tasks {
			t := &side.run.Tasks[i]
			r := rows[t.TaskID]
			if r == nil {
				r = &ComparisonRow{TaskID: t.TaskID}
				rows[t.TaskID] = r
			}
			if side.a {
				r.A = t
			} else {
				r.B = t
			}
		}
	}
	for _, r := range rows {
		cmp.Rows = append(cmp.Rows, *r)
	}
	sort.Slice(cmp.Rows, func(i, j int) bool { return cmp.Rows[i].TaskID < cmp.Rows[j].TaskID })
	return cmp, nil
}

func (s *Server) apiCompare(c echo.Context) error {
	cmp, err := s.comparison(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cmp)
}

func (s *Server) pageCompare(c echo.Context) error {
	cmp, err := s.comparison(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "compare", &page{Title: "Compare eval runs", Nav: "evals", Data: cmp})
}

// histogramSVG draws a score histogram (ten bins) server-side.
func histogramSVG(h [10]int) template.HTML {
	const w, ht, pad = 320, 120, 20
	peak := 1
	for _, n := range h {
		peak = max(peak, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="hist" role="img" aria-label="score histogram" viewBox="0 0 %d %d" width="%d" height="%d">`, w, ht+pad, w, ht+pad)
	bw := w / 10
	for i, n := range h {
		bh := n * (ht - 10) / peak
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d"><title>%.1f–%.1f: %d</title></rect>`, i*bw+2, ht-bh, bw-4, bh, float64(i)/10, float64(i+1)/10, n)
		if n > 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%d</text>`, i*bw+bw/2, ht-bh-2, n)
		}
	}
	fmt.Fprintf(&b, `<text x="0" y="%d">0</text><text x="%d" y="%d" text-anchor="end">1</text></svg>`, ht+pad-4, w, ht+pad-4)
	return template.HTML(b.String())
}

// compareSVG draws pass@1 of both runs per task as paired bars.
func compareSVG(rows []ComparisonRow) template.HTML {
	const rowH, w, label = 22, 420, 160
	var b strings.Builder
	h := rowH*len(rows) + 10
	fmt.Fprintf(&b, `<svg class="compare" role="img" aria-label="pass@1 by task" viewBox="0 0 %d %d" width="%d" height="%d">`, w, h, w, h)
	bar := func(ts *TaskScore, y int, class string) {
		v := 0.0
		if ts != nil && ts.PassAt1 != nil {
			v = *ts.PassAt1
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="%d" height="8"><title>%.2f</title></rect>`, class, label, y, int(v*float64(w-label)), v)
	}
	for i, r := range rows {
		y := i * rowH
		fmt.Fprintf(&b, `<text x="0" y="%d">%s</text>`, y+14, template.HTMLEscapeString(truncate(r.TaskID, 28)))
		bar(r.A, y+2, "a")
		bar(r.B, y+11, "b")
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
