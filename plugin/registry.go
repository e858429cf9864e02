package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry/redact"
	"github.com/agentenv/agentenv/registry/stores"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundles"
	"github.com/agentenv/agentenv/runner/steps"
)

// BuiltinName is the name of the built-in record, and the package of the
// built-in bundles (`agent-env run agentenv-framework/hello`).
const BuiltinName = "agentenv-framework"

// Contribution kinds, as they are named in errors and by plugin show.
const (
	whatPlugin  = "plugin name"
	whatStep    = "step type"
	whatSandbox = "sandbox provider"
	whatStore   = "store"
	whatCommand = "command"
	whatBundle  = "bundle"
)

// ErrClash is matched by every *ClashError.
var ErrClash = errors.New("name already taken")

// ClashError is a plugin claiming a name another owner has: a built-in or
// an earlier plugin. The plugin is refused whole.
type ClashError struct {
	What      string // "step type", "sandbox provider", "store", "command", "bundle", "plugin name"
	Name      string // the contested name ("deploy_env")
	Owner     string // who has it ("agentenv-framework")
	OwnerKind Kind
	Claimant  string // the refused plugin
}

func (e *ClashError) Error() string {
	owner := fmt.Sprintf("plugin %q", e.Owner)
	if e.OwnerKind == KindBuiltin {
		owner = fmt.Sprintf("built-in (%s)", e.Owner)
	}
	return fmt.Sprintf("plugin %q cannot add %s %q: it is %s; a plugin adds names, it never replaces one",
		e.Claimant, e.What, e.Name, owner)
}

// Is makes errors.Is(err, ErrClash) hold.
func (e *ClashError) Is(target error) bool { return target == ErrClash }

// Record is what plugin list and plugin show print about one plugin.
type Record struct {
	Name     string   `json:"name"`
	Kind     Kind     `json:"kind"`
	Version  string   `json:"version"`
	Module   string   `json:"module,omitempty"`
	Provides Provides `json:"provides"`
	// Status is "active", or "refused: <why>" (a clash or an invalid
	// contribution) or "inactive: <why>" (its settings failed).
	Status string `json:"status"`
	Active bool   `json:"active"`
	// DisabledSteps are step types [task_steps] impls leaves out.
	DisabledSteps []string `json:"disabled_steps,omitempty"`
	// Settings is its [plugins.<name>] table, secrets masked.
	Settings map[string]any `json:"settings,omitempty"`
}

// Provides lists a plugin's contributions by name.
type Provides struct {
	Steps     []string `json:"steps,omitempty"`
	Sandboxes []string `json:"sandboxes,omitempty"` // sandbox providers and env backends
	Stores    []string `json:"stores,omitempty"`
	Commands  []string `json:"commands,omitempty"`
	Bundles   []string `json:"bundles,omitempty"` // <package>/<bundle>
}

