package envdeploy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

// Example is an env this repository ships as Go source, registered on
// first use (the echo-mcp bundle deploys "echo" without a put step).
type Example struct {
	EnvironmentName string
	GoPackage       string // relative to the module root
}

// Examples are the example envs deploy registers when their id is
// unknown. They are built from source, so they need the Go toolchain and
// this module's source tree (the current directory inside it).
var Examples = map[string]Example{
	"echo": {EnvironmentName: "echo", GoPackage: "./examples/envs/echo/cmd/echo-env"},
}

// ErrExampleUnbuildable is returned when an example env is requested but
// cannot be built here.
var ErrExampleUnbuildable = errors.New("example env cannot be built here")

// isExample reports whether an unknown ref would be registered from
// Examples.
func (d *Deployer) isExample(ref registry.Ref) bool {
	if !d.AutoRegisterExamples || ref.Version != 0 {
		return false
	}
	_, ok := Examples[exampleBase(ref.ID)]
	return ok
}

func exampleBase(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		return id[i+1:]
	}
	return id
}

// registerExample puts example id (or the id's last path element, so a
// bundle's "@local/.../echo" works too) when it is in Examples.
func (d *Deployer) registerExample(ctx context.Context, id string) (*Env, error) {
	base := exampleBase(id)
	ex, ok := Examples[base]
	if !ok {
		return nil, nil
	}
	root, inModule := moduleRoot()
	if _, err := exec.LookPath("go"); err != nil || !inModule {
		return nil, fmt.Errorf("%w: env %q is not registered; it is an example built from source, which needs the Go toolchain on PATH and the agentenv source tree as the current directory (or register it: agent-env env mcp-server put --id %s --go-package %s)",
			ErrExampleUnbuildable, id, id, ex.GoPackage)
	}
	d.printf("Registering example env %s from %s...", id, ex.GoPackage)
	p := &Putter{Stores: d.Stores, Out: d.Out}
	return p.PutMCPServer(ctx, MCPServerInput{ID: id, EnvironmentName: ex.EnvironmentName,
		Image: ImageInput{GoPackage: ex.GoPackage, GoDir: root}, Description: "example env " + base})
}

// loadEnv reads the env, registering a known example on first use.
func (d *Deployer) loadEnv(ctx context.Context, ref registry.Ref) (*Env, error) {
	e, err := d.Stores.getEnv(ctx, ref)
	if errors.Is(err, registry.ErrNotFound) && ref.Version == 0 && d.AutoRegisterExamples {
		ex, xerr := d.registerExample(ctx, ref.ID)
		if xerr != nil {
			return nil, xerr
		}
		if ex != nil {
			return ex, nil
		}
	}
	return e, err
}
