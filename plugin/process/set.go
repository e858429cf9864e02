package process

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Loaded is one plugin after Load: its description, or why it could not
// be used.
type Loaded struct {
	Plugin      *Plugin
	Description *Description // nil when Err is set
	Err         error
}

// Set is the process plugins of one run. Load starts them; Close ends
// every process they started.
type Set struct {
	Plugins []*Loaded
}

// Load starts every plugin and asks for its description, in parallel. A
// plugin that fails to start or describe itself is kept with its error
// (the others are still usable).
func Load(ctx context.Context, specs []Spec, o *Options) *Set {
	s := &Set{Plugins: make([]*Loaded, len(specs))}
	var wg sync.WaitGroup
	for i, sp := range specs {
		p := New(sp, o)
		s.Plugins[i] = &Loaded{Plugin: p}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := p.Describe(ctx)
			s.Plugins[i].Description, s.Plugins[i].Err = d, err
		}()
	}
	wg.Wait()
	return s
}

// ClashError is a contribution whose name is already taken.
type ClashError struct {
	Kind, Name      string // "step type", "sandbox provider"
	Plugin, TakenBy string // TakenBy is "built-in" or "plugin <name>"
}

func (e *ClashError) Error() string {
	return fmt.Sprintf("plugin %s: %s %q is already provided by %s", e.Plugin, e.Kind, e.Name, e.TakenBy)
}

// RegisterSteps adds the step types of every loaded plugin to reg. A type
// already registered (a built-in, or another plugin's) is refused with a
// *ClashError naming both owners, and that plugin's other types are still
// added. It returns one error per problem.
func (s *Set) RegisterSteps(reg *runner.StepRegistry) []error {
	var errs []error
	owner := map[string]string{}
	for _, l := range s.Plugins {
		if l.Err != nil {
			continue
		}
		infos, err := l.Plugin.StepInfos(l.Description)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, info := range infos {
			if _, err := reg.Lookup(info.Type); err == nil {
				by := "built-in"
				if o, ok := owner[info.Type]; ok {
					by = "plugin " + o
				}
				errs = append(errs, &ClashError{Kind: "step type", Name: info.Type, Plugin: l.Plugin.Name(), TakenBy: by})
				continue
			}
			reg.Register(info)
			owner[info.Type] = l.Plugin.Name()
		}
	}
	return errs
}

// Providers returns a sandbox provider for every provider the plugins
// contribute, keyed by name. Names in taken (the built-in providers) and
// names two plugins both claim are refused with a *ClashError.
func (s *Set) Providers(taken map[string]bool) (map[string]sandbox.Provider, []error) {
	out := map[string]sandbox.Provider{}
	owner := map[string]string{}
	var errs []error
	for _, l := range s.Plugins {
		if l.Err != nil {
			continue
		}
		for _, pt := range l.Description.SandboxProviders {
			switch {
			case taken[pt.Name]:
				errs = append(errs, &ClashError{Kind: "sandbox provider", Name: pt.Name, Plugin: l.Plugin.Name(), TakenBy: "built-in"})
			case owner[pt.Name] != "":
				errs = append(errs, &ClashError{Kind: "sandbox provider", Name: pt.Name, Plugin: l.Plugin.Name(), TakenBy: "plugin " + owner[pt.Name]})
			default:
				owner[pt.Name] = l.Plugin.Name()
				out[pt.Name] = l.Plugin.Provider(pt)
			}
		}
	}
	return out, errs
}

// Errs lists the plugins that could not be loaded.
func (s *Set) Errs() []error {
	var errs []error
	for _, l := range s.Plugins {
		if l.Err != nil {
			errs = append(errs, l.Err)
		}
	}
	return errs
}

// Close ends every plugin process.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, l := range s.Plugins {
		errs = append(errs, l.Plugin.Close())
	}
	return errors.Join(errs...)
}

// Running lists the ids of the plugin processes that have not ended (none
// after Close): for leak checks.
func (s *Set) Running() []int {
	var out []int
	for _, l := range s.Plugins {
		out = append(out, l.Plugin.running()...)
	}
	return out
}
