package buildmcpcli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"

	"github.com/agentenv/agentenv/internal/jsonvalue"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// Type is the step's type name.
const Type = "build_mcp_cli"

// DefaultRole is the role the CLI reads the tools as and calls them as
// (the gateway's role rules may give it more or fewer tools than agents).
const DefaultRole = "cli"

// StepInfo registers build_mcp_cli.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is build_mcp_cli. It writes
// metadata.built_mcp_clis[<step id>] = {env_id, cli_artifact_id, version,
// command_name, role, tools[]}.
type Config struct {
	// EnvID is the deployed env whose tools become commands.
	EnvID     string `json:"env_id"`
	EnvStepID string `json:"env_step_id,omitempty"`
	// CLIArtifactID (cli_id: the artifact is written, not read, so it is no
	// entity reference) is the cli artifact to store a new version of; ""
	// means "<env_id>-cli".
	CLIArtifactID string `json:"cli_id,omitempty"`
	// CommandName is the binary's name on PATH; "" means "<env_id>-cli".
	CommandName string `json:"command_name,omitempty"`
	// Role lists the tools as that role; "" means "cli".
	Role        string `json:"role,omitempty"`
	Description string `json:"description,omitempty"`
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser. The cli artifact is written,
// not read, so it is not a reference.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	if c.CommandName != "" && !nameRE.MatchString(c.CommandName) {
		return runner.Invalid("command_name", "must be a file name of letters, digits and . _ + -, got %q", c.CommandName)
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	svc := rc.Services()
	if svc == nil || svc.Artifacts == nil {
		return fmt.Errorf("%s: no artifact store to hold the CLI", Type)
	}
	env, err := gwclient.ForGateway(rc, c.EnvID, c.EnvStepID, Type, "the gateway's /step route")
	if err != nil {
		return err
	}
	role, id, command := c.Role, c.CLIArtifactID, c.CommandName
	if role == "" {
		role = DefaultRole
	}
	if id == "" {
		id = c.EnvID + "-cli"
	}
	if command == "" {
		command = c.EnvID + "-cli"
	}
	var listed struct {
		Tools []Tool `json:"tools"`
	}
	if err := env.Gateway.Do(ctx, http.MethodPost, "/step", role, map[string]any{"action": "list_tools"}, &listed); err != nil {
		return fmt.Errorf("%s: env %s: list tools: %w", Type, c.EnvID, err)
	}
	dir, err := os.MkdirTemp("", "agentenv-mcp-cli-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := Build(ctx, c.EnvID, command, listed.Tools, dir)
	if err != nil {
		return fmt.Errorf("%s: %w", Type, err)
	}
	version := jsonvalue.Int(env.Entry["env_version"]) // typed in a live run, float64 after a resume
	desc := c.Description
	if desc == "" {
		desc = fmt.Sprintf("command-line client of env %s (%d tools, role %s)", c.EnvID, len(listed.Tools), role)
	}
	a, err := svc.Artifacts.PutCLI(ctx, id, artifact.CLIInput{Path: bin, CommandName: command, EnvID: c.EnvID,
		EnvVersion: version, Description: desc})
	if err != nil {
		return fmt.Errorf("%s: store cli artifact: %w", Type, err)
	}
	names := make([]string, 0, len(listed.Tools))
	for _, t := range listed.Tools {
		names = append(names, t.Name)
	}
	rc.SetMetadataEntry("built_mcp_clis", rc.StepID(), map[string]any{"env_id": c.EnvID, "cli_artifact_id": a.ID,
		"version": a.Version, "command_name": command, "role": role, "tools": names})
	rc.Logger().Info("built env CLI", "env_id", c.EnvID, "cli_artifact_id", a.ID, "version", a.Version, "tools", len(names))
	return nil
}
