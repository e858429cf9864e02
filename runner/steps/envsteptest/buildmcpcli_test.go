package envsteptest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

// TestBuildMCPCLI deploys the email env (process sandbox), builds its CLI
// with build_mcp_cli and runs the stored binary against the live gateway:
// a send through one subcommand is found by a search through another, and
// bad flags are refused by the CLI itself.
func TestBuildMCPCLI(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"cli","type":"build_mcp_cli","env_id":"email","command_name":"mail"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	built, _ := rc.Metadata("built_mcp_clis")
	b, _ := built.(map[string]any)["cli"].(map[string]any)
	if b == nil || b["cli_artifact_id"] != "email-cli" || b["command_name"] != "mail" || b["role"] != "cli" {
		t.Fatalf("built_mcp_clis %s", asJSON(built))
	}
	if s := asJSON(b["tools"]); !strings.Contains(s, `"email_send_message"`) || !strings.Contains(s, `"email_search"`) {
		t.Fatalf("tools %s", s)
	}
	dir := t.TempDir()
	c, _, err := f.Services.Artifacts.WriteCLI(context.Background(), registry.Ref{ID: "email-cli"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.CommandName != "mail" || c.EnvID != "email" || c.EnvVersion < 1 {
		t.Errorf("cli artifact %+v", c)
	}
	env, err := gwclient.ForEnv(rc, "email", "")
	if err != nil {
		t.Fatal(err)
	}
	// The runner's gateways want a role credential on /step: the CLI
	// sends AGENTENV_TOKEN (agent-env env role-token mints one).
	entry, _ := rc.EnvEntry("email", "")
	token := protocol.RoleToken(gwclient.ControlToken(context.Background(), rc, entry), "cli")
	bin := filepath.Join(dir, filepath.FromSlash(c.Entrypoint))
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"AGENTENV_GATEWAY_URL=" + env.Gateway.Base(), "AGENTENV_TOKEN=" + token}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	if out, stderr, code := run("email_send_message", "--to", "bob@example.com", "--to", "carol@example.com",
		"--subject", "Quarterly plan", "--body", "See attached"); code != 0 {
		t.Fatalf("send: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code := run("--output", "json", "email_search", "--query", "quarterly", "--limit", "5")
	if code != 0 {
		t.Fatalf("search: exit %d\n%s%s", code, out, stderr)
	}
	var res struct {
		StructuredContent struct {
			Messages []struct {
				To      []string `json:"to"`
				Subject string   `json:"subject"`
			} `json:"messages"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.StructuredContent.Messages) != 1 ||
		res.StructuredContent.Messages[0].Subject != "Quarterly plan" || len(res.StructuredContent.Messages[0].To) != 2 {
		t.Fatalf("search result %s (%v)", out, err)
	}
	// The usage lists every tool; bad input is the CLI's own exit 2,
	// naming the flag, before any call.
	if out, _, code := run("help"); code != 0 || !strings.Contains(out, "email_read_message") || !strings.Contains(out, "Calls the tools of env email") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
	for args, want := range map[string]string{
		"email_search --query x --limit many": `--limit: "many" is not an integer`,
		"email_read_message":                  "missing required flag --id",
		"no_such_tool":                        `unknown command "no_such_tool"`,
	} {
		if _, stderr, code := run(strings.Fields(args)...); code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", args, code, stderr, want)
		}
	}
	// A tool error from the env is exit 1 with its text on stderr.
	if _, stderr, code := run("email_read_message", "--id", "nope"); code != 1 || stderr == "" {
		t.Errorf("read unknown id: exit %d, stderr %q", code, stderr)
	}
}

// TestCLIInstalledForSkills: load_artifact gives build_mcp_cli's cli
// artifact to an agent (its files under /app/.agentenv/clis/<command>,
// the entrypoint executable) and records metadata.installed_clis, which
// add_skills' cli_artifact_ids turns into a skill pointing at it.
func TestCLIInstalledForSkills(t *testing.T) {
	f := envsteptest.New(t)
	rc, _, err := f.Run(t, `[{"id":"env","type":"deploy_env","env_id":"email","ttl_seconds":600},
	 {"id":"cli","type":"build_mcp_cli","env_id":"email","command_name":"mail"},
	 {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","exposed_ports":[8000]},
	 {"id":"agent","type":"deploy_agent","a2a_agent_id":"scripted","sandbox_name":"box","env_ids":["email"]},
	 {"id":"give","type":"load_artifact","agent_name":"default-agent","artifact_id":"email-cli"},
	 {"id":"skills","type":"add_skills","cli_artifact_ids":["email-cli"]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	clis, _ := rc.Metadata("installed_clis")
	e, _ := clis.(map[string]any)["default-agent"].(map[string]any)["email-cli"].(map[string]any)
	install, _ := e["install_path"].(string)
	if e["command_name"] != "mail" || !strings.HasPrefix(install, "/app/.agentenv/clis/mail/") {
		t.Fatalf("installed_clis %s", asJSON(clis))
	}
	_, sb, err := rc.Sandbox(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Exec(context.Background(), []string{install, "help"}, nil)
	if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "email_send_message") {
		t.Errorf("installed cli help: %+v %v", res, err)
	}
	agent, _ := rc.AgentEntry("default-agent")
	skills := getJSON(t, agent["api_url"].(string)+"/ext/skill-config")["skills"].(map[string]any)
	if skills["mail-cli"] == nil {
		t.Errorf("skills %s lack mail-cli", asJSON(skills))
	}
}
