// Package putgate runs the release gates behind `agent-env env
// mcp-server put --validate` and `agent-env a2a-agent put --validate`. It
// registers the env (with the gateway) or the agent in throwaway stores
// under a temporary folder, deploys it on the process sandbox, runs the
// gates (for an env verify_env_card, verify_env_core_protocol,
// verify_mcp_tool_schema, validation_gate_aggregator and the advisory
// verify_spec_conformance; for an agent the verify_a2a_* probe steps of
// a2agates and an install_agent + verify_a2a_install chain), tears
// everything down and removes the folder. The caller's stores are never touched: it puts the entity itself
// only when the report passed.
//
//	rep, err := putgate.ValidateMCPServer(ctx, in, nil) // or ValidateA2AAgent
//	if err != nil { ... }          // could not run the gates
//	if !rep.Passed { return rep }  // *Report is an error naming each failed gate
package putgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/sandbox/process"
	"github.com/agentenv/agentenv/runner/steps"
	"github.com/agentenv/agentenv/runner/steps/a2agates"
	"github.com/agentenv/agentenv/runner/steps/envgates"
)

// Options tunes a validation; nil means the defaults.
type Options struct {
	// Gateway is the gateway image source; zero means
	// envdeploy.GatewaySource (a binary next to the CLI, on PATH, or the
	// module source).
	Gateway envdeploy.ImageInput
	// TempDir is where the throwaway stores and processes live; "" means
	// os.TempDir().
	TempDir string
	// Timeout bounds the deploy and the gates (not the builds before
	// them); zero means 3 minutes.
	Timeout time.Duration
	// Logger receives the runner's log; nil discards it.
	Logger *slog.Logger
}

// ErrNeedsBinary: the gates run the env or agent as a local process, so
// its source must be a Go package or a prebuilt binary.
var ErrNeedsBinary = errors.New("--validate runs it as a local process: give --go-package or --binary")

// Gate is one gate's verdict.
type Gate struct {
	Name     string
	Passed   bool
	Missing  bool // required but never ran
	Problems []string
	// Advisory gates are reported but do not decide the put (the
	// reference records spec conformance without enforcing it).
	Advisory bool
	// Skipped: the gate found nothing to check (every row skipped).
	Skipped bool
}

// Report is the outcome of the gates; a failed Report is also the error
// the put returns.
type Report struct {
	Kind   string // "env" or "agent"
	ID     string
	Passed bool
	Gates  []Gate
}

// Error lists each failed gate with its problems.
func (r *Report) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s failed validation (nothing was stored):", r.Kind, r.ID)
	for _, g := range r.Gates {
		switch {
		case g.Advisory && !g.Passed:
			fmt.Fprintf(&b, "\n  gate %s: FAILED (advisory, not enforced)", g.Name)
			for _, p := range g.Problems {
				fmt.Fprintf(&b, "\n    - %s", p)
			}
		case g.Missing:
			fmt.Fprintf(&b, "\n  gate %s: FAILED (did not run)", g.Name)
		case !g.Passed:
			fmt.Fprintf(&b, "\n  gate %s: FAILED", g.Name)
			for _, p := range g.Problems {
				fmt.Fprintf(&b, "\n    - %s", p)
			}
		}
	}
	return b.String()
}

// String is the one-line-per-gate summary of a report.
func (r *Report) String() string {
	var b strings.Builder
	for i, g := range r.Gates {
		if i > 0 {
			b.WriteByte('\n')
		}
		state := "passed"
		switch {
		case !g.Passed:
			state = "FAILED"
		case g.Skipped:
			state = "skipped"
		}
		if g.Advisory {
			state += " (advisory)"
		}
		fmt.Fprintf(&b, "gate %s: %s", g.Name, state)
		if g.Advisory && !g.Passed {
			for _, p := range g.Problems {
				fmt.Fprintf(&b, "\n  - %s", p)
			}
		}
	}
	return b.String()
}

// ValidateMCPServer runs the env gates on the env in describes. A non-nil
// error means the gates could not run (bad input, a build or deploy
// failure); a failed gate is a Report with Passed false.
func ValidateMCPServer(ctx context.Context, in envdeploy.MCPServerInput, o *Options) (*Report, error) {
	if in.Image.GoPackage == "" && in.Image.Binary == "" {
		return nil, ErrNeedsBinary
	}
	return validate(ctx, o, "env", in.ID, gateTask(in.ID), envgates.DefaultRequiredGates, []string{envgates.GateSpecConformance},
		func(ctx context.Context, put *envdeploy.Putter, opt *Options) error {
			gw := opt.Gateway
			if gw == (envdeploy.ImageInput{}) {
				var err error
				if gw, err = envdeploy.GatewaySource(ctx); err != nil {
					return err
				}
			}
			if _, err := put.PutGateway(ctx, envdeploy.DefaultGatewayID, gw); err != nil {
				return fmt.Errorf("validate: gateway: %w", err)
			}
			_, err := put.PutMCPServer(ctx, in)
			return err
		})
}

// ValidateA2AAgent runs the agent gates (a2agates) on the agent in
// describes, deployed alone on the process sandbox.
func ValidateA2AAgent(ctx context.Context, in envdeploy.AgentInput, o *Options) (*Report, error) {
	if in.Image.GoPackage == "" && in.Image.Binary == "" {
		return nil, ErrNeedsBinary
	}
	return validate(ctx, o, "agent", in.ID, agentGateTask(in.ID), agentGates(), nil,
		func(ctx context.Context, put *envdeploy.Putter, _ *Options) error {
			_, err := put.PutAgent(ctx, in)
			return err
		})
}