// Summary is a one-line "steps: a, b; bundles: x" for tables: a kind
// with more than three names shows its count, except bundles, which are
// always named (they are what `agent-env run` takes).
func (p Provides) Summary() string {
	var parts []string
	for _, f := range []struct {
		what  string
		names []string
	}{{"steps", p.Steps}, {"sandboxes", p.Sandboxes}, {"stores", p.Stores}, {"commands", p.Commands}, {"bundles", p.Bundles}} {
		switch {
		case len(f.names) == 0:
		case len(f.names) > 3 && f.what != "bundles":
			parts = append(parts, fmt.Sprintf("%d %s", len(f.names), f.what))
		default:
			parts = append(parts, f.what+": "+strings.Join(f.names, ", "))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// Options are the built-ins a Registry starts from. A nil *Options means
// the defaults.
type Options struct {
	// Version is the built-in record's version (the agent-env version).
	Version string
	// Commands are the CLI's own top-level command names, which plugins
	// cannot take.
	Commands []string
	// Steps are the built-in step types; nil means steps.Builtin().
	Steps *runner.StepRegistry
	// Stores are the built-in store factories; nil means stores.Builtin().
	Stores func() *stores.Registry
	// Bundles is the built-in bundle tree (<package>/<bundle>/); nil means
	// bundles.FS().
	Bundles fs.FS
	// Sandboxes are the built-in sandbox provider and env backend names;
	// nil means local, docker and process.
	Sandboxes []string
}

// Registry holds the built-ins and the plugins added to them, with every
// name's owner. It is safe for concurrent use.
type Registry struct {
	opts Options

	mu         sync.Mutex
	entries    []*entry
	owners     map[claim]*entry
	configured bool
	settings   map[string]map[string]any // Configure's, for plugins added later
	impls      []string                  // Configure's [task_steps] impls
	pending    map[string]bool           // plugins to be added later (Pending)
	problems   []error                   // from Configure
	warnings   []string
}

type claim struct{ what, name string }

type entry struct {
	p        Plugin
	provides Provides
	refused  error // a clash or an invalid contribution
	inactive error // Configure failed
	settings map[string]any
	disabled map[string]bool
}

func (e *entry) active() bool { return e.refused == nil && e.inactive == nil }

// NewRegistry returns a registry holding the built-in record only.
func NewRegistry(o *Options) *Registry {
	r := &Registry{owners: map[claim]*entry{}}
	if o != nil {
		r.opts = *o
	}
	if r.opts.Steps == nil {
		r.opts.Steps = steps.Builtin()
	}
	if r.opts.Stores == nil {
		r.opts.Stores = stores.Builtin
	}
	if r.opts.Bundles == nil {
		r.opts.Bundles = bundles.FS()
	}
	if r.opts.Sandboxes == nil {
		r.opts.Sandboxes = []string{"local", "docker", "process"}
	}
	b := &entry{p: Plugin{Name: BuiltinName, Kind: KindBuiltin, Version: r.opts.Version, Module: "github.com/agentenv/agentenv"}}
	b.provides = Provides{
		Steps:     r.opts.Steps.Types(),
		Sandboxes: sortedCopy(r.opts.Sandboxes),
		Stores:    r.opts.Stores().Names(),
		Commands:  sortedCopy(r.opts.Commands),
	}
	pkgs, err := fs.ReadDir(r.opts.Bundles, ".")
	if err != nil {
		panic("plugin: the built-in bundle tree cannot be read: " + err.Error())
	}
	for _, p := range pkgs {
		if !p.IsDir() {
			continue
		}
		names, err := dirNames(r.opts.Bundles, p.Name())
		if err != nil {
			panic("plugin: the built-in bundle tree cannot be read: " + err.Error())
		}
		for _, n := range names {
			b.provides.Bundles = append(b.provides.Bundles, p.Name()+"/"+n)
		}
		r.owners[claim{whatPlugin, p.Name()}] = b
	}
	for _, c := range b.claims() {
		r.owners[c] = b
	}
	r.entries = append(r.entries, b)
	return r
}

func (e *entry) claims() []claim {
	out := []claim{{whatPlugin, e.p.Name}}
	add := func(what string, names []string) {
		for _, n := range names {
			out = append(out, claim{what, n})
		}
	}
	add(whatStep, e.provides.Steps)
	add(whatSandbox, e.provides.Sandboxes)
	add(whatStore, e.provides.Stores)
	add(whatCommand, e.provides.Commands)
	add(whatBundle, e.provides.Bundles)
	return out
}

// Add adds a plugin after the built-ins and the plugins added before it.
// A plugin with an invalid contribution or a name someone else owns is
// refused whole: it stays listed (plugin list shows why) and Add returns
// the error, a *ClashError for a clash.
func (r *Registry) Add(p Plugin) error {
	if p.Kind == "" {
		p.Kind = KindGo
	}
	e := &entry{p: p}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	if p.Kind == KindBuiltin {
		e.refused = fmt.Errorf("plugin %q: only agent-env itself is built in", p.Name)
		return e.refused
	}
	if p.Kind != KindGo && p.Kind != KindProcess {
		e.refused = fmt.Errorf("plugin %q: unknown kind %q (want go or process)", p.Name, p.Kind)
		return e.refused
	}
	prov, err := describe(p)
	e.provides = prov
	if err != nil {
		e.refused = err
		return err
	}
	for _, c := range e.claims() {
		if owner, taken := r.owners[c]; taken {
			e.refused = &ClashError{What: c.what, Name: c.name, Owner: owner.p.Name, OwnerKind: owner.p.Kind, Claimant: p.Name}
			return e.refused
		}
	}
	for _, c := range e.claims() {
		r.owners[c] = e
	}
	if p.Unavailable != nil {
		e.inactive = p.Unavailable
		r.problems = append(r.problems, p.Unavailable)
	}
	if r.configured && e.active() {
		r.configureLate(e)
	}
	return nil
}

// Pending names plugins that will be added later, after Configure (the
// CLI starts process plugins only when a command needs them): Configure
// does not warn that their [plugins.<name>] tables configure nothing.
func (r *Registry) Pending(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[string]bool{}
	}
	for _, n := range names {
		r.pending[n] = true
	}
}

// configureLate gives a plugin added after Configure what Configure gave
// the others: its settings, its Configure call and [task_steps] impls
// (whose problems were reported by Configure already). Called with r.mu
// held.
func (r *Registry) configureLate(e *entry) {
	e.settings = r.settings[e.p.Name]
	if e.p.Configure != nil {
		if err := configure(e.p, e.settings); err != nil {
			e.inactive = fmt.Errorf("plugin %q: [plugins.%s] settings: %w", e.p.Name, e.p.Name, err)
			r.problems = append(r.problems, e.inactive)
		}
	}
	if len(r.impls) > 0 {
		_ = r.applyStepImpls(r.byName(), r.impls)
	}
}

// byName maps the names of the plugins not refused to their entries.
// Called with r.mu held.
func (r *Registry) byName() map[string]*entry {
	out := map[string]*entry{}
	for _, e := range r.entries {
		if e.refused == nil {
			out[e.p.Name] = e
		}
	}
	return out
}

var pluginName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// describe validates a plugin's contributions and lists them by name.
func describe(p Plugin) (Provides, error) {
	var pr Provides
	bad := func(format string, args ...any) (Provides, error) {
		return pr, fmt.Errorf("plugin %q: "+format, append([]any{p.Name}, args...)...)
	}
	if !pluginName.MatchString(p.Name) {
		return bad("invalid name: use lowercase letters, digits and '-', starting with a letter")
	}
	scratch := runner.NewStepRegistry()
	for i, s := range p.Steps {
		if err := registerStep(scratch, s); err != nil {
			return bad("step %d: %v", i+1, err)
		}
		pr.Steps = append(pr.Steps, s.Type)
	}
	seen := map[string]bool{}
	sandbox := func(kind, name string, hasNew bool) error {
		if !pluginName.MatchString(name) {
			return fmt.Errorf("%s %q: invalid name: use lowercase letters, digits and '-'", kind, name)
		}
		if !hasNew {
			return fmt.Errorf("%s %q has no New", kind, name)
		}
		if !seen[name] {
			pr.Sandboxes = append(pr.Sandboxes, name)
		}
		seen[name] = true
		return nil
	}
	for _, s := range p.Sandboxes {
		if err := sandbox(whatSandbox, s.Name, s.New != nil); err != nil {
			return bad("%v", err)
		}
	}
	for _, b := range p.EnvBackends {
		if err := sandbox("env backend", b.Name, b.New != nil); err != nil {
			return bad("%v", err)
		}
	}
	storeNames := map[string]bool{}
	for _, s := range p.Stores {
		if storeNames[s.Name] {
			return bad("store %q is listed twice", s.Name)
		}
		storeNames[s.Name] = true
		if err := registerStore(&stores.Registry{}, s); err != nil {
			return bad("store %q: %v", s.Name, err)
		}
		pr.Stores = append(pr.Stores, s.Name)
	}
	for i, newCmd := range p.Commands {
		if newCmd == nil {
			return bad("command %d is nil", i+1)
		}
		c := newCmd()
		if c == nil || c.Name() == "" {
			return bad("command %d has no name", i+1)
		}
		pr.Commands = append(pr.Commands, c.Name())
	}
	if p.Bundles != nil {
		names, err := dirNames(p.Bundles, ".")
		if err != nil {
			return bad("its bundles cannot be read: %v", err)
		}
		if len(names) == 0 {
			return bad("its bundle tree holds no bundle folder")
		}
		for _, n := range names {
			pr.Bundles = append(pr.Bundles, p.Name+"/"+n)
		}
	}
	sort.Strings(pr.Sandboxes)
	return pr, nil
}

// registerStep adds s to reg, turning the registry's programmer-error
// panic into an error, so that a bad plugin is reported, not fatal.
func registerStep(reg *runner.StepRegistry, s runner.StepInfo) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	reg.Register(s)
	return nil
}

// registerStore is registerStep for store factories.
func registerStore(reg *stores.Registry, s Store) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	reg.Register(s.Name, s.Factory)
	return nil
}

