package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/stores"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// coin is a plugin step type: it records a flip and scores it.
type coin struct {
	VerifierID string `json:"verifier_id"`
}

func (c *coin) Validate() error {
	if c.VerifierID == "" {
		return runner.Required("verifier_id")
	}
	return nil
}

func (c *coin) Run(ctx context.Context, rc *runner.RunContext) error {
	rc.SetMetadata("coin", "heads")
	rc.SetVerification(c.VerifierID, runner.Verification{Score: 1, Results: []runner.Row{{"result": true}}})
	return nil
}

// coinPlugin is a Go plugin as plugin.Register receives it; settings
// records what Configure got.
func coinPlugin(settings *map[string]any) plugin.Plugin {
	return plugin.Plugin{Name: "coin", Version: "v1.2.3", Module: "example.com/coin",
		Steps: []runner.StepInfo{{Type: "flip_coin", New: func() runner.Step { return new(coin) }}},
		Commands: []func() *cobra.Command{func() *cobra.Command {
			return &cobra.Command{Use: "coin", RunE: func(cmd *cobra.Command, _ []string) error {
				cmd.OutOrStdout().Write([]byte("heads\n"))
				return nil
			}}
		}},
		Configure: func(s map[string]any) error {
			if settings != nil {
				*settings = s
			}
			if s["fail"] == true {
				return errors.New("fail was asked for")
			}
			return nil
		},
	}
}

// runWith runs the CLI with the given compiled-in plugin set.
func (c *cli) runWith(plugins []plugin.Plugin, args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	out, errb := newSyncBuffer(), newSyncBuffer()
	d := &deps{stdout: out, stderr: errb, sandboxRoot: local.DefaultRoot, openStoresFor: openConfiguredStores, getenv: os.Getenv,
		pluginSet: func() []plugin.Plugin { return plugins }}
	code = execute(context.Background(), args, d)
	return code, out.String(), errb.String()
}

// useConfig writes config.toml and points AGENT_ENV_CONFIG at it.
func (c *cli) useConfig(body string) {
	c.t.Helper()
	p := filepath.Join(c.t.TempDir(), "config.toml")
	writeFile(c.t, p, body)
	c.t.Setenv("AGENT_ENV_CONFIG", p)
}

func TestPluginListShowsBuiltinsAndPlugins(t *testing.T) {
	c := newCLI(t)
	var got map[string]any
	c.useConfig("[plugins.coin]\nside = \"heads\"\napi_key = \"sk-not-shown\"\n")
	code, out, errOut := c.runWith([]plugin.Plugin{coinPlugin(&got)}, "plugin", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var recs []plugin.Record
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(recs) != 2 || recs[0].Kind != plugin.KindBuiltin || recs[1].Name != "coin" || recs[1].Status != "active" || recs[1].Kind != plugin.KindGo {
		t.Fatalf("records: %+v", recs)
	}
	if !strings.Contains(strings.Join(recs[0].Provides.Bundles, ","), "agentenv-framework/hello") {
		t.Errorf("the built-in bundles are not listed: %v", recs[0].Provides.Bundles)
	}
	if got["side"] != "heads" {
		t.Errorf("the plugin got settings %v", got)
	}
	if strings.Contains(out, "sk-not-shown") {
		t.Error("a secret setting is printed")
	}
	code, out, _ = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "plugin", "list")
	if code != 0 || !strings.Contains(out, "coin") || !strings.Contains(out, "steps: flip_coin; commands: coin") {
		t.Errorf("table:\n%s", out)
	}
	code, out, _ = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "plugin", "show", "coin")
	if code != 0 || !strings.Contains(out, "Module:   example.com/coin") || !strings.Contains(out, "Steps:    flip_coin") {
		t.Errorf("show:\n%s", out)
	}
	code, _, errOut = c.runWith(nil, "plugin", "show", "nope")
	if code != 1 || !strings.Contains(errOut, `no plugin "nope"`) {
		t.Errorf("show nope: %d %s", code, errOut)
	}
	code, out, _ = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "coin")
	if code != 0 || out != "heads\n" {
		t.Errorf("plugin command: %d %q", code, out)
	}
}

