package agentsdk_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
)

// Example serves an echo agent on loopback and prompts it the way the
// runner does (non-blocking send, then tasks/get until the end).
func Example() {
	t := &testing.T{}
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "echo", Description: "Echoes", Version: "1.0.0"},
		&agentsdk.Options{Agent: agentsdk.Handler(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
			return agentsdk.Text("you said: " + tk.Text()), nil
		}), Logger: quiet()})
	task, err := a.Client.Prompt(context.Background(), "conversation-1", "hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Status.State, task.Text())
	// Output: completed you said: hello
}
