package plugin_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/stores"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
)

// roll is a plugin step type.
type roll struct {
	Sides int `json:"sides"`
}

func (r *roll) Run(ctx context.Context, rc *runner.RunContext) error {
	rc.SetMetadata("roll", r.Sides)
	return nil
}

func stepInfo(typ string) runner.StepInfo {
	return runner.StepInfo{Type: typ, New: func() runner.Step { return new(roll) }}
}

func diceBundles() fs.FS {
	return fstest.MapFS{
		"game/tasks/play.json": {Data: []byte(`[{"id":"r","type":"roll_dice","sides":6}]`)},
	}
}

func TestAddListsAfterTheBuiltins(t *testing.T) {
	reg := plugin.NewRegistry(&plugin.Options{Version: "v1", Commands: []string{"run", "task"}})
	err := reg.Add(plugin.Plugin{Name: "dice", Version: "v0.1.0", Module: "example.com/dice",
		Steps:    []runner.StepInfo{stepInfo("roll_dice")},
		Commands: []func() *cobra.Command{func() *cobra.Command { return &cobra.Command{Use: "dice"} }},
		Bundles:  diceBundles()})
	if err != nil {
		t.Fatal(err)
	}
	all := reg.All()
	if len(all) != 2 || all[0].Name != plugin.BuiltinName || all[0].Kind != plugin.KindBuiltin || all[1].Name != "dice" {
		t.Fatalf("records: %+v", all)
	}
	d := all[1]
	if d.Kind != plugin.KindGo || d.Status != "active" || !d.Active || !slices.Equal(d.Provides.Steps, []string{"roll_dice"}) ||
		!slices.Equal(d.Provides.Commands, []string{"dice"}) || !slices.Equal(d.Provides.Bundles, []string{"dice/game"}) {
		t.Fatalf("dice record: %+v", d)
	}
	if !slices.Contains(all[0].Provides.Bundles, "agentenv-framework/hello") {
		t.Fatalf("the built-in bundles are not listed: %v", all[0].Provides.Bundles)
	}
	steps := reg.Steps()
	for _, typ := range []string{"deploy_env", "roll_dice"} {
		if _, err := steps.Lookup(typ); err != nil {
			t.Errorf("step registry lacks %s: %v", typ, err)
		}
	}
	if cmds := reg.Commands(); len(cmds) != 1 || cmds[0].Name() != "dice" {
		t.Fatalf("commands: %v", cmds)
	}
	// The bundle tree holds the built-in package and the plugin's.
	installed, err := bundle.Installed(reg.BundleFS())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range installed {
		names = append(names, b.Package+"/"+b.Name)
	}
	if !slices.Contains(names, "dice/game") || !slices.Contains(names, "agentenv-framework/hello") {
		t.Fatalf("installed bundles: %v", names)
	}
	b, err := bundle.Locate("dice/game", reg.BundleFS())
	if err != nil || b.IDRoot != "@local/dice/game" {
		t.Fatalf("locate: %v %+v", err, b)
	}
	if errs := reg.Check(); len(errs) != 0 {
		t.Fatalf("check: %v", errs)
	}
}

