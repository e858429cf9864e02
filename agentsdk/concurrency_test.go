package agentsdk_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// The first task of context A blocks; a second task of A must stay
// submitted (not started) while a task of context B runs to completion.
// Once A1 ends, A2 runs and sees A1's session ref (read after the lock).
func TestPerContextSerialisationCrossContextConcurrency(t *testing.T) {
	release := make(chan struct{})
	started := make(chan string, 4)
	var mu sync.Mutex
	running := map[string]int{}
	maxRunning := map[string]int{}
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		mu.Lock()
		running[tk.ContextID]++
		maxRunning[tk.ContextID] = max(maxRunning[tk.ContextID], running[tk.ContextID])
		mu.Unlock()
		defer func() { mu.Lock(); running[tk.ContextID]--; mu.Unlock() }()
		started <- tk.Text()
		if tk.Text() == "A1" {
			<-release
		}
		return &agentsdk.Result{Parts: []protocol.Part{protocol.TextPart(tk.Text() + " after " + tk.SessionRef)}, SessionRef: "ref-" + tk.Text()}, nil
	}))
	ctx := testCtx(t)
	a1, err := a.Client.Send(ctx, "ctxA", "A1", false)
	if err != nil {
		t.Fatal(err)
	}
	if s := <-started; s != "A1" {
		t.Fatalf("started %s", s)
	}
	a2, err := a.Client.Send(ctx, "ctxA", "A2", false)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := a.Client.Send(ctx, "ctxB", "B1", true)
	if err != nil || b1.Status.State != "completed" {
		t.Fatalf("B1 = %+v, %v (must run while A1 blocks)", b1, err)
	}
	if s := <-started; s != "B1" {
		t.Fatalf("started %s, want B1 (A2 must wait for A1)", s)
	}
	got, err := a.Client.Get(ctx, a2.ID)
	if err != nil || got.Status.State != "submitted" {
		t.Fatalf("A2 while A1 runs = %+v, %v", got, err)
	}
	close(release)
	f1, err := a.Client.Wait(ctx, a1.ID)
	if err != nil || f1.Text() != "A1 after " {
		t.Fatalf("A1 = %+v %v", f1, err)
	}
	f2, err := a.Client.Wait(ctx, a2.ID)
	if err != nil || f2.Text() != "A2 after ref-A1" {
		t.Fatalf("A2 = %+v %v", f2, err)
	}
	if maxRunning["ctxA"] != 1 {
		t.Fatalf("context A ran %d tasks at once", maxRunning["ctxA"])
	}
}

type streamingAgent struct{}

func (streamingAgent) Streaming() bool { return true }

func (streamingAgent) Run(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	for _, s := range []string{"step 1", "step 2"} {
		if err := t.Emit(ctx, []protocol.Part{protocol.TextPart(s)}, map[string]any{"progress": s}); err != nil {
			return nil, err
		}
	}
	return agentsdk.Text("final"), nil
}

func TestMessageStreamOrder(t *testing.T) {
	a := start(t, streamingAgent{})
	ctx := testCtx(t)
	c := getJSON(t, a.URL+protocol.AgentCardPath)
	if c["capabilities"].(map[string]any)["streaming"] != true {
		t.Fatal("streaming capability not advertised")
	}
	cl, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{URL: a.URL + "/a2a", Transport: a2a.TransportProtocolJSONRPC}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Destroy()
	var seq []string
	for ev, err := range cl.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "go"})}) {
		if err != nil {
			t.Fatal(err)
		}
		switch v := ev.(type) {
		case *a2a.Task:
			seq = append(seq, "task:"+string(v.Status.State))
		case *a2a.TaskStatusUpdateEvent:
			s := "status:" + string(v.Status.State)
			if v.Status.Message != nil {
				s += ":" + v.Status.Message.Parts[0].(a2a.TextPart).Text
			}
			if v.Final {
				s += ":final"
			}
			if v.Metadata["progress"] != nil {
				s += ":meta"
			}
			seq = append(seq, s)
		default:
			seq = append(seq, "other")
		}
	}
	want := []string{"task:submitted", "status:working", "status:working:step 1:meta", "status:working:step 2:meta", "status:completed:final:final"}
	if len(seq) != len(want) {
		t.Fatalf("events = %v", seq)
	}
	for i := range want {
		if seq[i] != want[i] {
			t.Fatalf("events = %v, want %v", seq, want)
		}
	}
	// A streaming agent also serves blocking sends.
	task, err := a.Client.Send(ctx, "", "go", true)
	if err != nil || task.Text() != "final" {
		t.Fatalf("blocking send = %+v %v", task, err)
	}
}

