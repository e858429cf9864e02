package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/internal/fakemodel"
	"github.com/agentenv/agentenv/protocol"
)

type addIn struct {
	Item string `json:"item" jsonschema:"the item to add"`
}

// The toolcaller against an environment built with our own envsdk (served
// by envsdktest): the model's tool call reaches the env with the agent's
// role, and the answer comes back.
func TestToolcallerAgainstEnvsdkServer(t *testing.T) {
	var mu sync.Mutex
	var got []string
	s := envsdk.New(&protocol.EnvCard{Name: "items"}, nil)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_add_item", Description: "Add an item."},
		func(ctx context.Context, req *envsdk.Request, in addIn) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, in.Item+"@"+req.Caller.Role)
			return "added " + in.Item, nil
		})
	env := envsdktest.Start(t, s)

	model := fakemodel.New([]fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{{Name: "items_add_item", Arguments: `{"item":"readme"}`}}},
		{Text: "Added readme."},
	}, nil)
	defer model.Close()
	a := startAgent(t, model, &itemsEnv{URL: env.MCPURL}, nil)
	task := prompt(t, a, "Add readme")
	if task.Status.State != "completed" || task.Text() != "Added readme." {
		t.Fatalf("task = %+v", task)
	}
	if strings.Join(got, ",") != "readme@solver" {
		t.Fatalf("env saw %v", got)
	}
	if reqs := model.Requests(); len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Content != "added readme" {
		t.Fatalf("model requests = %+v", reqs)
	}
}
