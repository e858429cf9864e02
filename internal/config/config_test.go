package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/config"
)

// env is a fake environment for Load.
type env map[string]string

func (e env) opts(workDir string) *config.Options {
	return &config.Options{
		WorkDir: workDir,
		Getenv:  func(k string) string { return e[k] },
		Environ: func() []string {
			var out []string
			for k, v := range e {
				out = append(out, k+"="+v)
			}
			return out
		},
	}
}

func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, ".agentenv", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadErr loads body as the config file and fails t unless Load returns a
// *config.Error naming the file, at key (when not ""), containing want.
func loadErr(t *testing.T, body, key, want string) {
	t.Helper()
	dir := t.TempDir()
	p := writeConfig(t, dir, body)
	_, err := config.Load(env{}.opts(dir))
	var ce *config.Error
	if !errors.As(err, &ce) || ce.File != p || (key != "" && ce.Key != key) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want a *config.Error of %s at %q containing %q", err, p, key, want)
	}
}

func TestDefaultsWithoutFile(t *testing.T) {
	c, err := config.Load(env{}.opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if c.File != "" || c.Stores.Document.Impl != "local" || c.Sandbox.Default != "local" || c.Agents.DefaultA2AAgentID != "a2a-default" ||
		c.Runner.Config.Workers != 2 || c.JudgeModel() != "claude-sonnet-4-6" || len(c.Warnings) != 0 {
		t.Fatalf("defaults = %+v", c)
	}
	if c.Source("runner.config.workers") != "default" {
		t.Fatalf("source = %s", c.Source("runner.config.workers"))
	}
}

func TestDiscoveryWalksUp(t *testing.T) {
	root := t.TempDir()
	p := writeConfig(t, root, "[agents]\ndefault_a2a_agent_id = \"mine\"\n")
	deep := filepath.Join(root, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	c, err := config.Load(env{}.opts(deep))
	if err != nil {
		t.Fatal(err)
	}
	if c.File != p || c.Agents.DefaultA2AAgentID != "mine" || c.Source("agents.default_a2a_agent_id") != "file" {
		t.Fatalf("file %s, agent %s (%s)", c.File, c.Agents.DefaultA2AAgentID, c.Source("agents.default_a2a_agent_id"))
	}
	// The nearest file wins, read whole: nothing is merged from the outer one.
	inner := writeConfig(t, filepath.Join(root, "a"), "[model]\ndefault = \"m\"\n")
	c, err = config.Load(env{}.opts(deep))
	if err != nil || c.File != inner || c.Agents.DefaultA2AAgentID != "a2a-default" || c.Model.Default != "m" {
		t.Fatalf("nearest: %s %+v, %v", c.File, c.Agents, err)
	}
}

func TestAgentEnvConfig(t *testing.T) {
	dir := t.TempDir()
	other := writeConfig(t, t.TempDir(), "[model]\ndefault = \"from-env-file\"\n")
	writeConfig(t, dir, "[model]\ndefault = \"discovered\"\n")
	c, err := config.Load(env{"AGENT_ENV_CONFIG": other}.opts(dir))
	if err != nil || c.Model.Default != "from-env-file" {
		t.Fatalf("AGENT_ENV_CONFIG: %+v, %v", c, err)
	}
	missing := filepath.Join(dir, "nope.toml")
	_, err = config.Load(env{"AGENT_ENV_CONFIG": missing}.opts(dir))
	if !errors.Is(err, config.ErrNotFound) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "AGENT_ENV_CONFIG") {
		t.Fatalf("missing AGENT_ENV_CONFIG: %v", err)
	}
	if _, err := config.Load(env{"AGENT_ENV_CONFIG": dir}.opts(dir)); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory as AGENT_ENV_CONFIG: %v", err)
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
[model]
base_url = "http://file:4000"
api_key = "sk-from-file"
default = "file-model"
[stores]
document = "sqlite"
`)
	e := env{"LITELLM_BASE_URL": "http://env:4000", "AGENT_ENV_DOCUMENT_STORE": "local", "AGENT_ENV_FIXTURE_PREFIX": "fx"}
	o := e.opts(dir)
	o.Override = func(c *config.Config) { c.Model.BaseURL = "http://flag:4000" }
	c, err := config.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ key, got, want, src string }{
		{"model.base_url", c.Model.BaseURL, "http://flag:4000", "code"},
		{"model.api_key", c.Model.APIKey, "sk-from-file", "file"},
		{"model.default", c.Model.Default, "file-model", "file"},
		{"stores.document.impl", c.Stores.Document.Impl, "local", "env AGENT_ENV_DOCUMENT_STORE"},
		{"stores.object.impl", c.Stores.Object.Impl, "local", "default"},
		{"environment.fixture_prefix", c.Environment.FixturePrefix, "fx", "env AGENT_ENV_FIXTURE_PREFIX"},
	}
	for _, ch := range checks {
		if ch.got != ch.want || c.Source(ch.key) != ch.src {
			t.Errorf("%s = %q from %q, want %q from %q", ch.key, ch.got, c.Source(ch.key), ch.want, ch.src)
		}
	}
	// Without the flag, the variable beats the file.
	c, _ = config.Load(e.opts(dir))
	if c.Model.BaseURL != "http://env:4000" || c.Source("model.base_url") != "env LITELLM_BASE_URL" {
		t.Errorf("env over file: %s (%s)", c.Model.BaseURL, c.Source("model.base_url"))
	}
}

func TestUnknownKeysWarnWithSuggestions(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
[sandbx]
default = "local"

[model]
bse_url = "http://x"

[stores.document]
imp = "sqlite"
[stores.document.config]
pth = "/x.db"

[totally_unrelated_table]
x = 1
`)
	c, err := config.Load(env{"AGENT_ENV_DOCUMNT_STORE": "x"}.opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range c.Warnings {
		all = append(all, w.String())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		"config.toml:2: unknown table [sandbx]; did you mean [sandbox]?",
		`unknown key "bse_url" in [model]; did you mean "base_url"?`,
		`unknown key "imp" in a [stores.<kind>] table (want impl or backend, and config); did you mean "impl"?`,
		"unknown table [totally_unrelated_table]",
		`unknown key "pth" in [stores.document.config] (the local document store reads path, local_path); did you mean "path"?`,
		`unknown environment variable AGENT_ENV_DOCUMNT_STORE; did you mean "AGENT_ENV_DOCUMENT_STORE"?`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing warning %q in:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "totally_unrelated_table]; did you mean") {
		t.Errorf("a far-off name got a suggestion:\n%s", joined)
	}
	if c.Sandbox.Default != "local" || c.Stores.Document.Impl != "local" {
		t.Errorf("values after warnings: %+v", c.Sandbox)
	}
}

func TestStoreForms(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
[stores]
object = "filesystem"
image = { impl = "local", config = { registry_host = "127.0.0.1:5000" } }

[stores.document]
impl = "postgres"
[stores.document.config]
dsn = "env:PG_DSN"
schema = "agentenv"

[stores.secret.config]
file_path = ".agentenv/secrets.yaml"
`)
	c, err := config.Load(env{}.opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stores.Object.Impl != "filesystem" || c.Stores.Image.StoreConfigString("registry_host") != "127.0.0.1:5000" ||
		c.Stores.Document.Impl != "postgres" || c.Stores.Document.StoreConfigString("dsn") != "env:PG_DSN" ||
		c.Stores.Secret.Impl != "local" || c.Stores.Secret.StoreConfigString("file_path") != ".agentenv/secrets.yaml" {
		t.Fatalf("stores = %+v", c.Stores)
	}
	if c.Source("stores.object.impl") != "file" || c.Source("stores.document.config.dsn") != "file" {
		t.Fatalf("sources: %v", c.Sources())
	}
}

func TestBadFiles(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"syntax", "[model\nx = 1\n", "config.toml:1"},
		{"type", "[runner.config]\nworkers = \"many\"\n", "runner.config.workers: must be an integer, got a TOML string"},
		{"type of a string", "[sandbox]\ndefault = 3\n", "sandbox.default: must be a string, got a TOML integer"},
		{"unknown default", "[sandbox]\ndefault = \"proces\"\n", `unknown sandbox provider "proces"`},
		{"agents strict", "[agents]\ndefault_a2a_agent_id = \"a\"\nother = 1\n", "[agents] accepts only default_a2a_agent_id"},
		{"reserved params", "[model.params]\nmessages = []\n", "model.params.messages: reserved key"},
		{"unknown impl", "[stores]\ndocument = \"postgress\"\n", "did you mean postgres?"},
		{"postgres without dsn", "[stores]\ndocument = \"postgres\"\n", "needs a dsn"},
		{"workers", "[runner.config]\nworkers = 0\n", "runner.config.workers: must be >= 1"},
		{"runner", "[runner]\nimpl = \"cloud\"\n", "unknown runner"},
		{"secret ref in secret store", "[stores.secret.config]\nfile_path = \"secret:X\"\n", "cannot use secret:"},
		{"empty chain", "[sandbox]\ndefault = \"local,\"\n", "empty provider name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { loadErr(t, tc.body, "", tc.want) })
	}
	// An unreadable file (a directory in the file's place).
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "cfg.toml"), 0o755)
	o := env{}.opts(dir)
	o.Path = filepath.Join(dir, "cfg.toml")
	if _, err := config.Load(o); err == nil || !strings.Contains(err.Error(), o.Path) {
		t.Fatalf("directory as Path: %v", err)
	}
	o.Path = filepath.Join(dir, "missing.toml")
	if _, err := config.Load(o); !errors.Is(err, config.ErrNotFound) {
		t.Fatalf("missing Path: %v", err)
	}
}

func TestShowMasksSecrets(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
[model]
api_key = "sk-file-secret-123"
base_url = "https://user:pw-in-url@llm.example/v1"
default = "env:AGENT_MODEL?claude-sonnet"
[stores.document]
impl = "postgres"
[stores.document.config]
dsn = "host=db user=u password=pg-secret dbname=a"
[sandbox.providers.local]
token = "tok-secret"
root = "/srv"
`)
	c, err := config.Load(env{"LITELLM_API_KEY": "sk-env-secret"}.opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := c.Show(&text); err != nil {
		t.Fatal(err)
	}
	if err := c.ShowJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "json": js.String()} {
		for _, secret := range []string{"sk-file-secret-123", "sk-env-secret", "pw-in-url", "pg-secret", "tok-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output leaks %s:\n%s", name, secret, out)
			}
		}
		for _, keep := range []string{"env:AGENT_MODEL?claude-sonnet", "/srv", "llm.example"} {
			if !strings.Contains(out, keep) {
				t.Errorf("%s output lacks %s:\n%s", name, keep, out)
			}
		}
	}
	out := text.String()
	for _, want := range []string{"# config file: " + c.File, "[model]", `api_key = "****"  # env LITELLM_API_KEY`, "[stores.document.config]", "# base_url"} {
		if want == "# base_url" {
			continue
		}
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	var parsed struct {
		File    string            `json:"file"`
		Sources map[string]string `json:"sources"`
		Values  map[string]any    `json:"values"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil || parsed.Sources["model.api_key"] != "env LITELLM_API_KEY" || parsed.Values["model.default"] != "env:AGENT_MODEL?claude-sonnet" {
		t.Fatalf("json = %+v, %v", parsed, err)
	}
	v, src, err := c.Explain("stores.document.config.dsn")
	if err != nil || src != "file" || strings.Contains(v, "pg-secret") {
		t.Fatalf("Explain dsn = %s %s %v", v, src, err)
	}
	if _, _, err := c.Explain("model.bse_url"); err == nil || !strings.Contains(err.Error(), "did you mean model.base_url?") {
		t.Fatalf("Explain unknown: %v", err)
	}
}
