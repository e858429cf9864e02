package gobuild_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/plugin/gobuild"
)

func TestBuildWithoutToolchain(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "agent-env")
	_, err := gobuild.Build(context.Background(), &gobuild.Request{Output: out})
	if !errors.Is(err, gobuild.ErrNoToolchain) || !strings.Contains(err.Error(), "install Go") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("something was written")
	}
}

func TestFindSource(t *testing.T) {
	root, _ := filepath.Abs("../..")
	got, err := gobuild.FindSource(context.Background(), root, "go")
	if err != nil || got != root {
		t.Fatalf("explicit: %q %v", got, err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644)
	if _, err := gobuild.FindSource(context.Background(), other, "go"); !errors.Is(err, gobuild.ErrNoSource) || !strings.Contains(err.Error(), other) {
		t.Fatalf("another module: %v", err)
	}
	t.Setenv(gobuild.SourceEnv, other)
	if _, err := gobuild.FindSource(context.Background(), "", "go"); !errors.Is(err, gobuild.ErrNoSource) || !strings.Contains(err.Error(), gobuild.SourceEnv) {
		t.Fatalf("env: %v", err)
	}
	t.Setenv(gobuild.SourceEnv, "")
	// A test binary is compiled from this checkout, which still exists.
	if got, err := gobuild.FindSource(context.Background(), "", "go"); err != nil || got != root {
		t.Fatalf("compiled-in: %q %v", got, err)
	}
}

func TestSetRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".agentenv", gobuild.SetFileName)
	set, err := gobuild.ReadSet(path)
	if err != nil || len(set.Plugins) != 0 {
		t.Fatalf("missing file: %v %+v", err, set)
	}
	set.Put(gobuild.Module{Path: "example.com/dice", Version: "v0.1.0", Names: []string{"dice"}})
	set.Put(gobuild.Module{Path: "example.com/cards", Dir: "/src/cards"})
	set.Put(gobuild.Module{Path: "example.com/dice", Version: "v0.2.0", Names: []string{"dice"}})
	if err := set.Write(path); err != nil {
		t.Fatal(err)
	}
	again, err := gobuild.ReadSet(path)
	if err != nil || len(again.Plugins) != 2 || again.Plugins[0].Version != "v0.2.0" || again.Plugins[1].Dir != "/src/cards" {
		t.Fatalf("read back: %v %+v", err, again)
	}
	if m, ok := again.Remove("dice"); !ok || m.Path != "example.com/dice" {
		t.Fatalf("remove by name: %v %+v", ok, m)
	}
	if _, ok := again.Remove("example.com/cards"); !ok || len(again.Plugins) != 0 {
		t.Fatalf("remove by module: %+v", again)
	}
	os.WriteFile(path, []byte("[[plugins]]\nmodule = 'x'\nbogus = 1\n"), 0o644)
	if _, err := gobuild.ReadSet(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("unknown key: %v", err)
	}
}
