package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestEpisodeServe(t *testing.T) {
	c := newCLI(t)
	if code, out, errb := c.run("run", "hello"); code != 0 {
		t.Fatalf("run hello: %d\n%s\n%s", code, out, errb)
	}
	out, errb := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"episode", "serve", "--addr", "127.0.0.1:0", "--sandbox", "process"}, c.deps(out, errb))
	}()
	out.waitFor(t, "Press Ctrl-C to stop.")
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no address in %q", out)
	}
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(m[1]+"/episodes", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	// An unknown task, and a task with no agent to play, are refused.
	if st, v := post(`{"task_id":"@local/nope"}`); st != http.StatusNotFound || !strings.Contains(v["error"].(string), "@local/nope") {
		t.Errorf("unknown task: %d %v", st, v)
	}
	if st, v := post(`{"task_id":"@local/agentenv-framework/hello/hello"}`); st != http.StatusBadRequest || !strings.Contains(v["error"].(string), "prompt_agent") {
		t.Errorf("hello: %d %v", st, v)
	}
	if st, v := post(`{"task_id":"bad id!"}`); st != http.StatusBadRequest {
		t.Errorf("bad id: %d %v", st, v)
	}
	// The start message lists the routes and a curl line to begin with.
	for _, want := range []string{"POST /episodes ", "GET  /episodes/{id}/result?wait_seconds=30", "MCP  /episodes/{id}/turns/{turn_id}/mcp/{server}",
		`Try: curl -s -X POST ` + m[1] + `/episodes -d '{"task_id":"q3-email"}'`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("start message lacks %q:\n%s", want, out)
		}
	}
	// Bundle names, as `run` takes them, are tasks too: the bundle is
	// registered on first use. hello prompts no agent, so it is refused
	// for that reason, not as unknown.
	if st, v := post(`{"task_id":"hello"}`); st != http.StatusBadRequest || !strings.Contains(v["error"].(string), "prompt_agent") {
		t.Errorf("hello by name: %d %v", st, v)
	}
	st, v := post(`{"task_id":"q3-email"}`)
	if st != http.StatusCreated {
		t.Fatalf("q3-email by name: %d %v", st, v)
	}
	id := v["episodes"].([]any)[0].(map[string]any)["episode_id"].(string)
	resp, err := http.Post(m[1]+"/episodes/"+id+"/abandon", "application/json", strings.NewReader(`{"reason":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Status string `json:"status"`
		Result struct {
			TaskID string `json:"task_id"`
		} `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if res.Status != "abandoned" || !strings.HasSuffix(res.Result.TaskID, "q3-email/q3-email") {
		t.Errorf("abandon: %+v", res)
	}
	if !strings.Contains(out.String(), "tasks/q3-email.json") {
		t.Errorf("the bundle was not registered:\n%s", out)
	}
	cancel(interruptFor(os.Interrupt))
	if code := <-done; code != 0 || !strings.HasSuffix(out.String(), "Episode server stopped.\n") {
		t.Errorf("exit %d\n%s\n%s", code, out, errb)
	}
	if code, _, errb := c.run("episode", "serve", "--max-episodes", "0"); code != 1 || !strings.Contains(errb, "--max-episodes") {
		t.Errorf("--max-episodes 0: %d %s", code, errb)
	}
}
