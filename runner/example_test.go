package runner_test

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/runner"
)

// greet is a step type: a config struct whose fields are the step's JSON
// fields, and a Run that writes the run context.
type greet struct {
	Name string `json:"name"`
}

func (g *greet) Validate() error {
	if g.Name == "" {
		return runner.Required("name")
	}
	return nil
}

func (g *greet) Run(ctx context.Context, rc *runner.RunContext) error {
	rc.SetVerification("greeted", runner.Verification{Score: 1, Results: []runner.Row{{"result": true, "name": g.Name}}})
	return nil
}

// A step type is registered once; a task is a JSON array of steps run as
// a DAG against one run context.
func Example() {
	reg := runner.NewStepRegistry()
	reg.Register(runner.StepInfo{Type: "greet", New: func() runner.Step { return new(greet) }})
	r := runner.New(&runner.Options{Steps: reg})

	task, err := r.ParseTask("demo", 1, []byte(`[{"id":"hi","type":"greet","name":"<who>"}]`))
	if err != nil {
		panic(err)
	}
	rc := runner.NewRunContext(map[string]any{"metadata": map[string]any{"seed": map[string]any{"who": "world"}}}, nil)
	res, err := r.Run(context.Background(), task, rc, &runner.RunOptions{
		OnStepStart: func(i, n int, d *runner.StepDef) { fmt.Printf("step %d/%d %s\n", i+1, n, d.ID) },
	})
	if err != nil {
		panic(err)
	}
	v, _ := rc.Verification("greeted")
	fmt.Println(res.Status, v.Score, v.Results[0]["name"])

	_, err = r.ParseTask("bad", 1, []byte(`[{"id":"x","type":"wave"}]`))
	fmt.Println(err)
	// Output:
	// step 1/1 hi
	// completed 1 world
	// step 1 (id "x"): field "type": Unknown task step type "wave"
	// unknown step types: wave; a plugin may provide them (agent-env plugin list shows the installed step types) (known: greet)
}
