package buildmcpcli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
	"github.com/agentenv/agentenv/runner/steps/buildmcpcli"
)

// Bad fields are refused at parse time, naming the step and the field.
// (build_mcp_cli has no enum-valued field.)
func TestBadInput(t *testing.T) {
	for js, want := range map[string]string{
		`[{"id":"c","type":"build_mcp_cli"}]`:                                   `step 1 (id "c"): field "env_id": is required`,
		`[{"id":"c","type":"build_mcp_cli","env_id":7}]`:                        `step 1 (id "c"): field "env_id": must be a string, got a number`,
		`[{"id":"c","type":"build_mcp_cli","env_id":"e","role":true}]`:          `step 1 (id "c"): field "role": must be a string`,
		`[{"id":"c","type":"build_mcp_cli","env_id":"e","command_name":"a b"}]`: `step 1 (id "c"): field "command_name": must be a file name`,
		`[{"id":"c","type":"build_mcp_cli","env_id":"e","bogus":1}]`:            `"bogus"`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
}

// env_id is an env reference, so bundles rewrite bare names.
func TestEntityRefs(t *testing.T) {
	refs := new(buildmcpcli.Config).EntityRefs()
	if len(refs) != 1 || refs[0].Field != "env_id" || refs[0].Collection != "envs" {
		t.Errorf("%+v", refs)
	}
}

// A parameter that cannot be a flag, or an env without tools, is refused
// before anything is compiled, naming the tool and parameter.
func TestBuildRefuses(t *testing.T) {
	ctx := context.Background()
	if _, err := buildmcpcli.Build(ctx, "e", "e-cli", nil, t.TempDir()); err == nil || !strings.Contains(err.Error(), "env e has no tools") {
		t.Errorf("no tools: %v", err)
	}
	for _, p := range []string{"json", "two words"} {
		tools := []buildmcpcli.Tool{{Name: "t", Parameters: map[string]any{"type": "object", "properties": map[string]any{p: map[string]any{"type": "string"}}}}}
		_, err := buildmcpcli.Build(ctx, "e", "e-cli", tools, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "tool t: parameter \""+p+"\" cannot be a command-line flag") {
			t.Errorf("%q: %v", p, err)
		}
	}
}
