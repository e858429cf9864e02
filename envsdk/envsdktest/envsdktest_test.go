package envsdktest_test

import (
	"context"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// A tool test in ten lines: what the package promises.
func TestGreet(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "hello"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_greet"},
		func(_ context.Context, _ *envsdk.Request, in struct {
			Who string `json:"who"`
		}) (string, error) {
			return "hello " + in.Who, nil
		})
	env := envsdktest.Start(t, s)
	if res := env.Call(t, "hello_greet", map[string]any{"who": "ann"}); res.IsError || res.Text != "hello ann" {
		t.Fatalf("%+v", res)
	}
	c := env.NewClient(t, map[string]string{"AgentEnv-Role": "agent"})
	if res, err := envsdktest.CallTool(context.Background(), c, "hello_greet", map[string]any{}, nil); err != nil || !res.IsError {
		t.Fatalf("missing argument: %v %+v", err, res)
	}
}
