package envsteptest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// refVerifier is a verifier as the reference writes them: an async
// verify(mcp_url) reading the env's export with agentenv_protocol's
// client.get_data, and calling a tool over MCP with the shipped
// ToolSession. It passes when a message to bob@example.com is in the sent
// folder.
const refVerifier = `import json

from agentenv_protocol import client
from agentenv_protocol.tool_client import ToolSession


async def verify(mcp_url: str) -> list[dict]:
    export = (await client.get_data(mcp_url.removesuffix("/mcp"))).parts[0].data
    sent = [m for m in export["messages"] if m["folder"] == "sent" and "bob@example.com" in m["to"]]
    async with ToolSession(mcp_url) as s:
        listed = json.loads((await s.call_tool("email_list_messages", {"folder": "sent"})).text)
    print("debug output on stdout is not the answer")
    return [
        {"criterion": "a message to bob was sent", "result": bool(sent), "sent": len(sent)},
        {"criterion": "the tool lists what the export holds", "result": len(listed["messages"]) == len([m for m in export["messages"] if m["folder"] == "sent"])},
    ]
`

const sentToBob = `{"messages":[{"id":"s1","folder":"sent","from":"me@example.com","to":["bob@example.com"],
  "subject":"Hi","body":"Hello Bob","sent_at":"2026-03-02T09:00:00Z"}]}`

// needPython skips without python3, except under CI=true, where a missing
// python3 is a broken machine.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required under CI=true: %v", err)
		}
		t.Skipf("python3 not found on PATH, so reference-style verifiers cannot run: %v", err)
	}
}

// TestReferenceVerifier: a reference-style async verify(mcp_url) Python
// file scores 1 when the email env's state is right and 0 when it is not.
func TestReferenceVerifier(t *testing.T) {
	needPython(t)
	f := envsteptest.New(t)
	ctx := context.Background()
	if _, err := f.Services.Artifacts.PutFile(ctx, "ref-verifier", artifact.FileInput{Filename: "verifier.py", Body: strings.NewReader(refVerifier)}); err != nil {
		t.Fatal(err)
	}
	f.PutInbox(t, "sent-to-bob", sentToBob)
	f.PutInbox(t, "plain-inbox", inbox)
	for seed, want := range map[string]float64{"sent-to-bob": 1, "plain-inbox": 0} {
		rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
		 {"id":"load","type":"load_artifact","env_id":"email","artifact_id":"`+seed+`"},
		 {"id":"v","type":"env_outcome_verifier","env_id":"email","file_artifact_id":"ref-verifier","verifier_id":"ref"}]`, nil)
		if err != nil {
			t.Fatalf("%s: %v", seed, err)
		}
		v, _ := rc.Verification("ref")
		if v.Score != want || len(v.Results) != 2 || v.Results[1]["result"] != true {
			t.Errorf("%s: %s, want score %g and the tool check passing", seed, asJSON(v), want)
		}
	}
	// The step's error names the contract it tried and why it failed.
	for body, want := range map[string]string{
		"async def verify(mcp_url):\n    raise KeyError('messages')\n": "run under the reference contract (Python verify(mcp_url)): verify(mcp_url) raised KeyError: 'messages'",
		"print('no verify here')\n":                                    "run under the program contract (an executable printing a JSON list of rows) (a Python file without a top-level def verify(mcp_url) or async def verify(mcp_url)): stdout is not a JSON list of rows",
	} {
		if _, err := f.Services.Artifacts.PutFile(ctx, "bad-verifier", artifact.FileInput{Filename: "verifier.py", Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		_, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
		 {"id":"v","type":"env_outcome_verifier","env_id":"email","file_artifact_id":"bad-verifier"}]`, nil)
		if err == nil || !strings.Contains(err.Error(), "verifier bad-verifier, "+want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
