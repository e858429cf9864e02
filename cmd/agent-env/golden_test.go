package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the CLI goldens under testdata/golden")

var (
	goldenTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?|\d{4}-\d\d-\d\d \d\d:\d\d`)
	goldenInst = regexp.MustCompile(`(demo|@local/agentenv-framework/hello/hello)-[a-z0-9]{8}`)
	goldenPut  = regexp.MustCompile(`put-\d{8}T\d{6}Z-[0-9a-f]+|[0-9a-f]{64}`)
)

// golden compares got (normalised: times, temp folders, instance ids)
// with testdata/golden/name; -update rewrites the file.
func (c *cli) golden(name, got string) {
	c.t.Helper()
	got = strings.NewReplacer(c.stateRoot, "$STATE", c.sandboxDir, "$SANDBOXES").Replace(got)
	got = goldenInst.ReplaceAllString(goldenTime.ReplaceAllString(got, "$$TIME"), "$1-INSTANCE")
	got = goldenPut.ReplaceAllString(got, "$$VARIES")
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		c.t.Errorf("%s differs from its golden (go test -update rewrites it):\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// Every listing command prints -o json and -o yaml (goldens), and the
// record commands take the id as a positional argument with --id as an
// alias giving the same output.
func TestCLIGoldens(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "t.json"), `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"ok","criteria":[{"type":"bash_cmd_succeeds","bash_cmd":"true"}]}]`)
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, stderr := c.run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, stderr)
		}
		return out
	}
	mustRun("task", "create", f, "--id", "demo")
	mustRun("eval", "create", writeFile(t, filepath.Join(dir, "e.json"), `[{"task_id":"demo"}]`), "--id", "smoke")
	files := filepath.Join(dir, "files")
	writeFile(t, filepath.Join(files, "a.txt"), "a")
	writeFile(t, filepath.Join(files, "sub", "b.txt"), "b")
	mustRun("artifact", "file-artifact-universe", "put-bundled", "--id", "tree", "--file-dir", files)
	run := mustRun("task", "run", "demo", "--output-dir", t.TempDir())
	inst := regexp.MustCompile(`Task instance: (\S+)`).FindStringSubmatch(run)
	if inst == nil {
		t.Fatalf("no instance in:\n%s", run)
	}

	lists := map[string][]string{
		"task_list":          {"task", "list"},
		"eval_list":          {"eval", "list"},
		"bundle_list":        {"run"},
		"file_universe_list": {"artifact", "file-artifact-universe", "list"},
	}
	for name, args := range lists {
		for _, format := range []string{"json", "yaml"} {
			c.golden(name+"."+format, mustRun(append(args, "-o", format)...))
		}
	}
	c.golden("task_list.table", mustRun("task", "list"))
	// plugin list grows with every step type: checked for shape, not text.
	if out := mustRun("plugin", "list", "-o", "yaml"); !strings.Contains(out, "- name: agentenv-framework\n  kind: builtin\n") {
		t.Errorf("plugin list -o yaml:\n%s", out)
	}
	if a, b := mustRun("task", "list", "--json"), mustRun("task", "list", "-o", "json"); a != b {
		t.Errorf("--json and -o json differ:\n%s\n%s", a, b)
	}

	// Positional ids and their --id aliases.
	for name, forms := range map[string][2][]string{
		"task_get":          {{"task", "get", "demo"}, {"task", "get", "--id", "demo"}},
		"eval_get":          {{"eval", "get", "smoke", "-o", "yaml"}, {"eval", "get", "--id", "smoke", "-o", "yaml"}},
		"task_get_instance": {{"task", "get-instance", inst[1], "-o", "json"}, {"task", "get-instance", "--instance-id", inst[1], "--json"}},
	} {
		a, b := mustRun(forms[0]...), mustRun(forms[1]...)
		if a != b {
			t.Errorf("%v and %v differ:\n%s\n%s", forms[0], forms[1], a, b)
		}
		if name != "task_get_instance" { // a run record: ids and folders vary
			c.golden(name+".txt", a)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "run"}, "Error: give the task id: agent-env task run TASK [flags]\n"},
		{[]string{"task", "run", "demo", "--id", "other"}, `Error: the task id is given twice: "demo" and --id "other"` + "\n"},
		{[]string{"env", "teardown"}, "Error: give the env instance id: agent-env env teardown INSTANCE [flags]\n"},
		{[]string{"task", "list", "-o", "yml"}, `Error: invalid argument "yml" for "-o, --output" flag: unknown format "yml"; did you mean "yaml"? (known: json, table, yaml)` + "\n"},
	} {
		if code, _, stderr := c.run(tc.args...); code != exitError || stderr != tc.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
	// version: the module version or the VCS commit, as JSON too.
	if out := mustRun("version", "-o", "json"); !strings.Contains(out, `"version":`) || !strings.Contains(out, `"go": "go1.`) {
		t.Errorf("version -o json:\n%s", out)
	}
}
