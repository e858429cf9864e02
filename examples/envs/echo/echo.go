// Package echo is the smallest AgentEnv environment: one tool,
// <environment_name>_echo, that answers with the text it was given. It is
// what the echo-mcp bundle and the sandbox tests deploy: small enough to
// build into a FROM scratch image in a second, real enough to exercise a
// gateway, its /mcp and /step routes and the topology around them.
package echo

import (
	"context"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// In is the echo tool's input.
type In struct {
	Text string `json:"text" description:"The text to echo back."`
}

// Out is its structured output.
type Out struct {
	Echo string `json:"echo"`
	// Server is the environment name that answered (ENVIRONMENT_NAME), so a
	// caller behind a gateway can tell servers apart.
	Server string `json:"server"`
}

// New returns the echo env server. Its card name is "echo"; ENVIRONMENT_NAME
// renames it (and its tool).
func New(opts *envsdk.Options) *envsdk.Server {
	s := envsdk.New(&protocol.EnvCard{Name: "echo"}, opts)
	name := s.Name()
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_echo", Description: "Echo the given text back."},
		func(ctx context.Context, _ *envsdk.Request, in In) (Out, error) {
			return Out{Echo: in.Text, Server: name}, nil
		})
	return s
}
