package redact_test

import (
	"fmt"

	"github.com/agentenv/agentenv/registry/redact"
)

func ExampleStripJSON() {
	ctx := []byte(`{"metadata":{"user_overrides":{"litellm_api_key":"sk-123","agent_model":"m"}}}`)
	safe, _ := redact.StripJSON(ctx)
	fmt.Println(string(safe))
	fmt.Println(redact.MaskValue("dsn", "postgres://agentenv:pw@db:5432/agentenv"))
	// Output:
	// {"metadata":{"user_overrides":{"agent_model":"m"}}}
	// postgres://agentenv:****@db:5432/agentenv
}