// A plugin step type is usable by bundles and tasks; without the plugin
// the task is refused at create, naming the type and plugin list.
func TestPluginStepRunsAndUnknownTypeIsRefused(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(t.TempDir(), "coin-game")
	writeFile(t, filepath.Join(dir, "tasks", "flip.json"), `[{"id":"flip","type":"flip_coin","verifier_id":"flip"}]`)
	code, out, errOut := c.runWith([]plugin.Plugin{coinPlugin(nil)}, "run", dir)
	if code != 0 || !strings.Contains(out, "tasks/flip.json v1: passed (flip: 1)") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = c.runWith(nil, "task", "create", filepath.Join(dir, "tasks", "flip.json"), "--id", "flip")
	if code != 1 || !strings.Contains(errOut, `Unknown task step type "flip_coin"`) || !strings.Contains(errOut, "agent-env plugin list") {
		t.Fatalf("create without the plugin: exit %d\n%s", code, errOut)
	}
	code, out, errOut = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "task", "create", filepath.Join(dir, "tasks", "flip.json"), "--id", "flip")
	if code != 0 || !strings.Contains(out, "Created task: id=flip") {
		t.Fatalf("create with the plugin: exit %d\n%s\n%s", code, out, errOut)
	}
	// [task_steps] impls that leave the plugin's type out disable it.
	c.useConfig("[task_steps]\nimpls = [\"deploy_env\"]\n")
	code, _, errOut = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "run", dir)
	if code == 0 || !strings.Contains(errOut, `Unknown task step type "flip_coin"`) {
		t.Fatalf("run with the type disabled: exit %d\n%s", code, errOut)
	}
	c.useConfig("[task_steps]\nimpls = [\"coin:flip_coin\"]\n")
	if code, out, errOut = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "run", dir); code != 0 {
		t.Fatalf("run with the type selected: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A plugin that claims a built-in name is refused by plugin check, naming
// both owners, and every other command refuses to start.
func TestPluginClaimingABuiltinIsRefused(t *testing.T) {
	c := newCLI(t)
	evil := plugin.Plugin{Name: "evil", Steps: []runner.StepInfo{{Type: "deploy_env", New: func() runner.Step { return new(coin) }}}}
	set := []plugin.Plugin{coinPlugin(nil), evil}
	code, out, _ := c.runWith(set, "plugin", "check")
	if code != 1 || !strings.Contains(out, `plugin "evil" cannot add step type "deploy_env": it is built-in (agentenv-framework)`) {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	code, _, errOut := c.runWith(set, "run", "hello", "--dry-run")
	if code != 1 || !strings.Contains(errOut, `"deploy_env"`) || !strings.Contains(errOut, "agent-env plugin check") {
		t.Fatalf("run with a refused plugin: exit %d\n%s", code, errOut)
	}
	code, out, _ = c.runWith(set, "plugin", "list", "--json")
	if code != 0 || !strings.Contains(out, `"status": "refused: plugin \"evil\" cannot add step type \"deploy_env\"`) {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	// A plugin whose settings fail is inactive and fails check.
	c.useConfig("[plugins.coin]\nfail = true\n")
	code, out, _ = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "plugin", "check")
	if code != 1 || !strings.Contains(out, "fail was asked for") {
		t.Fatalf("check with failing settings: exit %d\n%s", code, out)
	}
	c.useConfig("")
	if code, out, _ = c.runWith([]plugin.Plugin{coinPlugin(nil)}, "plugin", "check"); code != 0 || !strings.Contains(out, "1 plugin(s) checked, no problems.") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
}

// Without a Go toolchain, plugin add says so and how to get one, and
// changes nothing.
func TestPluginAddWithoutToolchain(t *testing.T) {
	c := newCLI(t)
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	out := filepath.Join(dir, "agent-env")
	setFile := filepath.Join(dir, "plugins.toml")
	code, _, errOut := c.runWith(nil, "plugin", "add", "example.com/dice@v0.1.0", "--output", out, "--plugins-file", setFile)
	if code != 1 || !strings.Contains(errOut, "no Go toolchain found") || !strings.Contains(errOut, "install Go") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, p := range []string{out, setFile} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".agent-env-new-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	code, _, errOut = c.runWith(nil, "plugin", "remove", "dice", "--output", out, "--plugins-file", setFile)
	if code != 1 || !strings.Contains(errOut, `no Go plugin "dice" in the plugin set`) {
		t.Fatalf("remove: exit %d\n%s", code, errOut)
	}
}

func TestParseModuleArg(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/local/dice\n\ngo 1.26.0\n")
	cases := map[string]string{
		"example.com/dice@v0.1.0": "example.com/dice@v0.1.0",
		"example.com/dice":        "example.com/dice",
		dir:                       "example.com/local/dice (" + dir + ")",
	}
	for arg, want := range cases {
		m, err := parseModuleArg(arg)
		if err != nil || m.String() != want {
			t.Errorf("%s: %v %q, want %q", arg, err, m.String(), want)
		}
	}
	if _, err := parseModuleArg(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a Go module folder") {
		t.Errorf("a folder without go.mod: %v", err)
	}
}

// Names plugins add are valid in config.toml, and the configured plugin
// store is the one commands open.
func TestPluginStoreAndSandboxNamesInConfig(t *testing.T) {
	c := newCLI(t)
	opened, created := 0, 0
	mirror := plugin.Plugin{Name: "mirror",
		Stores: []plugin.Store{{Name: "store.object.mirror", Factory: stores.ObjectFactory(
			func(ctx context.Context, env *stores.Env) (registry.ObjectStore, error) {
				opened++
				return fsobject.New(filepath.Join(env.StateRoot, "mirror"), nil)
			})}},
		Sandboxes: []plugin.SandboxProvider{{Name: "cloud",
			New: func(ctx context.Context, env *plugin.ProviderEnv) (runner.SandboxProvider, error) {
				return &cloudProvider{Provider: local.New(env.Root, nil), created: &created}, nil
			}}}}
	c.useConfig("[stores.object]\nimpl = \"mirror\"\n[sandbox]\ndefault = \"cloud\"\n")
	code, _, errOut := c.runWith(nil, "config", "show")
	if code != 1 || !strings.Contains(errOut, `unknown object store "mirror"`) {
		t.Fatalf("without the plugin: exit %d\n%s", code, errOut)
	}
	dir := filepath.Join(t.TempDir(), "cloudy")
	writeFile(t, filepath.Join(dir, "tasks", "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","sandbox_type":"cloud"},
	  {"id":"check","type":"verify_sandbox","sandbox_name":"box","verifier_id":"check",
	   "criteria":[{"type":"bash_cmd_succeeds","criterion":"runs","bash_cmd":"true"}]}]`)
	code, out, errOut := c.runWith([]plugin.Plugin{mirror}, "run", dir)
	if code != 0 || opened == 0 || created != 1 || !strings.Contains(out, "passed (check: 1)") {
		t.Fatalf("with the plugin: exit %d, store opened %d times, %d sandboxes created\n%s\n%s", code, opened, created, out, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(c.sandboxDir, "plugins", "mirror", "*")); len(left) != 0 || !strings.Contains(out, "Tore down 1 sandbox") {
		t.Fatalf("left behind: %v\n%s", left, out)
	}
}

// cloudProvider is a plugin sandbox provider: local work folders under
// another name.
type cloudProvider struct {
	*local.Provider
	created *int
}

func (p *cloudProvider) Type() string { return "cloud" }

func (p *cloudProvider) CreateSandbox(ctx context.Context, s sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := p.Provider.CreateSandbox(ctx, s)
	if err != nil {
		return nil, err
	}
	*p.created++
	return cloudSandbox{sb}, nil
}

type cloudSandbox struct{ sandbox.Sandbox }

func (cloudSandbox) Type() string { return "cloud" }
