package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

// envSession is what the env, a2a-agent and sandbox commands share: the
// stores, the backends and the [sandbox] defaults.
type envSession struct {
	st     *storeSet
	cfg    *config.Config
	docker *docker.Provider
	proc   *process.Provider
	dep    *envdeploy.Deployer
	put    *envdeploy.Putter
}

func (s *envSession) Close() {
	if s.docker != nil {
		s.docker.Close()
	}
	s.st.Close()
}

// sandboxSpec maps the reference's "local" (its local Docker topology)
// to our backends; "" keeps the config default.
func sandboxSpec(spec string) string { return strings.TrimSpace(spec) }

// sandboxFlags are the sandbox flags of every command that deploys:
// --sandbox sets the provider of envs, agents and task sandboxes alike;
// --env-sandbox and --agent-sandbox set one side and win over --sandbox.
type sandboxFlags struct{ both, env, agent string }

func addSandboxFlags(cmd *cobra.Command, what string) *sandboxFlags {
	s := &sandboxFlags{}
	f := cmd.Flags()
	f.StringVar(&s.both, "sandbox", "", "sandbox provider spec for "+what+": local (Docker), docker, process, or a comma fallback chain")
	f.StringVar(&s.env, "env-sandbox", "", "sandbox provider spec for envs (over --sandbox)")
	f.StringVar(&s.agent, "agent-sandbox", "", "sandbox provider spec for agents (over --sandbox)")
	for _, name := range []string{"sandbox", "env-sandbox", "agent-sandbox"} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(config.SandboxProviders(), cobra.ShellCompDirectiveNoFileComp))
	}
	return s
}

// envSpec is the provider spec for envs, agentSpec for agents ("" = the
// configured default).
func (s *sandboxFlags) envSpec() string   { return sandboxSpec(cmp.Or(s.env, s.both)) }
func (s *sandboxFlags) agentSpec() string { return sandboxSpec(cmp.Or(s.agent, s.both)) }

// sandboxOverrides are the user_overrides of a run context the flags set.
func sandboxOverrides(s *sandboxFlags) map[string]any {
	uo := map[string]any{}
	if s == nil {
		return uo
	}
	if v := sandboxSpec(s.both); v != "" {
		uo["sandbox"] = v
	}
	if v := s.envSpec(); v != "" {
		uo["env_sandbox"] = v
	}
	if v := s.agentSpec(); v != "" {
		uo["agent_sandbox"] = v
	}
	return uo
}

// openEnvSession opens the stores owning id and the sandbox backends.
func (d *deps) openEnvSession(ctx context.Context, id string) (*envSession, error) {
	cfg, err := d.loadConfig()
	if err != nil {
		return nil, err
	}
	st, err := d.openStores(ctx)
	if err != nil {
		return nil, err
	}
	s := &envSession{st: st, cfg: cfg}
	s.dep, s.put, s.docker, s.proc = d.envDeployer(cfg, st, id, true)
	return s, nil
}

// withEnvSession runs fn with the session of id open and closes it when fn
// returns, as withStores does for the registry-only commands.
func (d *deps) withEnvSession(ctx context.Context, id string, fn func(ctx context.Context, s *envSession) error) error {
	s, err := d.openEnvSession(ctx, id)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(ctx, s)
}