// validate registers the entity with put in throwaway stores, runs task
// and reports the gates' verdicts.
func validate(ctx context.Context, o *Options, kind, id, taskJSON string, gates, advisory []string,
	put func(context.Context, *envdeploy.Putter, *Options) error) (rep *Report, err error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 3 * time.Minute
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp(opt.TempDir, "agentenv-validate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	docs, err := sqlite.Open(ctx, filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		return nil, err
	}
	defer docs.Close()
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		return nil, err
	}
	arts := artifact.New(docs, objs, nil)
	st := envdeploy.Stores{Docs: docs, Artifacts: arts, Images: localimage.New(nil)}
	if err := os.MkdirAll(filepath.Join(dir, "put"), 0o700); err != nil {
		return nil, err
	}
	if err := put(ctx, &envdeploy.Putter{Stores: st, TempDir: filepath.Join(dir, "put")}, &opt); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	pb := process.New(filepath.Join(dir, "proc"), &process.Options{Logger: opt.Logger})
	defer pb.Close()
	dep := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{pb.Type(): pb}, DefaultSandbox: pb.Type(),
		AgentSandbox: pb.Type(), ReadyTimeout: 60 * time.Second}
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("put-validate", 1, []byte(taskJSON))
	if err != nil {
		return nil, err
	}
	// The local sandbox hosts the install gate's VM-mode sandbox (host
	// folders under dir, removed with it).
	rc := runner.NewRunContext(nil, &runner.Services{Documents: docs, Objects: objs, Artifacts: arts, Deployer: dep, Logger: opt.Logger,
		Sandboxes: map[string]runner.SandboxProvider{"local": local.New(filepath.Join(dir, "local"), nil)}})
	defer func() {
		// Teardown on every path, with a context of its own: the run's
		// may be the one that expired.
		tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer tcancel()
		_, _ = r.TeardownRun(tctx, rc, 0)
	}()
	if _, err := r.Run(ctx, task, rc, nil); err != nil {
		return nil, fmt.Errorf("validate %s %s: %w", kind, id, err)
	}
	return report(kind, id, gates, advisory, rc), nil
}

// agentGates are the gate keys of every agent gate the put runs.
func agentGates() []string {
	var out []string
	for _, i := range a2agates.Infos() {
		out = append(out, strings.TrimPrefix(i.Type, "verify_"))
	}
	return append(out, "a2a_install")
}

// agentGateTask deploys the agent and runs every agent gate on it, then,
// as the reference does, installs a second copy into a VM-mode sandbox
// (install_agent) and checks it answers (verify_a2a_install). The install
// chain does not fail the task: a failed install is the gate's verdict.
// verify_a2a_snapshot is not run: it grades a recall after a snapshot is
// loaded into a fresh agent, and deploy_agent cannot load one yet.
func agentGateTask(id string) string {
	q := fmt.Sprintf("%q", id)
	js := `[{"id":"agent","type":"deploy_agent","a2a_agent_id":` + q + `,"ttl_seconds":600}`
	for _, i := range a2agates.Infos() {
		js += fmt.Sprintf(`,{"id":%q,"type":%q}`, i.Type, i.Type)
	}
	return js + `,{"id":"install-host","type":"deploy_sandbox","sandbox_name":"install-test-host","sandbox_mode":"vm","exposed_ports":[8000],"fail_task_on_error":false},
	 {"id":"install","type":"install_agent","sandbox_name":"install-test-host","a2a_agent_id":` + q + `,"agent_name":"install-test-agent","fail_task_on_error":false},
	 {"id":"verify_a2a_install","type":"verify_a2a_install","a2a_agent_id":` + q + `,"timeout_seconds":60,"fail_task_on_error":false}]`
}

// gateTask deploys the env and runs every env gate on it. Spec
// conformance is advisory and tolerant, as in the reference: a server
// that cannot be read for it does not stop the other gates.
// verify_mcp_env_assessment is not run: it grades a model-driven agent's
// use of the tools, and a put has no model.
func gateTask(id string) string {
	q := fmt.Sprintf("%q", id)
	return `[{"id":"env","type":"deploy_env","env_id":` + q + `,"ttl_seconds":600},
	 {"id":"card","type":"verify_env_card","env_id":` + q + `},
	 {"id":"proto","type":"verify_env_core_protocol","env_id":` + q + `},
	 {"id":"tools","type":"verify_mcp_tool_schema","env_id":` + q + `},
	 {"id":"spec","type":"verify_spec_conformance","env_id":` + q + `,"fail_task_on_error":false},
	 {"id":"gate","type":"validation_gate_aggregator","env_id":` + q + `}]`
}

// report reads the gates' verdicts back from the run context; advisory
// gates that ran are listed without deciding Passed.
func report(kind, id string, gates, advisory []string, rc *runner.RunContext) *Report {
	all := rc.Verifications()
	rep := &Report{Kind: kind, ID: id, Passed: true}
	names := append([]string(nil), gates...)
	sort.Strings(names)
	for _, n := range names {
		v, ok := all[n]
		g := Gate{Name: n, Passed: ok && v.Score >= 1, Missing: !ok}
		for _, row := range v.Results {
			if !row.Passed() {
				j, _ := row["justification"].(string)
				g.Problems = append(g.Problems, j)
			}
		}
		rep.Passed = rep.Passed && g.Passed
		rep.Gates = append(rep.Gates, g)
	}
	for _, n := range advisory {
		v, ok := all[n]
		if !ok {
			continue
		}
		g := Gate{Name: n, Passed: v.Score >= 1, Advisory: true, Skipped: len(v.Results) > 0}
		for _, row := range v.Results {
			if s, _ := row["skipped"].(bool); !s {
				g.Skipped = false
			}
			if !row.Passed() {
				j, _ := row["justification"].(string)
				g.Problems = append(g.Problems, j)
			}
		}
		rep.Gates = append(rep.Gates, g)
	}
	return rep
}
