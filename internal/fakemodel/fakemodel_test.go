package fakemodel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentenv/agentenv/internal/fakemodel"
)

func client(m *fakemodel.Server, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(m.URL()+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func TestScriptedToolCallThenText(t *testing.T) {
	m := fakemodel.New([]fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{{Name: "echo", Arguments: `{"msg":"hi"}`}}},
		{Text: "done", Usage: &fakemodel.Usage{PromptTokens: 7, CompletionTokens: 3}},
	}, &fakemodel.Options{APIKey: "k"})
	defer m.Close()
	c := client(m, "k")
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel("m1"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say hi")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "echo", Parameters: shared.FunctionParameters{"type": "object"}})},
	}
	r1, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	calls := r1.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "echo" || calls[0].Function.Arguments != `{"msg":"hi"}` {
		t.Fatalf("tool calls = %+v", calls)
	}
	params.Messages = append(params.Messages, r1.Choices[0].Message.ToParam(), openai.ToolMessage("hi", calls[0].ID))
	r2, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Choices[0].Message.Content != "done" || r2.Usage.TotalTokens != 10 {
		t.Fatalf("reply = %q usage %+v", r2.Choices[0].Message.Content, r2.Usage)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || reqs[0].Model != "m1" || reqs[0].ToolNames()[0] != "echo" {
		t.Fatalf("requests = %+v", reqs)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "tool" || last.Content != "hi" || last.ToolCallID != calls[0].ID {
		t.Fatalf("tool message = %+v", last)
	}
	if reqs[1].Messages[1].ToolCalls[0].Name != "echo" {
		t.Fatalf("assistant message = %+v", reqs[1].Messages[1])
	}
	// Exhausted script: a 500 the client sees as an error.
	if _, err := c.Chat.Completions.New(ctx, params); err == nil || !m.Requests()[2].Exhausted {
		t.Fatalf("want exhausted error, got %v", err)
	}
}

func TestStatusAuthAndHang(t *testing.T) {
	m := fakemodel.New([]fakemodel.Reply{{Status: 429}, {Hang: true}}, &fakemodel.Options{APIKey: "k"})
	defer m.Close()
	ctx := context.Background()
	p := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
	wrong, good := client(m, "wrong"), client(m, "k")
	var apiErr *openai.Error
	if _, err := wrong.Chat.Completions.New(ctx, p); !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("want 401, got %v", err)
	}
	if _, err := good.Chat.Completions.New(ctx, p); !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("want 429, got %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := good.Chat.Completions.New(tctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
}
