package plugin

import (
	"fmt"
	"io/fs"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
)

// Check validates every plugin as far as it can without running it: the
// refusals and Configure problems (Problems), then every bundle of every
// active plugin loads and each of its tasks parses against the step types
// of this registry (a bundle that uses a step type nothing provides is a
// problem). It returns one error per problem, each naming its plugin.
func (r *Registry) Check() []error {
	problems := r.Problems()
	reg := r.Steps()
	for _, e := range r.active() {
		if e.p.Bundles == nil {
			continue
		}
		problems = append(problems, checkBundles(e.p.Name, e.p.Bundles, reg)...)
	}
	return problems
}

// checkBundles loads a plugin's bundle tree and parses each task.
func checkBundles(plugin string, tree fs.FS, reg *runner.StepRegistry) []error {
	names, err := dirNames(tree, ".")
	if err != nil {
		return []error{fmt.Errorf("plugin %q: its bundles cannot be read: %w", plugin, err)}
	}
	var out []error
	for _, n := range names {
		sub, err := fs.Sub(tree, n)
		if err == nil {
			var b *bundle.Bundle
			b, err = bundle.Load(sub, n, "@local/"+plugin+"/"+n)
			if err == nil {
				for _, tf := range b.Tasks {
					if _, perr := runner.ParseSteps(reg, tf.Raw); perr != nil {
						out = append(out, fmt.Errorf("plugin %q: bundle %s: %s: %w", plugin, n, tf.File, perr))
					}
				}
			}
		}
		if err != nil {
			out = append(out, fmt.Errorf("plugin %q: bundle %s: %w", plugin, n, err))
		}
	}
	return out
}