// Configure hands every active plugin its settings table (settings[name])
// and applies [task_steps] impls. It runs once; later calls return the
// first call's problems. A plugin whose Configure fails becomes inactive.
//
// stepImpls selects which plugin step types are enabled: empty enables
// all; otherwise each entry is "PLUGIN:TYPE", a plugin name (all its step
// types) or a step type, and plugin step types no entry names are
// disabled. An entry that resolves to nothing is a problem. Built-in step
// types are always enabled.
func (r *Registry) Configure(settings map[string]map[string]any, stepImpls []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.configured {
		return errors.Join(r.problems...)
	}
	r.configured = true
	r.settings, r.impls = settings, stepImpls
	byName := r.byName()
	var tables []string
	for name := range settings {
		tables = append(tables, name)
	}
	sort.Strings(tables)
	for _, name := range tables {
		if byName[name] == nil && !r.pending[name] {
			r.warnings = append(r.warnings, fmt.Sprintf("[plugins.%s] configures a plugin this agent-env does not have (agent-env plugin list)", name))
		}
	}
	for _, e := range r.entries {
		if !e.active() || e.p.Kind == KindBuiltin {
			continue
		}
		e.settings = settings[e.p.Name]
		if e.p.Configure != nil {
			if err := configure(e.p, e.settings); err != nil {
				e.inactive = fmt.Errorf("plugin %q: [plugins.%s] settings: %w", e.p.Name, e.p.Name, err)
				r.problems = append(r.problems, e.inactive)
			}
		}
	}
	r.problems = append(r.problems, r.applyStepImpls(byName, stepImpls)...)
	return errors.Join(r.problems...)
}

