package rubricsverifier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
)

// Caps on what a judge is sent: the trajectory, each collected file and
// all collected files together. Past a cap the text is cut and says so.
const (
	maxTrajectoryBytes = 200_000
	maxFileBytes       = 64 << 10
	maxArtifactsBytes  = 256 << 10
)

// work is what a judge grades: the prompt and the agent's final answer,
// its (filtered) trajectory, the files collect_artifacts gathered, and the
// context facts the task points the judge at.
type work struct {
	Prompt     string          `json:"prompt"`
	Response   string          `json:"response"`
	Trajectory json.RawMessage `json:"trajectory,omitempty"`
	Artifacts  []collectedFile `json:"collected_artifacts,omitempty"`
	Facts      []fact          `json:"facts,omitempty"`
}

type collectedFile struct {
	Universe string `json:"universe_id"`
	Path     string `json:"path"`
	Content  string `json:"content"`
}

type fact struct {
	Label string `json:"label"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// collect gathers the work of prompt response pr. Reading failures of the
// trajectory or of a file are logged and leave that part out (the judge
// grades what exists) rather than failing the verification.
func (c *Config) collect(ctx context.Context, rc *runner.RunContext, pr map[string]any) work {
	w := work{Prompt: fmt.Sprint(pr["prompt_text"]), Response: fmt.Sprint(pr["response"])}
	if c.UseTrajectory == nil || *c.UseTrajectory {
		if traj := readTrajectory(ctx, rc, pr); len(traj) > 0 {
			if c.TrajectoryFilter != nil && filterOn(rc) {
				traj = c.TrajectoryFilter.Apply(traj)
			}
			if len(traj) > maxTrajectoryBytes || !json.Valid(traj) {
				s, _ := json.Marshal(head(string(traj), maxTrajectoryBytes))
				traj = s
			}
			w.Trajectory = traj
		}
	}
	w.Artifacts = collectedFiles(ctx, rc)
	snap := rc.Snapshot()
	labels := make([]string, 0, len(c.ContextFactsForJudge))
	for l := range c.ContextFactsForJudge {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		p := c.ContextFactsForJudge[l]
		w.Facts = append(w.Facts, fact{Label: l, Path: p, Value: lookup(snap, p)})
	}
	return w
}

// filterOn reads the run's apply_trajectory_filter override (a boolean;
// unset = on).
func filterOn(rc *runner.RunContext) bool {
	v, _ := rc.Metadata("user_overrides")
	m, _ := v.(map[string]any)
	on, ok := m["apply_trajectory_filter"].(bool)
	return !ok || on
}

// readTrajectory reads the prompt's stored trajectory, nil when there is
// none.
func readTrajectory(ctx context.Context, rc *runner.RunContext, pr map[string]any) []byte {
	objs := rc.Services().Objects
	u, _ := pr["agent_trajectory_object_url"].(string)
	if objs == nil || u == "" {
		return nil
	}
	k, err := objs.KeyOf(u)
	if err == nil {
		var r io.ReadCloser
		if r, _, err = objs.Open(ctx, k); err == nil {
			defer r.Close()
			b, err := io.ReadAll(io.LimitReader(r, 16<<20))
			if err == nil {
				return b
			}
		}
	}
	rc.Logger().Warn("the judge gets no trajectory: it could not be read", "url", u, "error", err)
	return nil
}

// collectedFiles reads every file of metadata.collected_artifacts, in step
// then path order, within the caps.
func collectedFiles(ctx context.Context, rc *runner.RunContext) []collectedFile {
	v, _ := rc.Metadata("collected_artifacts")
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		rc.Logger().Warn("the judge gets no collected files", "error", err)
		return nil
	}
	steps := make([]string, 0, len(m))
	for s := range m {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	var out []collectedFile
	total := 0
	for _, s := range steps {
		e, _ := m[s].(map[string]any)
		id, _ := e["id"].(string)
		ver, _ := e["version"].(float64)
		if n, ok := e["version"].(int); ok {
			ver = float64(n)
		}
		u, err := arts.GetUniverse(ctx, registry.Ref{ID: id, Version: int(ver)})
		if err != nil {
			rc.Logger().Warn("the judge does not get a collected universe", "step", s, "universe", id, "error", err)
			continue
		}
		paths := make([]string, 0, len(u.FileArtifactRefs))
		for p := range u.FileArtifactRefs {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			f := collectedFile{Universe: id, Path: p}
			switch r, meta, err := arts.OpenFile(ctx, u.FileArtifactRefs[p]); {
			case err != nil:
				f.Content = "(unreadable: " + err.Error() + ")"
			case total >= maxArtifactsBytes:
				r.Close()
				f.Content = "(left out: the collected files passed the judge's size limit)"
			default:
				b, _ := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
				r.Close()
				switch {
				case !utf8.Valid(b):
					f.Content = fmt.Sprintf("(binary file, %d bytes)", meta.Size)
				case len(b) > maxFileBytes:
					f.Content = string(b[:maxFileBytes]) + "\n…[truncated]"
				default:
					f.Content = string(b)
				}
				total += len(f.Content)
			}
			out = append(out, f)
		}
	}
	return out
}

// lookup reads a dotted path of the run context; a numeric segment indexes
// a list ("prompt_responses.0.response"). Missing → nil.
func lookup(doc map[string]any, path string) any {
	var cur any = doc
	for _, seg := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			cur = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}

// systemPrompt is the judge's instructions: the task, the format and the
// task's grading policy.
func (c *Config) systemPrompt() string {
	s := "You grade an AI agent's work against a rubric. " + c.OutputFormat.instructions()
	if c.GradingPolicyPrompt != "" {
		s += "\n\nGrading policy:\n" + c.GradingPolicyPrompt
	}
	return s
}

// userMessage lays the work and the criteria out as text.
func (c *Config) userMessage(w work) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task given to the agent:\n%s\n\nThe agent's final response:\n%s\n", w.Prompt, w.Response)
	if len(w.Trajectory) > 0 {
		fmt.Fprintf(&b, "\nThe agent's trajectory (JSON):\n%s\n", w.Trajectory)
	}
	if len(w.Artifacts) > 0 {
		b.WriteString("\nFiles the agent produced (collected):\n")
		for _, f := range w.Artifacts {
			fmt.Fprintf(&b, "--- %s ---\n%s\n", f.Path, f.Content)
		}
	}
	if len(w.Facts) > 0 {
		b.WriteString("\nFacts:\n")
		for _, f := range w.Facts {
			v, _ := json.Marshal(f.Value)
			fmt.Fprintf(&b, "- %s: %s\n", f.Label, v)
		}
	}
	b.WriteString("\nCriteria:\n")
	for _, cr := range c.Criteria {
		fmt.Fprintf(&b, "- %s: %s\n", cr.ID, cr.Criterion)
	}
	return b.String()
}
