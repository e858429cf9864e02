package buildmcpcli

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/agentenv/agentenv/internal/imagebuild"
)

//go:embed clitemplate/main.go
var cliSource []byte

// Tool is one live tool as the gateway's /step list_tools gives it.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// flagNameRE: a parameter name the flag package can take as --name.
var flagNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// Build compiles the CLI for env's tools into dir/command and returns the
// binary's path. GOOS is linux and GOARCH the host's (imagebuild.BuildGo),
// so the binary also runs in the env's and agents' Linux sandboxes. A tool
// whose parameter cannot be a flag (a name with spaces, or "json", which
// the CLI keeps for whole-object arguments) is refused, naming it.
func Build(ctx context.Context, env, command string, tools []Tool, dir string) (string, error) {
	if len(tools) == 0 {
		return "", fmt.Errorf("env %s has no tools for the CLI", env)
	}
	for _, t := range tools {
		props, _ := t.Parameters["properties"].(map[string]any)
		for n := range props {
			if !flagNameRE.MatchString(n) || n == "json" {
				return "", fmt.Errorf("tool %s: parameter %q cannot be a command-line flag", t.Name, n)
			}
		}
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	manifest, err := json.MarshalIndent(map[string]any{"env": env, "command": command, "tools": tools}, "", "  ")
	if err != nil {
		return "", err
	}
	files := map[string][]byte{
		"go.mod":     []byte("module agentenvcli\n\ngo 1.22\n"),
		"main.go":    cliSource,
		"tools.json": manifest,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			return "", err
		}
	}
	// The template carries a build constraint so the repository's own
	// builds skip it; "go build main.go" names the file and ignores it.
	bin, err := imagebuild.BuildGo(ctx, "main.go", filepath.Join(dir, "bin"), &imagebuild.GoOptions{Dir: src, Name: command})
	if err != nil {
		return "", fmt.Errorf("build the CLI of env %s: %w", env, err)
	}
	return bin, nil
}
