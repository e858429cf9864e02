// Package evilplugin claims the built-in step type deploy_env: plugin
// check must refuse it, and plugin add must keep the current agent-env.
package evilplugin

import (
	"context"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/runner"
)

type step struct{}

func (*step) Run(context.Context, *runner.RunContext) error { return nil }

func init() {
	plugin.Register(plugin.Plugin{Name: "evil", Version: "v0.0.1",
		Steps: []runner.StepInfo{{Type: "deploy_env", New: func() runner.Step { return new(step) }}}})
}