func TestEmitWithoutStreamingFails(t *testing.T) {
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		if err := tk.Emit(ctx, nil, nil); err != agentsdk.ErrNotStreaming {
			return nil, agentsdk.Fail("unexpected", "emit did not fail")
		}
		return agentsdk.Text("ok"), nil
	}))
	task, err := a.Client.Send(testCtx(t), "", "x", true)
	if err != nil || task.Text() != "ok" {
		t.Fatalf("task = %+v %v", task, err)
	}
}

func TestCancelRunningTask(t *testing.T) {
	done := make(chan error, 1)
	appended := make(chan error, 1)
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		appended <- tk.Trajectory.Append(map[string]any{"type": "started"})
		<-ctx.Done()
		done <- ctx.Err()
		return nil, ctx.Err()
	}))
	ctx := testCtx(t)
	task, err := a.Client.Send(ctx, "cc", "wait", false)
	if err != nil {
		t.Fatal(err)
	}
	// Cancel only once the handler's first append has landed: "working"
	// alone is reported before the handler runs, so cancelling then can
	// end the task before anything reaches the trajectory.
	if err := <-appended; err != nil {
		t.Fatalf("append: %v", err)
	}
	if _, err := a.Client.WaitFor(ctx, task.ID, func(t *agentsdktest.Task) bool { return t.Status.State == "working" }); err != nil {
		t.Fatal(err)
	}
	c, err := a.Client.Cancel(ctx, task.ID)
	if err != nil || c.Status.State != "canceled" {
		t.Fatalf("cancel = %+v %v", c, err)
	}
	if err := <-done; err == nil {
		t.Fatal("run context not cancelled")
	}
	final, err := a.Client.Wait(ctx, task.ID)
	if err != nil || final.Status.State != "canceled" {
		t.Fatalf("after cancel = %+v %v", final, err)
	}
	status, body, _ := a.Client.Ext(ctx, http.MethodPost, protocol.AgentTrajectoryPath, map[string]any{"task_id": task.ID, "after": 0})
	if status != 200 || !contains(body, `"state":"canceled"`) || !contains(body, `"started"`) {
		t.Fatalf("trajectory after cancel: %d %s", status, body)
	}
}

var _ = agentsdktest.SendParams

// A task waiting for its context can be cancelled; a finished one cannot.
func TestCancelWaitingAndFinishedTasks(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	a := start(t, agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		started <- struct{}{}
		if tk.Text() == "first" {
			<-release
		}
		return agentsdk.Text("done " + tk.Text()), nil
	}))
	ctx := testCtx(t)
	first, err := a.Client.Send(ctx, "q", "first", false)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	second, err := a.Client.Send(ctx, "q", "second", false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Client.Cancel(ctx, second.ID)
	if err != nil || c.Status.State != "canceled" {
		t.Fatalf("cancel waiting task: %+v %v", c, err)
	}
	close(release)
	if f, err := a.Client.Wait(ctx, first.ID); err != nil || f.Text() != "done first" {
		t.Fatalf("first = %+v %v", f, err)
	}
	if s, err := a.Client.Get(ctx, second.ID); err != nil || s.Status.State != "canceled" {
		t.Fatalf("second = %+v %v", s, err)
	}
	select {
	case <-started:
		t.Fatal("cancelled task ran")
	default:
	}
	var rpcErr *agentsdktest.RPCError
	if _, err := a.Client.Cancel(ctx, first.ID); !errors.As(err, &rpcErr) || rpcErr.Code != -32002 {
		t.Fatalf("cancel finished task: %v", err)
	}
}

// Emitting after the run returned is refused (the stream already ended).
func TestEmitAfterEndIsRefused(t *testing.T) {
	leaked := make(chan *agentsdk.Task, 1)
	a := start(t, lateEmitter{leaked})
	if _, err := a.Client.Send(testCtx(t), "", "x", true); err != nil {
		t.Fatal(err)
	}
	tk := <-leaked
	if err := tk.Emit(context.Background(), []protocol.Part{protocol.TextPart("late")}, nil); !errors.Is(err, agentsdk.ErrTaskEnded) {
		t.Fatalf("late emit: %v", err)
	}
}

type lateEmitter struct{ leaked chan *agentsdk.Task }

func (lateEmitter) Streaming() bool { return true }

func (l lateEmitter) Run(ctx context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	l.leaked <- t
	return agentsdk.Text("done"), nil
}
