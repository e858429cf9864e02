package envsecret_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/envsecret"
	"github.com/agentenv/agentenv/registry/storetest"
)

func TestConformanceEnv(t *testing.T) {
	storetest.RunSecretStore(t, func(t *testing.T, secrets map[string]string) registry.SecretStore {
		for k, v := range secrets {
			t.Setenv(k, v)
		}
		s, err := envsecret.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceJSONFile(t *testing.T) {
	storetest.RunSecretStore(t, func(t *testing.T, secrets map[string]string) registry.SecretStore {
		p := filepath.Join(t.TempDir(), "secrets.json")
		b, _ := json.Marshal(secrets)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		no := false
		s, err := envsecret.New(&envsecret.Options{FilePath: p, UseEnv: &no})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceYAMLFile(t *testing.T) {
	storetest.RunSecretStore(t, func(t *testing.T, secrets map[string]string) registry.SecretStore {
		var b strings.Builder
		b.WriteString("# secrets\n---\n")
		for k, v := range secrets {
			b.WriteString(k + ": \"" + v + "\"\n")
		}
		p := filepath.Join(t.TempDir(), "secrets.yaml")
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := envsecret.New(&envsecret.Options{FilePath: p, LookupEnv: func(string) (string, bool) { return "", false }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestEnvWinsOverFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(p, []byte("K: from-file\nONLY_FILE: 'it''s'\nPLAIN: v # comment\n"), 0o600)
	env := map[string]string{"K": "from-env"}
	s, err := envsecret.New(&envsecret.Options{FilePath: p, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for k, want := range map[string]string{"K": "from-env", "ONLY_FILE": "it's", "PLAIN": "v"} {
		if v, ok, _ := s.Get(ctx, k); !ok || v != want {
			t.Errorf("Get(%s) = %q, %v; want %q", k, v, ok, want)
		}
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := envsecret.New(&envsecret.Options{FilePath: filepath.Join(dir, "missing.json")}); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	cases := map[string]string{
		"bad.json":     `{"K": "sk-leaky-value", }`,
		"nested.json":  `{"K": {"x": "sk-leaky-value"}}`,
		"nested.yaml":  "K:\n  x: sk-leaky-value\n",
		"noColon.yaml": "just text sk-leaky-value\n",
		"dup.yaml":     "K: a\nK: sk-leaky-value\n",
	}
	for name, body := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		_, err := envsecret.New(&envsecret.Options{FilePath: p})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		} else if strings.Contains(err.Error(), "sk-leaky-value") {
			t.Errorf("%s: error leaks a value: %v", name, err)
		}
	}
	unreadable := filepath.Join(dir, "dir.json")
	os.Mkdir(unreadable, 0o700)
	if _, err := envsecret.New(&envsecret.Options{FilePath: unreadable}); err == nil || !strings.Contains(err.Error(), unreadable) {
		t.Errorf("directory as file: %v", err)
	}
}
