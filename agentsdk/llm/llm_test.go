package llm_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/llm"
	"github.com/agentenv/agentenv/internal/fakemodel"
)

func TestAPIBaseRule(t *testing.T) {
	for in, want := range map[string]string{
		"http://m":        "http://m/v1/",
		"http://m/":       "http://m/v1/",
		"http://m/v1":     "http://m/v1/",
		"http://m/proxy":  "http://m/proxy/v1/",
		"http://m/x/v1//": "http://m/x/v1/",
	} {
		if got := llm.APIBase(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func failureCode(t *testing.T, err error) (string, string) {
	t.Helper()
	var f *agentsdk.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want *agentsdk.Failure, got %v", err)
	}
	return f.Type, f.Code
}

func TestMissingEndpointOrKey(t *testing.T) {
	t.Setenv("LITELLM_BASE_URL", "")
	t.Setenv("LITELLM_API_KEY", "")
	_, err := llm.New(llm.Config{APIKey: "k"})
	if typ, code := failureCode(t, err); typ != "infra_error" || code != llm.CodeNoEndpoint {
		t.Fatal(typ, code)
	}
	_, err = llm.New(llm.Config{BaseURL: "http://m"})
	if _, code := failureCode(t, err); code != llm.CodeNoAPIKey {
		t.Fatal(code)
	}
	t.Setenv("LITELLM_BASE_URL", "http://m")
	t.Setenv("LITELLM_API_KEY", "k")
	if _, err := llm.New(llm.Config{}); err != nil {
		t.Fatal(err)
	}
}

func TestCompleteFailuresAreTyped(t *testing.T) {
	m := fakemodel.New([]fakemodel.Reply{{Status: 400}, {Status: 503}, {Text: "ok"}}, &fakemodel.Options{APIKey: "good"})
	defer m.Close()
	p := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
	ctx := context.Background()
	bad, _ := llm.New(llm.Config{BaseURL: m.URL(), APIKey: "wrong", Model: "m"})
	_, err := bad.Complete(ctx, p)
	if _, code := failureCode(t, err); code != llm.CodeAuthFailed {
		t.Fatal(code)
	}
	c, _ := llm.New(llm.Config{BaseURL: m.URL(), APIKey: "good", Model: "m"})
	_, err = c.Complete(ctx, p)
	if _, code := failureCode(t, err); code != llm.CodeBadRequest {
		t.Fatal(code)
	}
	_, err = c.Complete(ctx, p)
	if _, code := failureCode(t, err); code != llm.CodeProviderErr {
		t.Fatal(code)
	}
	resp, err := c.Complete(ctx, p)
	if err != nil || resp.Choices[0].Message.Content != "ok" || m.Requests()[2].Model != "m" {
		t.Fatalf("%v %v", resp, err)
	}
	// A provider that is not listening.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	down, _ := llm.New(llm.Config{BaseURL: "http://" + addr, APIKey: "k", Model: "m"})
	_, err = down.Complete(ctx, p)
	if typ, code := failureCode(t, err); typ != "infra_error" || code != llm.CodeUnreachable {
		t.Fatal(typ, code)
	}
	// A cancelled caller gets its own error back, not a failure.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Complete(cctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A names slice that does not match the tools is refused, not an index
// panic in the middle of an agent's turn.
func TestOpenAIToolsNamesMustMatch(t *testing.T) {
	tools := []agentsdk.Tool{{Name: "a"}, {Name: "b"}}
	if _, err := llm.OpenAITools(tools, []string{"only_one"}); err == nil {
		t.Fatal("1 name for 2 tools accepted")
	}
	defs, err := llm.OpenAITools(tools, []string{"mcp__env__a", "mcp__env__b"})
	if err != nil || len(defs) != 2 || defs[1].GetFunction().Name != "mcp__env__b" {
		t.Fatalf("renamed tools: %v %v", defs, err)
	}
}
