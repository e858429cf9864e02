package triggers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// scriptedAgent is a real A2A agent (a2asrv on loopback) whose behaviour
// per received message is scripted by the test.
type scriptedAgent struct {
	mu      sync.Mutex
	texts   []string
	ctxIDs  []string
	cancels atomic.Int32
	script  func(n int, ctx context.Context, final func(a2a.TaskState) error) error
}

func (s *scriptedAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	var text string
	for _, p := range rc.Message.Parts {
		switch tp := p.(type) {
		case a2a.TextPart:
			text += tp.Text
		case *a2a.TextPart:
			text += tp.Text
		}
	}
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.ctxIDs = append(s.ctxIDs, rc.Message.ContextID)
	n := len(s.texts)
	s.mu.Unlock()
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	final := func(state a2a.TaskState) error {
		ev := a2a.NewStatusUpdateEvent(rc, state, a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "done"}))
		ev.Final = true
		return q.Write(ctx, ev)
	}
	return s.script(n, ctx, final)
}

func (s *scriptedAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s.cancels.Add(1)
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (s *scriptedAgent) received() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.texts...), append([]string{}, s.ctxIDs...)
}

func serveAgent(t *testing.T, s *scriptedAgent) string {
	mux := http.NewServeMux()
	mux.Handle("POST /a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(s)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func nlFixture(t *testing.T, agentURL, timeout string) *fixture {
	f := newFixture(t, &Options{Executor: NewA2AExecutor(&A2AExecutorOptions{PollInterval: 5 * time.Millisecond})})
	f.host.text("create_ticket", "{}")
	f.host.text("posted", "{}")
	code, m := f.post(t, "/triggers/register", `{"executor":{"a2a_url":"`+agentURL+`/","role":"executor","timeout_seconds":`+timeout+`},
	  "triggers":[{"id":"warn","when":{"type":"action","tool":"create_ticket"},"barrier":{"at":"provoking_call","timeout_seconds":60},
	    "actions":[{"type":"nl","instruction":"Post a weather warning in #general. Use ${HOME} if needed.",
	                "verify":{"tool":"posted","extract":"posted","predicate":{"equals":true}}}]}]}`)
	if code != 200 {
		t.Fatalf("%d %v", code, m)
	}
	return f
}

func TestNLExecutorRetriesOnceAfterFailedVerify(t *testing.T) {
	var posted atomic.Bool
	agent := &scriptedAgent{script: func(n int, ctx context.Context, final func(a2a.TaskState) error) error {
		if n == 2 { // the first attempt "forgets" to post
			posted.Store(true)
		}
		return final(a2a.TaskStateCompleted)
	}}
	f := nlFixture(t, serveAgent(t, agent), "30")
	f.host.tool("posted", func(context.Context, string, map[string]any) (string, bool, error) {
		if posted.Load() {
			return `{"posted":true}`, false, nil
		}
		return `{"posted":false}`, false, nil
	})
	ctx := context.Background()
	if f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx) {
		t.Fatal("barrier timed out")
	}
	texts, ctxIDs := agent.received()
	if len(texts) != 2 || ctxIDs[0] != "trigger-warn" || ctxIDs[1] != "trigger-warn" {
		t.Fatalf("agent got %q in contexts %q", texts, ctxIDs)
	}
	if texts[0] != "Post a weather warning in #general. Use ${HOME} if needed." || !strings.HasPrefix(texts[1], texts[0]+"\n\n") || !strings.Contains(texts[1], "did not pass verification") {
		t.Fatalf("messages %q", texts)
	}
	var kinds []string
	for _, ev := range eventsOf(f.eng, "") {
		kinds = append(kinds, ev["kind"].(string))
	}
	if got := strings.Join(kinds, ","); got != "added,detected,verify_failed,verify_ok,action_ok,fired" {
		t.Fatalf("events %s", got)
	}
	ok := eventsOf(f.eng, "action_ok")[0]["detail"].(map[string]any)
	if ok["nl"] != "Post a weather warning in #general. Use ${HOME} if needed." {
		t.Fatalf("detail %v", ok)
	}
	if st := statusOf(f.eng, "warn"); st.Status != "fired" || st.FireCount != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestNLExecutorVerifyFailsTwice(t *testing.T) {
	agent := &scriptedAgent{script: func(n int, ctx context.Context, final func(a2a.TaskState) error) error {
		return final(a2a.TaskStateCompleted)
	}}
	f := nlFixture(t, serveAgent(t, agent), "30")
	f.host.text("posted", `{"posted":false}`)
	ctx := context.Background()
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx)
	af := eventsOf(f.eng, "action_failed")
	if texts, _ := agent.received(); len(texts) != 2 || len(af) != 1 || af[0]["detail"] != "verification failed after retry" {
		t.Fatalf("%d messages, action_failed %v", len(texts), af)
	}
	if st := statusOf(f.eng, "warn"); st.Status != "armed" || st.FailureCount != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestNLExecutorFailedTask(t *testing.T) {
	agent := &scriptedAgent{script: func(n int, ctx context.Context, final func(a2a.TaskState) error) error {
		return final(a2a.TaskStateFailed)
	}}
	f := nlFixture(t, serveAgent(t, agent), "30")
	f.host.text("posted", `{"posted":true}`)
	ctx := context.Background()
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx)
	af := eventsOf(f.eng, "action_failed")
	if len(af) != 1 || !strings.HasPrefix(af[0]["detail"].(string), "executor attempt 1 did not complete: executor task did not complete: failed") {
		t.Fatalf("action_failed %v", af)
	}
}

func TestNLExecutorTimeoutCancelsTask(t *testing.T) {
	agent := &scriptedAgent{script: func(n int, ctx context.Context, final func(a2a.TaskState) error) error {
		<-ctx.Done() // works until cancelled
		return nil
	}}
	f := nlFixture(t, serveAgent(t, agent), "0.2")
	f.host.text("posted", `{"posted":true}`)
	ctx := context.Background()
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx)
	af := eventsOf(f.eng, "action_failed")
	if len(af) != 1 || !strings.Contains(af[0]["detail"].(string), "executor timed out after 200ms") {
		t.Fatalf("action_failed %v", af)
	}
	if agent.cancels.Load() != 1 {
		t.Fatalf("tasks/cancel sent %d times", agent.cancels.Load())
	}
}

func TestNLUnreachableExecutor(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	f := nlFixture(t, url, "5")
	f.host.text("posted", `{"posted":true}`)
	ctx := context.Background()
	f.eng.AfterToolCall(ctx, call("create_ticket", `{}`, `{}`)).Wait(ctx)
	if af := eventsOf(f.eng, "action_failed"); len(af) != 1 || !strings.Contains(af[0]["detail"].(string), "message/send") {
		t.Fatalf("action_failed %v", af)
	}
}
