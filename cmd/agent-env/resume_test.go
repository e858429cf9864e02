package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// savedEnvs lists the deployed_envs[] entries of every context file a run
// wrote to dir.
func savedEnvs(t *testing.T, dir string) (files []string, envs []map[string]any) {
	t.Helper()
	files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		var doc struct {
			DeployedEnvs []map[string]any `json:"deployed_envs"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &doc) == nil {
			envs = append(envs, doc.DeployedEnvs...)
		}
	}
	return files, envs
}

// postStatus POSTs a JSON body and returns the status.
func postStatus(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// gatewayAnswers reports whether an env's gateway still serves its card.
func gatewayAnswers(url string) bool {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url + "/.well-known/agent-env.json")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// A first task run deploys a real env (process sandbox) and is interrupted
// before its teardown_sandboxes step; the run resumed from its saved
// context at that step must tear the env down, not just mark it torn down
// and leave its processes running. Several runs from that context are
// refused.
func TestTaskRunResumeTearsDownSavedEnv(t *testing.T) {
	bins := envdeploytest.Build(t)
	c := newCLI(t)
	c.mustRun(
		[]string{"env", "gateway", "put", "--binary", bins.Gateway},
		[]string{"env", "mcp-server", "put", "--id", "echo", "--binary", bins.Echo, "--environment-name", "echo"},
	)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"env","type":"deploy_env","env_id":"echo","ttl_seconds":600},
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"wait","type":"verify_sandbox","sandbox_name":"box","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"sleep 300"}]},
	  {"id":"access","type":"modify_env_tool_access","env_id":"echo","action":"disable","role":"agent","tools":["echo_echo"]},
	  {"id":"down","type":"teardown_sandboxes","env_ids":["echo"],"sandbox_names":["box"],"fail_task_on_error":false}]`)
	if code, out, stderr := c.run("task", "create", f, "--id", "leaky"); code != 0 {
		t.Fatalf("create: %s %s", out, stderr)
	}

	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	var code int
	finished := make(chan struct{})
	// Whatever fails below, the first run is stopped and every env it
	// recorded is removed (teardown is idempotent).
	t.Cleanup(func() {
		cancel(nil)
		<-finished
		_, envs := savedEnvs(t, first)
		for _, e := range envs {
			if id, _ := e["instance_id"].(string); id != "" {
				c.run("env", "teardown", "--instance-id", id)
			}
		}
	})
	go func() {
		defer close(finished)
		code = execute(ctx, []string{"task", "run", "--id", "leaky", "--output-dir", first, "--env-sandbox", "process"}, c.deps(out, errb))
	}()
	out.waitFor(t, "Running step [3/5]: verify_sandbox (id=wait)...")
	cancel(interruptFor(syscall.SIGINT))
	<-finished
	if code != exitInterrupted {
		t.Fatalf("first run: exit %d, want %d\n%s\n%s", code, exitInterrupted, out, errb)
	}
	files, envs := savedEnvs(t, first)
	if len(files) != 1 || len(envs) != 1 {
		t.Fatalf("first run saved %v listing envs %v\n%s", files, envs, out)
	}
	env := envs[0]
	inst, _ := env["instance_id"].(string)
	url, _ := env["gateway_url"].(string)
	if inst == "" || env["sandbox_id"] == "" || env["sandbox_type"] != "process" || url == "" {
		t.Fatalf("saved env entry %v", env)
	}
	if !gatewayAnswers(url) {
		t.Fatalf("the env of the interrupted run is not running: the test proves nothing")
	}
	// The gateway's control token is kept out of the saved context and of
	// printed records; the resumed run finds it in the instance record
	// (its modify_env_tool_access step needs it).
	saved, _ := os.ReadFile(files[0])
	code, recOut, _ := c.run("env", "get-instance", "--id", inst)
	if code != 0 || !strings.Contains(recOut, `"control_token": "****"`) {
		t.Fatalf("env get-instance: exit %d\n%s", code, recOut)
	}
	code, tokOut, _ := c.run("env", "role-token", "--instance-id", inst, "--role", "agent")
	if code != 0 || !strings.HasPrefix(tokOut, "aer1.") {
		t.Fatalf("env role-token: exit %d\n%s", code, tokOut)
	}
	if _, has := env[gwclient.KeyControlToken]; has || strings.Contains(string(saved), "control_token") {
		t.Fatalf("the saved context holds the control token")
	}
	if st := postStatus(t, url+"/tools/disable", `{"role":"agent","tools":"*"}`); st != http.StatusUnauthorized {
		t.Fatalf("the deployed gateway's control routes are open: %d", st)
	}

	// Several runs would share the saved env; they are refused before any
	// step runs.
	seeds := writeFile(t, filepath.Join(dir, "seeds.csv"), "id\nu1\nu2\n")
	for _, args := range [][]string{
		{"task", "run", "--id", "leaky", "--k", "2"},
		{"task", "run-batch", "--id", "leaky", "--seeds", seeds},
	} {
		args = append(args, "--output-dir", second, "--start-step", "3", "--context-json", files[0])
		code, out, stderr := c.run(args...)
		if code != 1 || !strings.Contains(stderr, "lists 1 deployed env/agent instance") || !strings.Contains(stderr, "resume it as one run") ||
			strings.Contains(out, "Running step") {
			t.Errorf("%v: exit %d\n%s\n%s", args[:3], code, out, stderr)
		}
	}
	if !gatewayAnswers(url) {
		t.Fatal("a refused resume tore the env down")
	}
	var rout, rerr string

	code, rout, rerr = c.run("task", "run", "--id", "leaky", "--output-dir", second, "--start-step", "3", "--context-json", files[0])
	if code != 0 || !strings.Contains(rout, "Reattached saved instances: count=1\n") ||
		strings.Contains(rout, "Running step [1/5]") || !strings.Contains(rout, "Completed step [4/5]: modify_env_tool_access (id=access)") ||
		!strings.Contains(rout, "Completed step [5/5]: teardown_sandboxes (id=down)") {
		t.Errorf("resumed run: exit %d\n%s\n%s", code, rout, rerr)
	}
	if gatewayAnswers(url) {
		t.Errorf("the saved env's gateway %s still answers after the resumed run's teardown", url)
	}
	if code, out, _ := c.run("env", "get-instance", "--id", inst); code != 0 || !strings.Contains(out, `"status": "torn_down"`) {
		t.Errorf("env get-instance %s: exit %d\n%s", inst, code, out)
	}
	if left, _ := os.ReadDir(filepath.Join(c.sandboxDir, "process")); len(left) != 0 {
		t.Errorf("process groups left: %v", left)
	}
}