func TestABuiltinNameIsRefusedNamingBothOwners(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	err := reg.Add(plugin.Plugin{Name: "evil", Steps: []runner.StepInfo{stepInfo("fine_step"), stepInfo("deploy_env")}})
	var clash *plugin.ClashError
	if !errors.As(err, &clash) || !errors.Is(err, plugin.ErrClash) {
		t.Fatalf("err = %v, want a *ClashError", err)
	}
	if clash.Name != "deploy_env" || clash.Owner != plugin.BuiltinName || clash.Claimant != "evil" {
		t.Fatalf("clash = %+v", clash)
	}
	for _, want := range []string{`"evil"`, `"deploy_env"`, plugin.BuiltinName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	// Refused whole: none of its step types is registered, and it is listed with why.
	if _, err := reg.Steps().Lookup("fine_step"); !errors.Is(err, runner.ErrUnknownStepType) {
		t.Fatalf("a refused plugin's other step type is registered: %v", err)
	}
	rec, ok := reg.Lookup("evil")
	if !ok || rec.Active || !strings.HasPrefix(rec.Status, "refused: ") {
		t.Fatalf("record = %+v", rec)
	}
	if len(reg.Check()) != 1 || len(reg.Refusals()) != 1 {
		t.Fatalf("check = %v", reg.Check())
	}
}

func TestAPluginCannotTakeAnotherPluginsName(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	if err := reg.Add(plugin.Plugin{Name: "first", Stores: []plugin.Store{{Name: "store.object.mem", Factory: stores.ObjectFactory(nil)}}}); err != nil {
		t.Fatal(err)
	}
	cases := []plugin.Plugin{
		{Name: "first"},
		{Name: "second", Stores: []plugin.Store{{Name: "store.object.mem", Factory: stores.ObjectFactory(nil)}}},
		{Name: "third", Stores: []plugin.Store{{Name: "store.object.local", Factory: stores.ObjectFactory(nil)}}},
		{Name: "fourth", Sandboxes: []plugin.SandboxProvider{{Name: "docker", New: func(context.Context, *plugin.ProviderEnv) (runner.SandboxProvider, error) { return nil, nil }}}},
		{Name: "agentenv-framework"},
	}
	for _, p := range cases {
		err := reg.Add(p)
		var clash *plugin.ClashError
		if !errors.As(err, &clash) || clash.Claimant != p.Name {
			t.Errorf("%s: err = %v, want a clash", p.Name, err)
		}
	}
	if !strings.Contains(reg.Refusals()[1].Error(), `plugin "first"`) {
		t.Errorf("the clash does not name the owner: %v", reg.Refusals()[1])
	}
}

func TestInvalidContributionsAreRefusedNotPanics(t *testing.T) {
	cases := map[string]plugin.Plugin{
		"bad plugin name":  {Name: "Bad_Name"},
		"bad step name":    {Name: "a", Steps: []runner.StepInfo{stepInfo("Roll-Dice")}},
		"step without New": {Name: "a", Steps: []runner.StepInfo{{Type: "roll"}}},
		"store kind":       {Name: "a", Stores: []plugin.Store{{Name: "store.document.x", Factory: stores.ObjectFactory(nil)}}},
		"sandbox no New":   {Name: "a", Sandboxes: []plugin.SandboxProvider{{Name: "cloud"}}},
		"empty bundles":    {Name: "a", Bundles: fstest.MapFS{}},
		"nil command":      {Name: "a", Commands: []func() *cobra.Command{nil}},
		"builtin kind":     {Name: "a", Kind: plugin.KindBuiltin},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			reg := plugin.NewRegistry(nil)
			if err := reg.Add(p); err == nil || errors.Is(err, plugin.ErrClash) {
				t.Fatalf("err = %v, want an invalid-contribution error", err)
			}
			if len(reg.Check()) == 0 {
				t.Fatal("check found nothing")
			}
		})
	}
}

func TestSettingsReachThePlugin(t *testing.T) {
	var got map[string]any
	reg := plugin.NewRegistry(nil)
	_ = reg.Add(plugin.Plugin{Name: "ok", Steps: []runner.StepInfo{stepInfo("roll_dice")},
		Configure: func(s map[string]any) error { got = s; return nil }})
	_ = reg.Add(plugin.Plugin{Name: "picky", Steps: []runner.StepInfo{stepInfo("pick")},
		Configure: func(s map[string]any) error { return errors.New("sides must be a number") }})
	err := reg.Configure(map[string]map[string]any{"ok": {"sides": 20, "api_key": "sk-123"}, "ghost": {}}, nil)
	if err == nil || !strings.Contains(err.Error(), `plugin "picky"`) || !strings.Contains(err.Error(), "sides must be a number") {
		t.Fatalf("configure err = %v", err)
	}
	if got["sides"] != 20 {
		t.Fatalf("settings = %v", got)
	}
	rec, _ := reg.Lookup("ok")
	if rec.Settings["api_key"] == "sk-123" {
		t.Fatal("a secret setting is shown")
	}
	picky, _ := reg.Lookup("picky")
	if picky.Active || !strings.HasPrefix(picky.Status, "inactive: ") {
		t.Fatalf("picky = %+v", picky)
	}
	if _, err := reg.Steps().Lookup("pick"); err == nil {
		t.Fatal("an inactive plugin's step type is registered")
	}
	if w := reg.Warnings(); len(w) != 1 || !strings.Contains(w[0], "[plugins.ghost]") {
		t.Fatalf("warnings = %v", w)
	}
}

func TestStepImplsSelectPluginSteps(t *testing.T) {
	newReg := func() *plugin.Registry {
		reg := plugin.NewRegistry(nil)
		_ = reg.Add(plugin.Plugin{Name: "dice", Steps: []runner.StepInfo{stepInfo("roll_dice"), stepInfo("reroll")}})
		_ = reg.Add(plugin.Plugin{Name: "cards", Steps: []runner.StepInfo{stepInfo("draw_card")}})
		return reg
	}
	enabled := func(reg *plugin.Registry) []string {
		var out []string
		for _, typ := range []string{"roll_dice", "reroll", "draw_card", "deploy_env"} {
			if _, err := reg.Steps().Lookup(typ); err == nil {
				out = append(out, typ)
			}
		}
		return out
	}
	cases := []struct {
		impls []string
		want  []string
	}{
		{nil, []string{"roll_dice", "reroll", "draw_card", "deploy_env"}},
		{[]string{"dice:roll_dice"}, []string{"roll_dice", "deploy_env"}},
		{[]string{"cards"}, []string{"draw_card", "deploy_env"}},
		{[]string{"reroll", "deploy_env"}, []string{"reroll", "deploy_env"}},
	}
	for _, c := range cases {
		reg := newReg()
		if err := reg.Configure(nil, c.impls); err != nil {
			t.Fatalf("%v: %v", c.impls, err)
		}
		if got := enabled(reg); !slices.Equal(got, c.want) {
			t.Errorf("impls %v: enabled %v, want %v", c.impls, got, c.want)
		}
	}
	reg := newReg()
	err := reg.Configure(nil, []string{"dice:draw_card", "pkg.steps:GameStep"})
	if err == nil || !strings.Contains(err.Error(), `"dice:draw_card"`) || !strings.Contains(err.Error(), `"pkg.steps:GameStep"`) {
		t.Fatalf("err = %v", err)
	}
	if rec, _ := reg.Lookup("dice"); !slices.Equal(rec.DisabledSteps, []string{"reroll", "roll_dice"}) {
		t.Fatalf("disabled = %v", rec.DisabledSteps)
	}
}

