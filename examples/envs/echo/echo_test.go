package echo_test

import (
	"encoding/json"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/examples/envs/echo"
)

func TestEcho(t *testing.T) {
	env := map[string]string{"ENVIRONMENT_NAME": "alpha"}
	e := envsdktest.Start(t, echo.New(&envsdk.Options{Getenv: func(k string) string { return env[k] }}))
	r := e.Call(t, "alpha_echo", map[string]any{"text": "hi there"})
	if r.IsError {
		t.Fatalf("isError: %s", r.Text)
	}
	var out echo.Out
	if err := json.Unmarshal(r.Structured, &out); err != nil || out.Echo != "hi there" || out.Server != "alpha" {
		t.Fatalf("structured %s (%v)", r.Structured, err)
	}
	if r := e.Call(t, "alpha_echo", map[string]any{"text": 3}); !r.IsError {
		t.Errorf("a number for text was accepted: %s", r.Text)
	}
}