func configure(p Plugin, settings map[string]any) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("Configure panicked: %v", v)
		}
	}()
	cp := make(map[string]any, len(settings))
	for k, v := range settings {
		cp[k] = v
	}
	return p.Configure(cp)
}

// applyStepImpls disables the plugin step types stepImpls leaves out.
func (r *Registry) applyStepImpls(byName map[string]*entry, stepImpls []string) []error {
	if len(stepImpls) == 0 {
		return nil
	}
	enabled := map[string]bool{}
	var problems []error
	for _, impl := range stepImpls {
		found := false
		if plug, typ, ok := strings.Cut(impl, ":"); ok {
			if e := byName[plug]; e != nil && slices.Contains(e.provides.Steps, typ) {
				enabled[typ], found = true, true
			}
		} else {
			if e := byName[impl]; e != nil {
				for _, t := range e.provides.Steps {
					enabled[t] = true
				}
				found = true
			}
			if owner, ok := r.owners[claim{whatStep, impl}]; ok && owner.refused == nil {
				enabled[impl], found = true, true
			}
		}
		if !found {
			problems = append(problems, fmt.Errorf("[task_steps] impls: %q names no plugin or step type of this agent-env "+
				"(write PLUGIN:TYPE, PLUGIN or TYPE; agent-env plugin list shows them)", impl))
		}
	}
	for _, e := range r.entries {
		if e.p.Kind == KindBuiltin {
			continue
		}
		for _, t := range e.provides.Steps {
			if !enabled[t] {
				if e.disabled == nil {
					e.disabled = map[string]bool{}
				}
				e.disabled[t] = true
			}
		}
	}
	return problems
}

// Problems returns every reason a plugin is not usable as installed:
// refusals (clashes, invalid contributions) and Configure's problems.
func (r *Registry) Problems() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []error
	for _, e := range r.entries {
		if e.refused != nil {
			out = append(out, e.refused)
		}
	}
	return append(out, r.problems...)
}

// Refusals returns the refused plugins' errors only: clashes and invalid
// contributions, which the CLI treats as fatal at start-up.
func (r *Registry) Refusals() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []error
	for _, e := range r.entries {
		if e.refused != nil {
			out = append(out, e.refused)
		}
	}
	return out
}

// Warnings are non-fatal findings of Configure ([plugins.<name>] tables
// no plugin reads).
func (r *Registry) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warnings...)
}

// All returns one record per plugin: the built-in record first, then the
// plugins in the order they were added.
func (r *Registry) All() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Record, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e.record())
	}
	return out
}

// Lookup returns the record of the plugin called name.
func (r *Registry) Lookup(name string) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.p.Name == name {
			return e.record(), true
		}
	}
	return Record{}, false
}

func (e *entry) record() Record {
	rec := Record{Name: e.p.Name, Kind: e.p.Kind, Version: e.p.Version, Module: e.p.Module, Provides: e.provides,
		Status: "active", Active: e.active()}
	switch {
	case e.refused != nil:
		rec.Status = "refused: " + e.refused.Error()
	case e.inactive != nil:
		rec.Status = "inactive: " + e.inactive.Error()
	}
	for t := range e.disabled {
		rec.DisabledSteps = append(rec.DisabledSteps, t)
	}
	sort.Strings(rec.DisabledSteps)
	if e.settings != nil {
		if m, ok := redact.Mask(e.settings).(map[string]any); ok {
			rec.Settings = m
		}
	}
	return rec
}

