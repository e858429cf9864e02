package envdeploy

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModulePath is this repository's Go module.
const ModulePath = "github.com/agentenv/agentenv"

// GatewaySource finds how to build the gateway image offline, in order:
// an agentenv-gateway binary next to the running executable, one on PATH,
// or the ./cmd/agentenv-gateway package when the current directory is
// inside this module's source (compiled with CGO_ENABLED=0).
func GatewaySource(ctx context.Context) (ImageInput, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "agentenv-gateway")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return ImageInput{Binary: p}, nil
		}
	}
	if p, err := exec.LookPath("agentenv-gateway"); err == nil {
		return ImageInput{Binary: p}, nil
	}
	if root, ok := moduleRoot(); ok {
		return ImageInput{GoPackage: gatewayPackage, GoDir: root}, nil
	}
	return ImageInput{}, errors.New("no agentenv-gateway binary found (next to agent-env or on PATH) and not inside the agentenv source: " +
		"install agentenv-gateway (CGO_ENABLED=0 go build " + gatewayPackage + ") or run agent-env env gateway put --binary PATH")
}

// gatewayPackage is the gateway's command in this module.
const gatewayPackage = "./cmd/agentenv-gateway"

// sourcePackage is the Go package a prebuilt in.Binary comes from, for the
// rebuild hint of a binary that is not static: the one named, else the
// gateway's for a binary named like it, else "" (a placeholder).
func sourcePackage(in ImageInput) string {
	if in.GoPackage != "" {
		return in.GoPackage
	}
	if filepath.Base(in.Binary) == "agentenv-gateway" {
		return gatewayPackage
	}
	return ""
}

// moduleRoot walks up from the current directory to the go.mod of
// ModulePath.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			ok := sc.Scan() && strings.TrimSpace(strings.TrimPrefix(sc.Text(), "module")) == ModulePath
			f.Close()
			return dir, ok
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
