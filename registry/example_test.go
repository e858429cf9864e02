package registry_test

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/registry"
)

func ExampleParseRef() {
	for _, s := range []string{"items", "items:3", "items:latest", "items:three"} {
		ref, err := registry.ParseRef(s)
		fmt.Printf("%-13s → id=%s version=%d err=%v\n", s, ref.ID, ref.Version, err)
	}
	// Output:
	// items         → id=items version=0 err=<nil>
	// items:3       → id=items version=3 err=<nil>
	// items:latest  → id=items version=0 err=<nil>
	// items:three   → id= version=0 err=invalid ref "items:three": version must be a positive integer or 'latest'
}

func ExampleResolve() {
	env := map[string]string{"AGENT_MODEL": "gpt-x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, s := range []string{"plain", "env:AGENT_MODEL", "env:JUDGE_MODEL?claude-sonnet-4-6", "env:JUDGE_MODEL"} {
		v, err := registry.Resolve(context.Background(), s, nil, lookup)
		fmt.Printf("%q → %q %v\n", s, v, err)
	}
	// Output:
	// "plain" → "plain" <nil>
	// "env:AGENT_MODEL" → "gpt-x" <nil>
	// "env:JUDGE_MODEL?claude-sonnet-4-6" → "claude-sonnet-4-6" <nil>
	// "env:JUDGE_MODEL" → "" cannot resolve env:JUDGE_MODEL: environment variable JUDGE_MODEL is not set and no ?default is given
}
