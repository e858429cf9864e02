package fakemodel_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentenv/agentenv/internal/fakemodel"
)

// A test scripts the model's answers, points the agent at URL() and then
// checks what the agent sent.
func ExampleNew() {
	m := fakemodel.New([]fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{{Name: "add_item", Arguments: `{"name":"readme"}`}}},
		{Text: "Added readme."},
	}, nil)
	defer m.Close()

	// What an OpenAI-compatible client sends (openai-go in real tests).
	resp, err := http.Post(m.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Add readme"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(strings.Contains(string(body), `"finish_reason":"tool_calls"`))
	fmt.Println(m.Requests()[0].Messages[0].Content, m.Remaining())
	// Output:
	// true
	// Add readme 1
}
