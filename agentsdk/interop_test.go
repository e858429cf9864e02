package agentsdk_test

import (
	"strings"
	"testing"

	tclient "trpc.group/trpc-go/trpc-a2a-go/client"
	tproto "trpc.group/trpc-go/trpc-a2a-go/protocol"

	"github.com/agentenv/agentenv/protocol"
)

// An independent A2A client (trpc-a2a-go) reads the card, sends a message
// and gets the task.
func TestInteropTRPCClient(t *testing.T) {
	a := start(t, echoAgent())
	ctx := testCtx(t)
	cardClient, err := tclient.NewA2AClient(a.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	card, err := cardClient.GetAgentCard(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if card.Name != "test-agent" || card.URL != "/a2a" || len(card.Capabilities.Extensions) != 5 {
		t.Fatalf("card = %+v", card)
	}
	// trpc posts JSON-RPC to its base URL: resolve the relative card url.
	c, err := tclient.NewA2AClient(a.URL + card.URL)
	if err != nil {
		t.Fatal(err)
	}
	blocking := false
	res, err := c.SendMessage(ctx, tproto.SendMessageParams{
		Message:       tproto.NewMessage(tproto.MessageRoleUser, []tproto.Part{tproto.NewTextPart("hi")}),
		Configuration: &tproto.SendMessageConfiguration{Blocking: &blocking},
	}, tclient.WithRequestHeader(protocol.HeaderA2AExtensions, protocol.URITrajectory))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.Result.(*tproto.Task)
	if !ok || task.Status.State != tproto.TaskStateSubmitted {
		t.Fatalf("result = %#v", res.Result)
	}
	for task.Status.State != tproto.TaskStateCompleted {
		if task, err = c.GetTasks(ctx, tproto.TaskQueryParams{ID: task.ID}); err != nil {
			t.Fatal(err)
		}
		if task.Status.State == tproto.TaskStateFailed {
			t.Fatalf("task failed: %+v", task)
		}
	}
	tp, ok := task.Status.Message.Parts[0].(*tproto.TextPart)
	if !ok || tp.Text != "echo: hi" {
		t.Fatalf("parts = %#v", task.Status.Message.Parts)
	}
}

// trpc-a2a-go streams from a streaming agent: task, working updates with
// the progress parts, then the final completed update.
func TestInteropTRPCStream(t *testing.T) {
	a := start(t, streamingAgent{})
	ctx := testCtx(t)
	c, err := tclient.NewA2AClient(a.URL + "/a2a")
	if err != nil {
		t.Fatal(err)
	}
	events, err := c.StreamMessage(ctx, tproto.SendMessageParams{
		Message: tproto.NewMessage(tproto.MessageRoleUser, []tproto.Part{tproto.NewTextPart("go")})})
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for ev := range events {
		switch v := ev.Result.(type) {
		case *tproto.Task:
			seq = append(seq, "task")
		case *tproto.TaskStatusUpdateEvent:
			s := string(v.Status.State)
			if v.Final {
				s += ":final"
			}
			seq = append(seq, s)
		default:
			seq = append(seq, "other")
		}
	}
	if got := strings.Join(seq, ","); got != "task,working,working,working,completed:final" {
		t.Fatalf("events = %s", got)
	}
}