// envDeployer builds the env/agent deployer for entities owned by id's
// store: "local" and "docker" are the local engine,
// "process" runs static binaries as local processes. persist marks what it
// deploys as outliving this process (CLI deploys); bundle and task runs
// pass false so `sandbox prune` reclaims what a killed run left. Close the
// returned Docker provider (may be nil) when done.
func (d *deps) envDeployer(cfg *config.Config, st *storeSet, id string, persist bool) (*envdeploy.Deployer, *envdeploy.Putter, *docker.Provider, *process.Provider) {
	backends := map[string]envdeploy.Backend{}
	dp, derr := docker.New(&docker.Options{Logger: d.logger(), StoreID: st.StoreID()})
	if derr == nil {
		backends["local"], backends["docker"] = dp, dp
	}
	proc := process.New(d.processRoot(), &process.Options{Logger: d.logger()})
	backends["process"] = proc
	if kp := d.kubernetesProvider(cfg, st); kp != nil { // kubernetes.go
		backends[kp.Type()] = kp
	}
	d.addPluginBackends(backends, st.StoreID()) // plugins.go
	stores := envdeploy.Stores{Docs: st.DocumentsFor(id), Artifacts: st.ArtifactsFor(id), Images: st.Images,
		RecordsAlso: []registry.DocumentStore{st.Local, st.Documents},
		Route: func(id string) (registry.DocumentStore, *artifact.Store) {
			return st.DocumentsFor(id), st.ArtifactsFor(id)
		}}
	put := &envdeploy.Putter{Stores: stores, Out: d.stdout}
	if dp != nil {
		put.Builder = dp
	} else {
		put.BuilderErr = derr
	}
	dep := &envdeploy.Deployer{Stores: stores, Backends: backends, Persist: persist, StoreID: st.StoreID(), Out: d.stdout, Logger: d.logger(),
		DefaultSandbox: cfg.Sandbox.Default, AgentSandbox: cfg.Sandbox.AgentDefault, AutoRegisterExamples: true}
	// Browser screenshots go to the registry's objects when they are a
	// folder the process provider's gateway can write.
	if fs, ok := st.Objects.(*fsobject.Store); ok {
		dep.ObjectStoreDir = fs.Root()
	}
	dep.Gateway = func(ctx context.Context) (*envdeploy.Env, error) {
		src, err := envdeploy.GatewaySource(ctx)
		if err != nil {
			return nil, err
		}
		return put.PutGateway(ctx, envdeploy.DefaultGatewayID, src)
	}
	return dep, put, dp, proc
}

// processRoot is where the process backend keeps its group folders.
func (d *deps) processRoot() string { return filepath.Join(d.sandboxRoot(), "process") }

// parseKV parses repeated K=V flags.
func parseKV(flag string, vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &registry.InvalidError{Field: flag, Value: v, Reason: "must be KEY=VALUE"}
		}
		out[strings.TrimSpace(k)] = val
	}
	return out, nil
}

// ttlFlag converts --ttl-seconds.
func ttlFlag(secs int) time.Duration { return time.Duration(secs) * time.Second }

// formatExpires renders "YYYY-MM-DD HH:MM UTC".
func formatExpires(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") + " UTC" }

// versionRef builds a ref from --id and --version (0 = latest).
func versionRef(id string, version int) (registry.Ref, error) {
	if err := registry.ValidateID(id); err != nil {
		return registry.Ref{}, err
	}
	if version < 0 {
		return registry.Ref{}, &registry.InvalidError{Field: "version", Value: fmt.Sprint(version), Reason: "must be >= 1"}
	}
	return registry.Ref{ID: id, Version: version}, nil
}

// runDeployer is the deployer of task and bundle runs (deploy_env,
// deploy_agent): resources are not persistent, so `sandbox prune` reclaims
// what a killed run leaves behind. Config problems fall back to defaults
// (the command already loaded the config once).
func (d *deps) runDeployer(st *storeSet, id string) *envdeploy.Deployer {
	cfg, err := d.loadConfig()
	if err != nil {
		cfg = config.Defaults()
	}
	if st.defaultSandbox != "" {
		cfg.Sandbox.Default = st.defaultSandbox
	}
	dep, _, _, _ := d.envDeployer(cfg, st, id, false)
	dep.Out = nil // bundle and task output stay the runner's
	return dep
}

// sandboxProviders are the runner's sandbox providers: local work folders
// and, for container-mode sandboxes, the local Docker engine ("docker";
// it is contacted only when a step uses it). Docker resources carry
// st's store id.
func (d *deps) sandboxProviders(lp runner.SandboxProvider, st *storeSet) map[string]runner.SandboxProvider {
	storeID := st.StoreID()
	out := map[string]runner.SandboxProvider{lp.Type(): lp}
	if dp, err := docker.New(&docker.Options{Logger: d.logger(), StoreID: storeID}); err == nil {
		out[docker.TypeName] = dp
	}
	if cfg, err := d.loadConfig(); err == nil {
		if kp := d.kubernetesProvider(cfg, st); kp != nil {
			out[kp.Type()] = kp
		}
	}
	d.addPluginSandboxes(out, storeID) // plugins.go
	return out
}
