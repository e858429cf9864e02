package process

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDiscover(t *testing.T) {
	bin1, bin2, cfgDir := t.TempDir(), t.TempDir(), t.TempDir()
	exe := func(dir, name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	exe(bin1, "agentenv-plugin-dice", 0o755)
	exe(bin2, "agentenv-plugin-dice", 0o755)     // shadowed by bin1's
	exe(bin2, "agentenv-plugin-cards", 0o755)    // found on PATH, settings from config
	exe(bin2, "agentenv-plugin-noexec", 0o644)   // not executable
	exe(bin2, "agentenv-plugin-Bad_Name", 0o755) // not a plugin name
	exe(bin2, "agentenv-plugin-local", 0o755)    // the config table with a command wins
	specs, errs := Discover(DiscoverOptions{
		Plugins: map[string]map[string]any{
			"local":  {"command": []any{"./plugins/run.sh", "--fast"}, "timeout": "45s", "level": int64(3)},
			"cards":  {"timeout": int64(12), "deck": "french"},
			"broken": {"command": "not-a-list"},
			"Upper":  {"command": []any{"x"}},
			"slow":   {"command": []any{"x"}, "timeout": "soon"},
		},
		ConfigDir: cfgDir,
		Path:      bin1 + string(os.PathListSeparator) + bin2,
	})
	got := map[string]Spec{}
	for _, s := range specs {
		got[s.Name] = s
	}
	want := map[string]Spec{
		"local": {Name: "local", Command: []string{filepath.Join(cfgDir, "plugins/run.sh"), "--fast"}, Dir: cfgDir,
			Settings: map[string]any{"level": int64(3)}, Timeout: 45 * time.Second, Source: FromConfig},
		"dice":  {Name: "dice", Command: []string{filepath.Join(bin1, "agentenv-plugin-dice")}, Source: FromPath},
		"cards": {Name: "cards", Command: []string{filepath.Join(bin2, "agentenv-plugin-cards")}, Source: FromPath, Timeout: 12 * time.Second, Settings: map[string]any{"deck": "french"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("specs:\n%+v\nwant:\n%+v", got, want)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{"[plugins.broken] command must be a non-empty list of strings",
		"[plugins.Upper]: a plugin name is lower-case", `[plugins.slow] timeout: "soon" is not a duration`} {
		if !strings.Contains(all, w) {
			t.Errorf("errors %q lack %q", all, w)
		}
	}
	if len(errs) != 3 {
		t.Errorf("%d errors, want 3: %s", len(errs), all)
	}
}
