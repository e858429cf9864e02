package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/plugin"
)

// slowTestsEnv gates the tests that build agent-env several times
// (minutes on a loaded 2-core machine); .ci/run sets it for one run of
// its own, outside the -race run.
const slowTestsEnv = "AGENTENV_SLOW_TESTS"

func requireSlow(t *testing.T) {
	t.Helper()
	if os.Getenv(slowTestsEnv) == "" || testing.Short() {
		t.Skip("slow (builds agent-env with plugins): set " + slowTestsEnv + "=1, as .ci/run does")
	}
}

// keepGoCaches pins the Go build and module caches to the real ones, so
// that builds run after newCLI moves HOME reuse them.
func keepGoCaches(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var env map[string]string
	if err := json.Unmarshal(out, &env); err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// runBin runs a built agent-env in dir.
func runBin(t *testing.T, dir, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return 0, out.String()
}

// The example Go plugin end to end: plugin add builds a custom agent-env
// from the local module and replaces the binary; the plugin's bundle,
// step type and command work; a plugin that claims deploy_env is refused
// by the new binary's plugin check, so plugin add keeps the old binary and
// the recorded set; plugin remove rebuilds without the example.
func TestPluginAddExampleEndToEnd(t *testing.T) {
	requireSlow(t)
	keepGoCaches(t)
	bin := buildCLI(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	newCLI(t)
	work := t.TempDir()

	code, out := runBin(t, work, bin, "plugin", "add", filepath.Join(root, "examples", "plugins", "goplugin"))
	if code != 0 || !strings.Contains(out, "Added dice: github.com/agentenv/agentenv/examples/plugins/goplugin") {
		t.Fatalf("plugin add: exit %d\n%s", code, out)
	}
	setFile := filepath.Join(work, ".agentenv", "plugins.toml")
	set, err := os.ReadFile(setFile)
	if err != nil || !strings.Contains(string(set), "names = ['dice']") {
		t.Fatalf("plugin set: %v\n%s", err, set)
	}
	code, out = runBin(t, work, bin, "plugin", "list", "--json")
	var recs []plugin.Record
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil {
		t.Fatalf("plugin list: exit %d %v\n%s", code, err, out)
	}
	if len(recs) != 2 || recs[1].Name != "dice" || recs[1].Kind != plugin.KindGo || recs[1].Status != "active" {
		t.Fatalf("records: %+v", recs)
	}
	code, out = runBin(t, work, bin, "run", "dice/dice-game")
	if code != 0 || !strings.Contains(out, "tasks/roll.json v1: passed (roll: 1)") {
		t.Fatalf("run dice/dice-game: exit %d\n%s", code, out)
	}
	if code, out = runBin(t, work, bin, "dice", "roll", "--seed", "abc"); code != 0 || !strings.HasPrefix(out, "rolled ") {
		t.Fatalf("dice roll: exit %d\n%s", code, out)
	}

	before := fileSum(t, bin)
	code, out = runBin(t, work, bin, "plugin", "add", filepath.Join(root, "cmd", "agent-env", "testdata", "evilplugin"))
	if code != 1 || !strings.Contains(out, `plugin "evil" cannot add step type "deploy_env": it is built-in (agentenv-framework)`) ||
		!strings.Contains(out, "is unchanged") {
		t.Fatalf("plugin add evil: exit %d\n%s", code, out)
	}
	if fileSum(t, bin) != before {
		t.Fatal("the binary changed although the new one failed plugin check")
	}
	if now, _ := os.ReadFile(setFile); !bytes.Equal(now, set) {
		t.Fatalf("the plugin set changed:\n%s", now)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(bin), ".agent-env-new-*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}

	code, out = runBin(t, work, bin, "plugin", "remove", "dice")
	if code != 0 || !strings.Contains(out, "with 0 Go plugin(s)") {
		t.Fatalf("plugin remove: exit %d\n%s", code, out)
	}
	if code, out = runBin(t, work, bin, "run", "dice/dice-game"); code == 0 || !strings.Contains(out, `no installed bundle "dice/dice-game"`) {
		t.Fatalf("run after remove: exit %d\n%s", code, out)
	}
}
