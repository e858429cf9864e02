package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentenv/agentenv/internal/config"
)

// Precedence and sources: the file sets the model, the environment the
// API key (masked when shown), a CLI flag the judge.
func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "cfg")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, ".agentenv"), 0o755)
	os.WriteFile(filepath.Join(dir, ".agentenv", "config.toml"), []byte(`
[model]
default = "claude-sonnet-4-6"
api_key = "env:LITELLM_API_KEY"

[sandbx]
default = "local"
`), 0o600)
	env := map[string]string{"LITELLM_API_KEY": "sk-not-shown"}
	cfg, err := config.Load(&config.Options{
		WorkDir:  dir,
		Getenv:   func(k string) string { return env[k] },
		Environ:  func() []string { return nil },
		Override: func(c *config.Config) { c.Model.Roles.Judge = "judge-from-flag" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range cfg.Warnings {
		fmt.Println("warning:", w.Message+": did you mean "+w.Suggestion+"?")
	}
	for _, key := range []string{"model.default", "model.api_key", "model.roles.judge", "sandbox.default"} {
		v, src, _ := cfg.Explain(key)
		fmt.Printf("%s = %s (%s)\n", key, v, src)
	}
	// Output:
	// warning: unknown table [sandbx]: did you mean [sandbox]?
	// model.default = "claude-sonnet-4-6" (file)
	// model.api_key = "****" (env LITELLM_API_KEY)
	// model.roles.judge = "judge-from-flag" (code)
	// sandbox.default = "local" (default)
}
