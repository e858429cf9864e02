package plugin_test

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/runner"
)

// coin is a step type a plugin adds.
type coin struct{}

func (*coin) Run(ctx context.Context, rc *runner.RunContext) error {
	rc.SetMetadata("coin", "heads")
	return nil
}

// A registry starts with the built-ins; plugins add names after them, and
// a plugin that claims a name someone owns is refused whole, naming both.
// A Go plugin calls plugin.Register from init() instead of Add; the CLI
// adds every registered plugin when it starts.
func Example() {
	reg := plugin.NewRegistry(nil)
	_ = reg.Add(plugin.Plugin{Name: "coin", Version: "v1.0.0",
		Steps: []runner.StepInfo{{Type: "flip_coin", New: func() runner.Step { return new(coin) }}}})
	err := reg.Add(plugin.Plugin{Name: "evil",
		Steps: []runner.StepInfo{{Type: "deploy_env", New: func() runner.Step { return new(coin) }}}})
	fmt.Println(err)
	_ = reg.Configure(map[string]map[string]any{"coin": {"bias": 0.5}}, nil)

	for _, r := range reg.All() {
		fmt.Printf("%s (%s): %s\n", r.Name, r.Kind, r.Status[:min(len(r.Status), 7)])
	}
	_, err = reg.Steps().Lookup("flip_coin")
	fmt.Println("flip_coin registered:", err == nil)
	// Output:
	// plugin "evil" cannot add step type "deploy_env": it is built-in (agentenv-framework); a plugin adds names, it never replaces one
	// agentenv-framework (builtin): active
	// coin (go): active
	// evil (go): refused
	// flip_coin registered: true
}
