package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The dice bundle runs end to end with its Python process plugin found on
// PATH, and no plugin process outlives the command.
func TestRunWithProcessPlugin(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	c := newCLI(t)
	dice, err := filepath.Abs("../../examples/plugins/dice")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dice+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, errb := newSyncBuffer(), newSyncBuffer()
	d := c.deps(out, errb)
	code := execute(context.Background(), []string{"run", filepath.Join(dice, "bundle")}, d)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
	}
	for _, want := range []string{
		"[tasks/dice.json] step 1/2 roll (dice_roll)\n",
		"[tasks/dice.json] step 2/2 grade (dice_grade)\n",
		"tasks/dice.json v1: passed (grade: 1)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if left := d.startedProcessPlugins().Running(); len(left) > 0 {
		t.Errorf("plugin processes still running after the command: %v", left)
	}
	// Seeded: a second run (same seed row, same step id) rolls the same.
	rolls := func(out string) any {
		m := regexp.MustCompile(`instance (\S+)\n`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no instance in:\n%s", out)
		}
		return c.instance(m[1]).Context["metadata"].(map[string]any)["roll"].(map[string]any)["rolls"]
	}
	first := rolls(out.String())
	if l, _ := first.([]any); len(l) != 3 {
		t.Fatalf("metadata.roll.rolls = %v, want 3 rolls", first)
	}
	code, again, stderr := c.run("run", filepath.Join(dice, "bundle"))
	if code != 0 || !reflect.DeepEqual(rolls(again), first) {
		t.Errorf("second run: exit %d, rolls %v, want %v\n%s", code, rolls(again), first, stderr)
	}
}

// A sandbox provider from a process plugin serves a bundle's sandboxes:
// hello runs in hostdir sandboxes (examples/plugins/hostdir, built here).
func TestRunWithPluginSandboxProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an example plugin")
	}
	bin := t.TempDir() // built before newCLI moves HOME, so the build cache is the user's

	build := exec.Command("go", "build", "-o", filepath.Join(bin, "agentenv-plugin-hostdir"), "github.com/agentenv/agentenv/examples/plugins/hostdir")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	c := newCLI(t)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, errb := newSyncBuffer(), newSyncBuffer()
	d := c.deps(out, errb)
	code := execute(context.Background(), []string{"run", "hello", "--sandbox", "hostdir"}, d)
	if code != 0 || !strings.Contains(out.String(), "passed (hello: 1)") || !strings.Contains(out.String(), "Tore down 1 sandbox.") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
	}
	if left := d.startedProcessPlugins().Running(); len(left) > 0 {
		t.Errorf("plugin processes still running after the command: %v", left)
	}
	if left := c.leftoverSandboxes(); len(left) != 0 {
		t.Errorf("leftover local work folders: %v (hostdir keeps its own)", left)
	}
}

