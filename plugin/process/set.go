package process

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/runner"
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

// Registration is the plugin registry's record of a loaded plugin: its
// step types and sandbox providers, or, when it could not be loaded,
// Unavailable with the reason (it is then listed inactive and contributes
// nothing). The registry refuses names a built-in or another plugin owns.
func (l *Loaded) Registration() plugin.Plugin {
	spec := l.Plugin.Spec()
	p := plugin.Plugin{Name: spec.Name, Kind: plugin.KindProcess, Module: strings.Join(spec.Command, " ")}
	if l.Err != nil {
		p.Unavailable = l.Err
		return p
	}
	p.Version = l.Description.Version
	infos, err := l.Plugin.StepInfos(l.Description)
	if err != nil {
		p.Unavailable = err
		return p
	}
	p.Steps = infos
	for _, pt := range l.Description.SandboxProviders {
		prov := l.Plugin.Provider(pt)
		p.Sandboxes = append(p.Sandboxes, plugin.SandboxProvider{Name: pt.Name,
			New: func(context.Context, *plugin.ProviderEnv) (runner.SandboxProvider, error) { return prov, nil }})
	}
	return p
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
	if s == nil {
		return nil
	}
	var out []int
	for _, l := range s.Plugins {
		out = append(out, l.Plugin.running()...)
	}
	return out
}
