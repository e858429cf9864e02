// Package examplecatalog registers the example envs and agents this
// repository ships as Go source (the email env, the scripted and
// toolcaller agents) on first use, so bundles such as q3-email deploy
// them by name without a put step. They are built offline into static
// binaries (and FROM scratch images), which needs the Go toolchain and
// this module's source tree (the current directory inside it).
package examplecatalog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Example is one buildable example.
type Example struct {
	// EnvironmentName is set for envs, empty for agents.
	EnvironmentName string
	GoPackage       string // relative to the module root
}

// Envs and Agents are the examples, by the last segment of their id.
var (
	Envs = map[string]Example{
		"email": {EnvironmentName: "email", GoPackage: "./examples/envs/email/cmd/email-env"},
		"echo":  {EnvironmentName: "echo", GoPackage: "./examples/envs/echo/cmd/echo-env"},
		// outbox is a second email server (tools outbox_*), for bundles
		// that need two mailboxes.
		"outbox": {EnvironmentName: "outbox", GoPackage: "./examples/envs/email/cmd/email-env"},
	}
	// ServiceDBs are service_db envs: the example db MCP server and
	// agentenv-postgres, both built from source (envdeploy.PutServiceDB's
	// defaults); their caller role assistant may write.
	ServiceDBs = map[string]Example{
		"shop-db": {EnvironmentName: "db"},
	}
	// Offices are multi envs of examples: the email server, the webmail
	// website over it (examples/websites/webmail) and the website-browser
	// (agentenv-browser, running the host's chromium; on Docker, its image
	// holds the host's chromium and library closure), registered as
	// <id>-email, <id>-webmail and <id>-browser.
	Offices = map[string]Example{
		"browser-office": {GoPackage: "./examples/websites/webmail/cmd/webmail"},
	}
	Agents = map[string]Example{
		"scripted":   {GoPackage: "./examples/agents/scripted"},
		"toolcaller": {GoPackage: "./examples/agents/toolcaller"},
	}
)

// ErrUnbuildable is returned when an example is needed but cannot be
// built here.
var ErrUnbuildable = errors.New("example cannot be built here")

var mu sync.Mutex // one registration at a time (concurrent bundle runs)

func base(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		return id[i+1:]
	}
	return id
}

// EnsureEnv registers env id when it is missing and names an example; it
// does nothing when the env exists or is not an example. sandbox is the
// deploy's sandbox spec ("" = the deployer's default): a service_db
// example deployed on Docker gets a database image holding this host's
// PostgreSQL (envdeploy.ServiceDBInput.DBHostClosure), and a browser
// office a browser image holding this host's Chromium
// (envdeploy.BrowserInput.HostClosure), which the process sandbox does
// not need.
func EnsureEnv(ctx context.Context, d *envdeploy.Deployer, id, sandbox string) error {
	if ex, ok := ServiceDBs[base(id)]; ok {
		return ensure(ctx, d, id, ex, func(p *envdeploy.Putter, in envdeploy.ImageInput) error {
			_, err := p.PutServiceDB(ctx, envdeploy.ServiceDBInput{ID: id, EnvironmentName: ex.EnvironmentName,
				WriteRoles: []string{"assistant"}, Description: "example service_db env " + base(id),
				DBHostClosure: d.SandboxType(ctx, sandbox) == "docker"})
			return err
		}, func() error {
			_, err := d.Stores.GetEnv(ctx, registry.Ref{ID: id})
			return err
		})
	}
	if ex, ok := Offices[base(id)]; ok {
		return ensure(ctx, d, id, ex, func(p *envdeploy.Putter, in envdeploy.ImageInput) error {
			return putOffice(ctx, p, id, in, d.SandboxType(ctx, sandbox) == "docker")
		}, func() error {
			_, err := d.Stores.GetEnv(ctx, registry.Ref{ID: id})
			return err
		})
	}
	ex, ok := Envs[base(id)]
	if !ok {
		return nil
	}
	return ensure(ctx, d, id, ex, func(p *envdeploy.Putter, in envdeploy.ImageInput) error {
		_, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: id, EnvironmentName: ex.EnvironmentName, Image: in,
			Description: "example env " + base(id)})
		return err
	}, func() error {
		_, err := d.Stores.GetEnv(ctx, registry.Ref{ID: id})
		return err
	})
}

// putOffice registers a browser office: its three members, then the
// multi env listing them. hostClosure puts this host's Chromium into the
// browser's image (envdeploy.BrowserInput.HostClosure), for Docker.
func putOffice(ctx context.Context, p *envdeploy.Putter, id string, webmail envdeploy.ImageInput, hostClosure bool) error {
	email := envdeploy.ImageInput{GoPackage: Envs["email"].GoPackage, GoDir: webmail.GoDir}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: id + "-email", EnvironmentName: "email", Image: email,
		Description: "the email server of example " + base(id)}); err != nil {
		return err
	}
	if _, err := p.PutWebsite(ctx, envdeploy.WebsiteInput{ID: id + "-webmail", EnvironmentName: "webmail", Image: webmail,
		Description: "the webmail of example " + base(id)}); err != nil {
		return err
	}
	if _, err := p.PutWebsiteBrowser(ctx, envdeploy.BrowserInput{ID: id + "-browser", HostClosure: hostClosure}); err != nil {
		return err
	}
	_, err := p.PutMulti(ctx, envdeploy.MultiInput{ID: id, MCPServers: []string{id + "-email"},
		Websites: []string{id + "-webmail", id + "-browser"}, Description: "example browser office " + base(id)})
	return err
}

// EnsureAgent registers agent id when it is missing and names an example.
func EnsureAgent(ctx context.Context, d *envdeploy.Deployer, id string) error {
	ex, ok := Agents[base(id)]
	if !ok {
		return nil
	}
	return ensure(ctx, d, id, ex, func(p *envdeploy.Putter, in envdeploy.ImageInput) error {
		_, err := p.PutAgent(ctx, envdeploy.AgentInput{ID: id, Image: in})
		return err
	}, func() error {
		_, err := d.Stores.GetAgent(ctx, registry.Ref{ID: id})
		return err
	})
}

func ensure(ctx context.Context, d *envdeploy.Deployer, id string, ex Example, put func(*envdeploy.Putter, envdeploy.ImageInput) error, get func() error) error {
	mu.Lock()
	defer mu.Unlock()
	err := get()
	if err == nil || !errors.Is(err, registry.ErrNotFound) {
		return err
	}
	root, ok := ModuleRoot()
	if _, lerr := exec.LookPath("go"); lerr != nil || !ok {
		return fmt.Errorf("%w: %q is not registered; it is an example built from %s, which needs the Go toolchain on PATH and the agentenv source tree as the current directory",
			ErrUnbuildable, id, ex.GoPackage)
	}
	p := &envdeploy.Putter{Stores: d.Stores}
	if err := put(p, envdeploy.ImageInput{GoPackage: ex.GoPackage, GoDir: root}); err != nil {
		return fmt.Errorf("register example %s: %w", id, err)
	}
	return nil
}

// ModuleRoot walks up from the current directory to the go.mod of this
// module.
func ModuleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			ok := sc.Scan() && strings.TrimSpace(strings.TrimPrefix(sc.Text(), "module")) == envdeploy.ModulePath
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
