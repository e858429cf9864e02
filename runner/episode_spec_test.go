package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

func TestEpisodeSpecRefusals(t *testing.T) {
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	two := `[
	 {"id":"env","type":"deploy_env","env_id":"email"},
	 {"id":"deploy-a","type":"deploy_agent","env_ids":["email"],"agent_name":"assistant"},
	 {"id":"deploy-b","type":"deploy_agent","env_ids":["email"],"agent_name":"boss"},
	 {"id":"ask-a","type":"prompt_agent","agent_name":"assistant","prompt":"hi"},
	 {"id":"ask-b","type":"prompt_agent","agent_name":"boss","prompt":"hi"},
	 {"id":"probe","type":"verify_sandbox","agent_name":"boss","criteria":[{"type":"probe_file_exists","paths":["x"]}]}
	]`
	task, err := r.ParseTask("two", 1, []byte(two))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts *runner.EpisodeOptions
		want []string // substrings of the error
	}{
		{"several prompted agents", nil, []string{`"assistant" (step ask-a)`, `"boss" (step ask-b)`, "TrainerAgents"}},
		{"unknown agent", &runner.EpisodeOptions{TrainerAgents: []string{"nobody"}}, []string{`"nobody"`, `"assistant" by step deploy-a`, `"boss" by step deploy-b`}},
		{"sandbox step", &runner.EpisodeOptions{TrainerAgents: []string{"boss"}}, []string{`step "probe"`, "verify_sandbox", `"boss"`}},
		{"negative timeout", &runner.EpisodeOptions{TrainerAgents: []string{"assistant"}, TurnTimeout: -1}, []string{"TurnTimeout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.NewEpisodeSpec(task, nil, c.opts)
			if !errors.Is(err, runner.ErrEpisodeSpec) {
				t.Fatalf("err = %v, want ErrEpisodeSpec", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	spec, err := r.NewEpisodeSpec(task, nil, &runner.EpisodeOptions{TrainerAgents: []string{"assistant"}})
	if err != nil {
		t.Fatalf("playing assistant: %v", err)
	}
	if got := spec.TrainerAgents(); len(got) != 1 || got[0] != "assistant" {
		t.Errorf("TrainerAgents = %v", got)
	}

	// verify_sandbox without a target probes default-agent: the player of
	// default-agent is refused.
	one, err := r.ParseTask("one", 1, []byte(`[
	 {"id":"deploy","type":"deploy_agent"},
	 {"id":"ask","type":"prompt_agent","prompt":"hi"},
	 {"id":"files","type":"verify_sandbox","criteria":[{"type":"probe_file_exists","paths":["x"]}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewEpisodeSpec(one, nil, nil); err == nil || !strings.Contains(err.Error(), `step "files"`) {
		t.Errorf("default-agent sandbox probe: err = %v", err)
	}

	none, err := r.ParseTask("none", 1, []byte(`[{"id":"deploy","type":"deploy_agent"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewEpisodeSpec(none, nil, nil); !errors.Is(err, runner.ErrEpisodeSpec) {
		t.Errorf("no prompt step: err = %v", err)
	}
}

func TestLoadEpisodeSpecUnknownTask(t *testing.T) {
	docs, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	_, err = r.LoadEpisodeSpec(context.Background(), docs, registry.Ref{ID: "no-such-task"}, nil, nil)
	if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), "no-such-task") {
		t.Fatalf("err = %v, want not found naming the task", err)
	}
}
