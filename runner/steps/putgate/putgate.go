// Package putgate runs the env release gates behind `agent-env env
// mcp-server put --validate`. It registers the env in throwaway stores
// under a temporary folder, deploys it (behind a gateway, or alone with
// the server topology) on the process sandbox, runs verify_env_card,
// verify_env_core_protocol, verify_mcp_tool_schema and
// validation_gate_aggregator, tears everything down and removes the
// folder. The caller's stores are never touched: it puts the env itself
// only when the report passed.
//
//	rep, err := putgate.ValidateMCPServer(ctx, in, nil)
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
	"github.com/agentenv/agentenv/runner/sandbox/process"
	"github.com/agentenv/agentenv/runner/steps"
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

// ErrNeedsBinary: the gates run the env as a local process, so its source
// must be a Go package or a prebuilt binary.
var ErrNeedsBinary = errors.New("--validate runs the env as a local process: give --go-package or --binary")

// Gate is one gate's verdict.
type Gate struct {
	Name     string
	Passed   bool
	Missing  bool // required but never ran
	Problems []string
}

// Report is the outcome of the gates; a failed Report is also the error
// the put returns.
type Report struct {
	EnvID  string
	Passed bool
	Gates  []Gate
}

// Error lists each failed gate with its problems.
func (r *Report) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "env %s failed validation (nothing was stored):", r.EnvID)
	for _, g := range r.Gates {
		switch {
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
		if !g.Passed {
			state = "FAILED"
		}
		fmt.Fprintf(&b, "gate %s: %s", g.Name, state)
	}
	return b.String()
}

// ValidateMCPServer runs the env gates on the env in describes. A non-nil
// error means the gates could not run (bad input, a build or deploy
// failure); a failed gate is a Report with Passed false.
func ValidateMCPServer(ctx context.Context, in envdeploy.MCPServerInput, o *Options) (rep *Report, err error) {
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
	if in.Image.GoPackage == "" && in.Image.Binary == "" {
		return nil, ErrNeedsBinary
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
	put := &envdeploy.Putter{Stores: st, TempDir: filepath.Join(dir, "put")}
	gw := opt.Gateway
	if gw == (envdeploy.ImageInput{}) {
		if gw, err = envdeploy.GatewaySource(ctx); err != nil {
			return nil, err
		}
	}
	if _, err := put.PutGateway(ctx, envdeploy.DefaultGatewayID, gw); err != nil {
		return nil, fmt.Errorf("validate: gateway: %w", err)
	}
	if _, err := put.PutMCPServer(ctx, in); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	pb := process.New(filepath.Join(dir, "proc"), &process.Options{Logger: opt.Logger})
	defer pb.Close()
	dep := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{pb.Type(): pb}, DefaultSandbox: pb.Type(),
		AgentSandbox: pb.Type(), ReadyTimeout: 60 * time.Second}
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.ParseTask("put-validate", 1, []byte(gateTask(in.ID)))
	if err != nil {
		return nil, err
	}
	rc := runner.NewRunContext(nil, &runner.Services{Documents: docs, Objects: objs, Artifacts: arts, Deployer: dep, Logger: opt.Logger})
	defer func() {
		// Teardown on every path, with a context of its own: the run's
		// may be the one that expired.
		tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer tcancel()
		_, _ = r.TeardownRun(tctx, rc, 0)
	}()
	if _, err := r.Run(ctx, task, rc, nil); err != nil {
		return nil, fmt.Errorf("validate env %s: %w", in.ID, err)
	}
	return report(in.ID, rc), nil
}

// gateTask deploys the env and runs every env gate on it.
func gateTask(id string) string {
	q := fmt.Sprintf("%q", id)
	return `[{"id":"env","type":"deploy_env","env_id":` + q + `,"ttl_seconds":600},
	 {"id":"card","type":"verify_env_card","env_id":` + q + `},
	 {"id":"proto","type":"verify_env_core_protocol","env_id":` + q + `},
	 {"id":"tools","type":"verify_mcp_tool_schema","env_id":` + q + `},
	 {"id":"gate","type":"validation_gate_aggregator","env_id":` + q + `}]`
}

// report reads the gates' verdicts back from the run context.
func report(id string, rc *runner.RunContext) *Report {
	all := rc.Verifications()
	rep := &Report{EnvID: id, Passed: true}
	names := append([]string(nil), envgates.DefaultRequiredGates...)
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
	return rep
}
