package agentsdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// A config failure after the task exists is an opaque infra failure.
func TestConfigFailureAfterTaskCreationIsOpaque(t *testing.T) {
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		var wrong struct {
			TimeoutSeconds string `json:"timeout_seconds"`
		}
		if err := tk.Config(&wrong); err != nil {
			return nil, err
		}
		return agentsdk.Text("unreachable"), nil
	}))
	task, err := a.Client.Send(testCtx(t), "", "x", true)
	if err != nil {
		t.Fatal(err)
	}
	tr := task.Trailer()
	if task.Status.State != "failed" || tr.ErrorType != protocol.ErrorTypeInfra || tr.ErrorCode != protocol.ErrorCodeUnhandled || !corrRE.MatchString(tr.ErrorMessage) {
		t.Fatalf("task = %s %+v", task.Status.State, tr)
	}
}

func TestTimeoutSecondsBoundsTheRun(t *testing.T) {
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	if st, body := ext(t, a, "POST", protocol.AgentConfigPath, map[string]any{"timeout_seconds": 1}); st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	task, err := a.Client.Prompt(testCtx(t), "", "wait")
	if err != nil {
		t.Fatal(err)
	}
	if tr := task.Trailer(); task.Status.State != "failed" || tr.ErrorCode != "task_timeout" {
		t.Fatalf("task = %s %+v", task.Status.State, tr)
	}
}

func TestMiddlewareOrder(t *testing.T) {
	tag := func(s string) agentsdk.Middleware {
		return func(next agentsdk.Handler) agentsdk.Handler {
			return func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
				r, err := next(ctx, tk)
				if err == nil {
					r.Parts[0].Text = s + "(" + r.Parts[0].Text + ")"
				}
				return r, err
			}
		}
	}
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "mw"}, &agentsdk.Options{Logger: quiet(),
		Agent:      agentsdk.Handler(func(context.Context, *agentsdk.Task) (*agentsdk.Result, error) { return agentsdk.Text("run"), nil }),
		Middleware: []agentsdk.Middleware{tag("outer"), tag("inner")}})
	task, err := a.Client.Send(testCtx(t), "", "x", true)
	if err != nil || task.Text() != "outer(inner(run))" {
		t.Fatalf("%+v %v", task, err)
	}
}

// The trajectory cache keeps MaxContexts contexts; older ended ones go.
func TestTrajectoryContextsAreBounded(t *testing.T) {
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "lru"}, &agentsdk.Options{Logger: quiet(), MaxContexts: 2,
		Agent: agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
			_ = tk.Trajectory.Append(map[string]any{"n": tk.Text()})
			return agentsdk.Text("ok"), nil
		})})
	ctx := testCtx(t)
	for i := range 3 {
		if _, err := a.Client.Send(ctx, fmt.Sprintf("c%d", i), "x", true); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := ext(t, a, "POST", protocol.AgentTrajectoryPath, map[string]any{"context_id": "c0"}); st != 404 {
		t.Fatalf("oldest context kept: %d", st)
	}
	for _, c := range []string{"c1", "c2"} {
		if st, _ := ext(t, a, "POST", protocol.AgentTrajectoryPath, map[string]any{"context_id": c}); st != 200 {
			t.Fatalf("%s evicted: %d", c, st)
		}
	}
}

// A page is capped at 4 MiB but always holds at least one event.
func TestTrajectoryPageByteBudget(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		for range 2 {
			if err := tk.Trajectory.Append(map[string]string{"blob": big}); err != nil {
				return nil, err
			}
		}
		return agentsdk.Text("ok"), nil
	}))
	task, err := a.Client.Send(testCtx(t), "", "x", true)
	if err != nil {
		t.Fatal(err)
	}
	_, body := ext(t, a, "POST", protocol.AgentTrajectoryPath, map[string]any{"task_id": task.ID, "after": 0})
	var page protocol.TrajectoryEventsResponse
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 1 || page.Next != 1 || !page.HasMore {
		t.Fatalf("page: %d events next %d more %v", len(page.Events), page.Next, page.HasMore)
	}
}

func TestAddrFromEnvironmentAndGracefulServe(t *testing.T) {
	s, err := agentsdk.New(&agentsdk.Card{Name: "x"}, &agentsdk.Options{Agent: echoAgent(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("A2A_HOST", "")
	t.Setenv("A2A_PORT", "")
	if s.Addr() != "0.0.0.0:8000" {
		t.Fatal(s.Addr())
	}
	t.Setenv("A2A_HOST", "127.0.0.1")
	t.Setenv("A2A_PORT", "0")
	if s.Addr() != "127.0.0.1:0" {
		t.Fatal(s.Addr())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a failed assertion before the explicit cancel must not leave Serve running
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
}

// The task store is bounded: the oldest tasks are forgotten.
func TestTaskStoreIsBounded(t *testing.T) {
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "few"}, &agentsdk.Options{Agent: echoAgent(), Logger: quiet(), MaxTasks: 2})
	ctx := testCtx(t)
	var ids []string
	for range 3 {
		task, err := a.Client.Send(ctx, "", "x", true)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	if _, err := a.Client.Get(ctx, ids[0]); err == nil {
		t.Fatal("oldest task still stored")
	}
	for _, id := range ids[1:] {
		if task, err := a.Client.Get(ctx, id); err != nil || task.Status.State != "completed" {
			t.Fatalf("task %s: %+v %v", id, task, err)
		}
	}
}
