package envsdktest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// A Result holds what a test checks about a tool call: the text, whether
// the tool failed, and the structured output. A tool's own error and
// arguments that do not match the tool's schema are both IsError results
// (what the model would see), not test failures.
func ExampleResult() {
	t := &exampleT{} // in a test, your *testing.T
	defer t.cleanup()

	s := envsdk.New(&protocol.EnvCard{Name: "greeter"}, &envsdk.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	envsdk.AddTool(s, &envsdk.Tool{Name: "greet", Description: "Greet someone."},
		func(ctx context.Context, _ *envsdk.Request, in greetIn) (greetOut, error) {
			if in.Name == "nobody" {
				return greetOut{}, errors.New("there is no one to greet")
			}
			return greetOut{Greeting: "Hello, " + in.Name}, nil
		})
	env := envsdktest.Start(t, s) // a real server on 127.0.0.1, with an MCP client

	res := env.Call(t, "greet", map[string]any{"name": "Ada"})
	fmt.Println(res.IsError, string(res.Structured))

	res = env.Call(t, "greet", map[string]any{"name": "nobody"})
	fmt.Println(res.IsError, res.Text)

	res = env.Call(t, "greet", map[string]any{"name": 42})
	fmt.Println(res.IsError)
	// Output:
	// false {"greeting":"Hello, Ada"}
	// true there is no one to greet
	// true
}

// exampleT stands in for the *testing.T of a test, so that an Example can
// use Start: it runs the cleanups when the example ends.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (e *exampleT) Helper()                        {}
func (e *exampleT) Cleanup(f func())               { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) Errorf(format string, a ...any) { fmt.Printf(format+"\n", a...) }
func (e *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func (e *exampleT) cleanup() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}
