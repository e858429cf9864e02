package imagebuild_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/imagebuild"
)

// A binary built by BuildGo passes; a dynamically linked one and a file
// that is no ELF at all fail with an error naming the file and the fix.
func TestCheckStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles")
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	static, err := imagebuild.BuildGo(context.Background(), ".", t.TempDir(), &imagebuild.GoOptions{Dir: dir, Name: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if err := imagebuild.CheckStatic(static, "./cmd/tiny"); err != nil {
		t.Errorf("static binary rejected: %v", err)
	}

	dynamic := dynamicBinary(t)
	err = imagebuild.CheckStatic(dynamic, "./cmd/agentenv-gateway")
	var ns *imagebuild.NotStaticError
	if !errors.As(err, &ns) || !errors.Is(err, imagebuild.ErrNotStatic) || ns.Interp == "" || len(ns.Needed) == 0 {
		t.Fatalf("dynamic binary: %#v", err)
	}
	for _, want := range []string{dynamic, "dynamically linked", ns.Interp, "CGO_ENABLED=0 go build -o " + dynamic + " ./cmd/agentenv-gateway"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	script := filepath.Join(dir, "script")
	_ = os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if err := imagebuild.CheckStatic(script, ""); !errors.Is(err, imagebuild.ErrNotStatic) || !strings.Contains(err.Error(), script) {
		t.Errorf("script: %v", err)
	}
}

// dynamicBinary is a dynamically linked executable of the host: the
// system's own true(1) (Debian builds it against libc).
func dynamicBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no /bin/true to serve as a dynamically linked binary")
	return ""
}