func TestCheckParsesPluginBundles(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	_ = reg.Add(plugin.Plugin{Name: "broken", Bundles: fstest.MapFS{
		"game/tasks/play.json": {Data: []byte(`[{"id":"r","type":"launch_rockets"}]`)},
	}})
	errs := reg.Check()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `plugin "broken"`) || !strings.Contains(errs[0].Error(), "launch_rockets") {
		t.Fatalf("check = %v", errs)
	}
}

func TestSandboxProvidersGetTheirSettings(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	var seen *plugin.ProviderEnv
	_ = reg.Add(plugin.Plugin{Name: "cloud", Sandboxes: []plugin.SandboxProvider{{Name: "cloud",
		New: func(_ context.Context, env *plugin.ProviderEnv) (runner.SandboxProvider, error) {
			seen = env
			return nil, nil
		}}}})
	_ = reg.Configure(map[string]map[string]any{"cloud": {"region": "eu"}}, nil)
	sps := reg.Sandboxes()
	if len(sps) != 1 {
		t.Fatalf("sandboxes = %v", sps)
	}
	if _, err := sps[0].New(context.Background(), &plugin.ProviderEnv{StoreID: "abc", Root: "/var/sandboxes"}); err != nil {
		t.Fatal(err)
	}
	if seen.StoreID != "abc" || seen.Settings["region"] != "eu" || seen.Root != "/var/sandboxes/cloud" {
		t.Fatalf("env = %+v", seen)
	}
	if !slices.Contains(reg.SandboxNames(), "cloud") || !slices.Contains(reg.SandboxNames(), "local") {
		t.Fatalf("names = %v", reg.SandboxNames())
	}
}

func TestStoresAddToTheBuiltins(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	f := stores.DocumentFactory(func(context.Context, *stores.Env) (registry.DocumentStore, error) { return nil, nil })
	if err := reg.Add(plugin.Plugin{Name: "mongo", Stores: []plugin.Store{{Name: "store.document.mongo", Factory: f}}}); err != nil {
		t.Fatal(err)
	}
	names := reg.Stores().Names()
	if !slices.Contains(names, "store.document.mongo") || !slices.Contains(names, "store.document.sqlite") {
		t.Fatalf("names = %v", names)
	}
	if got := reg.StoreImpls()["document"]; !slices.Equal(got, []string{"mongo"}) {
		t.Fatalf("impls = %v", got)
	}
}

func TestBundleFSIsAFileSystem(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	_ = reg.Add(plugin.Plugin{Name: "dice", Bundles: diceBundles()})
	if err := fstest.TestFS(reg.BundleFS(), "dice/game/tasks/play.json", "agentenv-framework/hello/README.md"); err != nil {
		t.Fatal(err)
	}
}

// A plugin added after Configure (a process plugin started when a command
// first needs it) gets its settings and [task_steps] impls as if it had
// been there, and a Pending plugin's settings table is not reported as
// configuring nothing.
func TestAPluginAddedAfterConfigure(t *testing.T) {
	reg := plugin.NewRegistry(nil)
	_ = reg.Add(plugin.Plugin{Name: "cards", Steps: []runner.StepInfo{stepInfo("draw_card")}})
	reg.Pending("dice")
	settings := map[string]map[string]any{"dice": {"sides": int64(6)}}
	if err := reg.Configure(settings, []string{"cards", "dice:roll_dice"}); err == nil || !strings.Contains(err.Error(), `"dice:roll_dice"`) {
		t.Fatalf("Configure = %v, want the impl naming a plugin not added yet reported", err)
	}
	if w := reg.Warnings(); len(w) != 0 {
		t.Errorf("warnings = %q, want none for a pending plugin", w)
	}
	if err := reg.Add(plugin.Plugin{Name: "dice", Kind: plugin.KindProcess, Steps: []runner.StepInfo{stepInfo("roll_dice"), stepInfo("reroll")}}); err != nil {
		t.Fatal(err)
	}
	rec, _ := reg.Lookup("dice")
	if rec.Settings["sides"] != int64(6) || strings.Join(rec.DisabledSteps, ",") != "reroll" {
		t.Errorf("late plugin record = %+v, want its settings and reroll disabled", rec)
	}
	if _, err := reg.Steps().Lookup("roll_dice"); err != nil {
		t.Error("roll_dice is not enabled")
	}
}