// plugin list shows process plugins with their status, and plugin check
// fails on one that cannot start.
func TestPluginListProcessPlugins(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	c := newCLI(t)
	dice, err := filepath.Abs("../../examples/plugins/dice")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dice+string(os.PathListSeparator)+os.Getenv("PATH"))
	code, out, stderr := c.run("plugin", "list", "--json")
	if code != 0 {
		t.Fatalf("plugin list: exit %d\n%s\n%s", code, out, stderr)
	}
	var recs []struct {
		Name, Kind, Status, Version string
		Provides                    struct{ Steps []string }
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("plugin list --json: %v\n%s", err, out)
	}
	found := false
	for _, r := range recs {
		if r.Name == "dice" {
			found = true
			if r.Kind != "process" || r.Status != "active" || r.Version != "0.1.0" || strings.Join(r.Provides.Steps, ",") != "dice_roll,dice_grade" {
				t.Errorf("dice record = %+v", r)
			}
		}
	}
	if !found {
		t.Errorf("no dice record in %s", out)
	}
	if code, out, _ := c.run("plugin", "check"); code != 0 || !strings.Contains(out, "no problems") {
		t.Errorf("plugin check: exit %d\n%s", code, out)
	}

	cfg := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), "[plugins.broken]\ncommand = [\"sh\", \"-c\", \"echo no licence >&2; exit 4\"]\n")
	t.Setenv("AGENT_ENV_CONFIG", cfg)
	code, out, _ = c.run("plugin", "check")
	// The plugin may be gone before or after the request is written.
	if code == 0 || !regexp.MustCompile(`plugin broken: plugin/describe: (could not send the request: )?exited \(exit status 4\); its last stderr lines: no licence`).MatchString(out) {
		t.Errorf("plugin check with a broken plugin: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("plugin", "show", "broken")
	if code != 0 || !strings.Contains(out, "Kind:     process") || !strings.Contains(out, "Status:   inactive: plugin broken") {
		t.Errorf("plugin show broken: exit %d\n%s", code, out)
	}
}

// stubbornPlugin is a process plugin whose step never answers, not even
// $/cancelRequest, and which starts a child of its own.
const stubbornPlugin = `#!/usr/bin/env python3
import json, subprocess, sys
child = subprocess.Popen(["sleep", "300"])
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "plugin/describe":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocol_version": "1", "name": "stubborn",
            "version": "1", "steps": [{"type": "wait_forever"}]}}), flush=True)
    elif m.get("method") == "step/validate":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "none"}}), flush=True)
`

// Ctrl-C during a plugin step cancels the run, and the plugin, which
// ignores the cancel, is killed with everything it started.
func TestCtrlCStopsPluginProcesses(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	c := newCLI(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "agentenv-plugin-stubborn"), []byte(stubbornPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := filepath.Join(t.TempDir(), "stuck")
	writeFile(t, filepath.Join(dir, "tasks", "stuck.json"), `[{"id":"w","type":"wait_forever"}]`)
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	d := c.deps(out, errb)
	done := make(chan int, 1)
	go func() { done <- execute(ctx, []string{"run", dir}, d) }()
	out.waitFor(t, "step 1/1 w (wait_forever)")
	cancel(interruptFor(os.Interrupt))
	if code := <-done; code != exitInterrupted {
		t.Errorf("exit %d, want %d\n%s\n%s", code, exitInterrupted, out, errb)
	}
	if !strings.Contains(out.String(), "tasks/stuck.json v1: cancelled") {
		t.Errorf("output:\n%s", out)
	}
	if left := d.startedProcessPlugins().Running(); len(left) > 0 {
		t.Errorf("plugin process groups still alive after Ctrl-C: %v", left)
	}
}

// markerPlugin is a process plugin that leaves a file named by its first
// argument when it starts, then serves one step type.
const markerPlugin = `#!/bin/sh
echo started >> "$1"
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
  *plugin/describe*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocol_version":"1","name":"marker","version":"1","steps":[{"type":"mark"}]}}\n' "$id" ;;
  *'"id"'*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"none"}}\n' "$id" ;;
  esac
done
`

// Process plugins start lazily: a command that needs no step type or
// sandbox provider (version, artifact list) starts none; task create
// starts them to validate its step types (an unknown one is still refused
// naming it and pointing at plugin list), and plugin list lists them.
func TestProcessPluginsStartOnlyWhenNeeded(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	script := writeFile(t, filepath.Join(dir, "marker.sh"), markerPlugin)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, filepath.Join(dir, "config.toml"), fmt.Sprintf("[plugins.marker]\ncommand = [%q, %q]\n", script, marker))
	t.Setenv("AGENT_ENV_CONFIG", cfg)
	started := func() bool {
		_, err := os.Stat(marker)
		return err == nil
	}
	for _, args := range [][]string{{"version"}, {"artifact", "list"}, {"config", "show"}} {
		if code, out, errOut := c.run(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		if started() {
			t.Fatalf("%v started the process plugin", args)
		}
	}
	task := writeFile(t, filepath.Join(dir, "t.json"), `[{"id":"m","type":"mark"},{"id":"x","type":"flip_coin"}]`)
	code, _, errOut := c.run("task", "create", task, "--id", "t")
	if code != 1 || !strings.Contains(errOut, "flip_coin") || strings.Contains(errOut, `"mark"`) || !strings.Contains(errOut, "agent-env plugin list") {
		t.Errorf("task create with an unknown step type: exit %d\n%s", code, errOut)
	}
	if !started() {
		t.Error("task create did not start the process plugin to validate its step types")
	}
	_ = os.Remove(marker)
	code, out, errOut := c.run("plugin", "list")
	if code != 0 || !regexpLine(out, `^marker\s+process\s+1\s+steps: mark\s+active$`) || !started() {
		t.Errorf("plugin list: exit %d\n%s\n%s", code, out, errOut)
	}
}
