package runner_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// A trainer plays default-agent of a task with no env: each prompt becomes
// a turn; the verifier scores the reply.
func ExampleEpisodeSpec() {
	ctx := context.Background()
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("greet", 1, []byte(`[
	 {"id":"agent","type":"deploy_agent","system_prompt":"Be brief."},
	 {"id":"ask","type":"prompt_agent","prompt_id":"hi","prompt":"Say hello.","poll_interval_seconds":0.01},
	 {"id":"check","type":"agent_prompt_response_verifier","prompt_id":"hi","verifier_id":"hello",
	  "criteria":[{"type":"response_contains","needles":["hello"]}]}]`))
	if err != nil {
		panic(err)
	}
	spec, err := r.NewEpisodeSpec(task, &runner.Services{}, nil)
	if err != nil {
		panic(err)
	}
	ep, err := spec.Start(ctx)
	if err != nil {
		panic(err)
	}
	for {
		turn, err := ep.NextTurn(ctx)
		if err != nil || turn == nil {
			break
		}
		fmt.Println(turn.AgentName, turn.PromptID, turn.SystemPrompt, turn.Prompt)
		_ = turn.End(ctx, "hello there")
	}
	res, _ := ep.Result(ctx)
	fmt.Println(res.Status, res.Scores)
	// Output:
	// default-agent hi Be brief. Say hello.
	// completed map[check:1]
}

const twoAgents = `[
 {"id":"deploy-a","type":"deploy_agent","agent_name":"assistant","role":"assistant"},
 {"id":"deploy-b","type":"deploy_agent","agent_name":"boss","role":"boss"},
 {"id":"ask-a","type":"prompt_agent","agent_name":"assistant","prompt_id":"pa","prompt":"Draft it.","poll_interval_seconds":0.01,"depends_on":[{"task_step_id":"deploy-b"}]},
 {"id":"ask-b","type":"prompt_agent","agent_name":"boss","prompt_id":"pb","prompt":"Approve it.","poll_interval_seconds":0.01,"depends_on":[{"task_step_id":"deploy-b"}]},
 {"id":"va","type":"agent_prompt_response_verifier","prompt_id":"pa","verifier_id":"va","criteria":[{"type":"response_contains","needles":["draft"]}],"depends_on":[{"task_step_id":"ask-a"}]},
 {"id":"vb","type":"agent_prompt_response_verifier","prompt_id":"pb","verifier_id":"vb","criteria":[{"type":"response_contains","needles":["approved"]}],"depends_on":[{"task_step_id":"ask-b"}]}
]`

// twoAgentSpec is the episode spec of twoAgents, both agents played by the
// trainer.
func twoAgentSpec(t *testing.T) *runner.EpisodeSpec {
	t.Helper()
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("two", 1, []byte(twoAgents))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := r.NewEpisodeSpec(task, &runner.Services{}, &runner.EpisodeOptions{TrainerAgents: []string{"assistant", "boss"}})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// Two played agents prompted at once: both turns are open together, each
// names its agent, prompt and role; answers land on the right prompts.
func TestEpisodeTwoPlayedAgents(t *testing.T) {
	ctx := context.Background()
	spec := twoAgentSpec(t)
	ep, err := spec.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var open []*runner.Turn
	for range 2 {
		turn, err := ep.NextTurn(ctx)
		if err != nil || turn == nil {
			t.Fatalf("turn: %v %v", turn, err)
		}
		open = append(open, turn)
	}
	answers := map[string]string{"assistant": "Here is the draft.", "boss": "Bad."}
	for _, turn := range open {
		want := map[string]string{"assistant": "pa", "boss": "pb"}[turn.AgentName]
		if turn.PromptID != want || turn.Role != turn.AgentName {
			t.Errorf("turn %+v", turn)
		}
		if err := turn.End(ctx, answers[turn.AgentName]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ep.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusCompleted || res.Scores["va"] != 1 || res.Scores["vb"] != 0 {
		t.Errorf("result %+v", res)
	}
}

// Abandoning while a turn is open: the turn is refused, NextTurn reports
// the abandon, the run is cancelled.
func TestEpisodeAbandonWhileTurnOpen(t *testing.T) {
	ctx := context.Background()
	spec := twoAgentSpec(t)
	ep, err := spec.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := ep.NextTurn(ctx)
	if err != nil || turn == nil {
		t.Fatalf("turn: %v %v", turn, err)
	}
	if err := ep.Abandon(ctx, "enough"); err != nil {
		t.Fatal(err)
	}
	if err := turn.End(ctx, "late"); !errors.Is(err, runner.ErrTurnEnded) {
		t.Errorf("End after abandon: %v", err)
	}
	if next, err := ep.NextTurn(ctx); next != nil || !errors.Is(err, runner.ErrEpisodeAbandoned) {
		t.Errorf("NextTurn after abandon: %v %v", next, err)
	}
	res, err := ep.Result(ctx)
	if err != nil || res.Status != runner.StatusCancelled || res.Abandoned != "enough" {
		t.Errorf("result %+v %v", res, err)
	}
	if err := ep.Abandon(ctx, "again"); err != nil {
		t.Errorf("second Abandon: %v", err)
	}
}
