package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// goTypeName matches what a user must never read in an error: a Go type
// or struct path (config.RunnerConfig.Workers, []json.RawMessage,
// *runner.Task), encoding/json's "Go value"/"Go struct field", or a
// struct dumped with %+v (&{Missing:[text]}).
var goTypeName = regexp.MustCompile(`\[\][a-z]+\.[A-Z]|\b[a-z]+\.[A-Z]\w*\.[A-Z]\w*|\*[a-z]+\.[A-Z]\w*|Go (value|struct)|&\{|map\[string\]|json\.RawMessage|of type \w+`)

// A corpus of bad inputs, each through the CLI: every one fails, and no
// error names a Go type.
func TestNoGoTypeNamesInErrors(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	file := func(name, body string) string { return writeFile(t, filepath.Join(dir, name), body) }
	bundleDir := filepath.Join(dir, "badbundle")
	writeFile(t, filepath.Join(bundleDir, "tasks", "t.json"), `[{"id":"a","type":"deploy_sandbox","sandbox_name":["x"]}]`)
	cases := [][]string{
		{"task", "create", file("syntax.json", "[\n{\"id\":\"a\",}]"), "--id", "x"},
		{"task", "create", file("object.json", `{"id":"a"}`), "--id", "x"},
		{"task", "create", file("fieldtype.json", `[{"id":"a","type":"deploy_sandbox","sandbox_name":3,"cpu":"two","sandbox_mode":["vm"]}]`), "--id", "x"},
		{"task", "create", file("depends.json", `[{"id":"a","type":"deploy_sandbox","sandbox_name":"b","depends_on":{"x":1}}]`), "--id", "x"},
		{"task", "create", file("retry.json", `[{"id":"a","type":"deploy_sandbox","sandbox_name":"b","retry_config":[1]}]`), "--id", "x"},
		{"task", "create", file("unknown.json", `[{"id":"a","type":"deploy_sandbx","sandbox_nme":"b"}]`), "--id", "x"},
		{"task", "create", file("idtype.json", `[{"id":7,"type":true}]`), "--id", "x"},
		{"task", "validate", file("nested.json", `[{"id":"v","type":"verify_sandbox","sandbox_name":"b","criteria":{"type":"x"}}]`)},
		{"eval", "create", file("eval_object.json", `{"a":1}`), "--id", "e"},
		{"eval", "create", file("eval_types.json", `[{"task_id":3,"version":"1"}]`), "--id", "e"},
		{"eval", "create", file("eval_syntax.json", `[{"task_id":"x",}]`), "--id", "e"},
		{"run", bundleDir},
		{"run", "helo"},
		{"task", "list", "-o", "xml"},
		{"run", "hello", "--fail-under", "high"},
		{"artifact", "environment-universe", "put", "--id", "u", "--environment-artifact", "bad:ref:x"},
	}
	for _, args := range cases {
		code, out, stderr := c.run(args...)
		if code == 0 {
			t.Errorf("%v: exit 0\n%s", args, out)
		}
		if m := goTypeName.FindString(out + stderr); m != "" {
			t.Errorf("%v: the error names a Go type (%q):\n%s%s", args, m, out, stderr)
		}
	}
	// Configuration files with values of the wrong type.
	for _, body := range []string{
		"[runner.config]\nworkers = \"many\"\n",
		"[sandbox]\ndefault = 3\n",
		"[model]\nbase_url = [1]\n",
		"[sandbox]\ndefault = \"proces\"\n",
	} {
		cfg := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AGENT_ENV_CONFIG", cfg)
		code, out, stderr := c.run("task", "list")
		if code == 0 {
			t.Errorf("config %q: exit 0", body)
		}
		if m := goTypeName.FindString(out + stderr); m != "" {
			t.Errorf("config %q: the error names a Go type (%q):\n%s", body, m, stderr)
		}
	}
}