// active returns the active plugins (not the built-in record), in order.
func (r *Registry) active() []*entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*entry
	for _, e := range r.entries {
		if e.p.Kind != KindBuiltin && e.active() {
			out = append(out, e)
		}
	}
	return out
}

// Steps returns a fresh step registry: the built-in step types, then the
// enabled step types of the active plugins.
func (r *Registry) Steps() *runner.StepRegistry {
	reg := runner.NewStepRegistry()
	for _, t := range r.opts.Steps.Types() {
		info, _ := r.opts.Steps.Lookup(t)
		reg.Register(info)
	}
	for _, e := range r.active() {
		for _, s := range e.p.Steps {
			if !e.disabled[s.Type] {
				reg.Register(s)
			}
		}
	}
	return reg
}

// Sandboxes returns the active plugins' sandbox providers; New receives
// the plugin's settings in ProviderEnv.Settings.
func (r *Registry) Sandboxes() []SandboxProvider {
	var out []SandboxProvider
	for _, e := range r.active() {
		for _, s := range e.p.Sandboxes {
			s.New = withProviderEnv(e, s.New)
			out = append(out, s)
		}
	}
	return out
}

// EnvBackends returns the active plugins' env backends, as Sandboxes does.
func (r *Registry) EnvBackends() []EnvBackend {
	var out []EnvBackend
	for _, e := range r.active() {
		for _, b := range e.p.EnvBackends {
			b.New = withProviderEnv(e, b.New)
			out = append(out, b)
		}
	}
	return out
}

// withProviderEnv wraps a provider's or backend's New so that it gets e's
// ProviderEnv (its settings and its own Root).
func withProviderEnv[T any](e *entry, next func(context.Context, *ProviderEnv) (T, error)) func(context.Context, *ProviderEnv) (T, error) {
	return func(ctx context.Context, env *ProviderEnv) (T, error) { return next(ctx, e.providerEnv(env)) }
}

// providerEnv is env for one of e's providers: its settings, and a Root
// of its own (<root>/<plugin name>) so plugins never share state folders.
func (e *entry) providerEnv(env *ProviderEnv) *ProviderEnv {
	cp := ProviderEnv{}
	if env != nil {
		cp = *env
	}
	cp.Settings = e.settings
	if cp.Root != "" {
		cp.Root = filepath.Join(cp.Root, e.p.Name)
	}
	return &cp
}

// SandboxNames lists every sandbox provider and env backend name, the
// built-in ones first (for config validation).
func (r *Registry) SandboxNames() []string {
	out := sortedCopy(r.opts.Sandboxes)
	for _, e := range r.active() {
		out = append(out, e.provides.Sandboxes...)
	}
	return out
}

// Stores returns a fresh store registry: the built-in factories, then the
// active plugins' ones.
func (r *Registry) Stores() *stores.Registry {
	reg := r.opts.Stores()
	for _, e := range r.active() {
		for _, s := range e.p.Stores {
			reg.Register(s.Name, s.Factory)
		}
	}
	return reg
}

// StoreImpls lists the plugin-added store implementations per kind
// ("document" → ["mongo"]), for config validation.
func (r *Registry) StoreImpls() map[string][]string {
	out := map[string][]string{}
	for _, e := range r.active() {
		for _, s := range e.p.Stores {
			parts := strings.SplitN(s.Name, ".", 3)
			out[parts[1]] = append(out[parts[1]], parts[2])
		}
	}
	return out
}

// Commands returns fresh command trees of the active plugins' commands.
func (r *Registry) Commands() []*cobra.Command {
	var out []*cobra.Command
	for _, e := range r.active() {
		for _, c := range e.p.Commands {
			out = append(out, c())
		}
	}
	return out
}

// BundleFS returns the installed bundle tree: the built-in packages, then
// one package per active plugin with bundles (named after the plugin).
func (r *Registry) BundleFS() fs.FS {
	m := &mountFS{subs: map[string]fs.FS{}}
	pkgs, _ := fs.ReadDir(r.opts.Bundles, ".") // read once by NewRegistry already
	for _, p := range pkgs {
		if p.IsDir() {
			sub, err := fs.Sub(r.opts.Bundles, p.Name())
			if err == nil {
				m.mount(p.Name(), sub)
			}
		}
	}
	for _, e := range r.active() {
		if e.p.Bundles != nil {
			m.mount(e.p.Name, e.p.Bundles)
		}
	}
	return m
}

func dirNames(fsys fs.FS, dir string) ([]string, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range ents {
		if d.IsDir() {
			out = append(out, d.Name())
		}
	}
	return out, nil
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
