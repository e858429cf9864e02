package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
	"github.com/agentenv/agentenv/runner/sandbox/local"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

type runRequest struct {
	tasks, evals []string
	model        string
	sandbox      *sandboxFlags
	keep, dryRun bool
	failUnder    *failUnder
	out          *outputFlag
}

func newRunCmd(d *deps) *cobra.Command {
	var req runRequest
	cmd := &cobra.Command{
		Use:   "run [BUNDLE]",
		Short: "Run a bundle's tasks (try: agent-env run hello)",
		Long: "Run the tasks of a bundle: an installed bundle name (hello) or a folder with\n" +
			"tasks/<name>.json and artifacts/<name>/ subfolders. Its contents are stored under\n" +
			"@local/... ids first (an unchanged file keeps its version), every task runs, and every\n" +
			"sandbox is torn down at the end. Without an argument, list the installed bundles.",
		Example: "  agent-env run hello\n" +
			"  agent-env run                       # list the installed bundles and their folders\n" +
			"  agent-env run ./my-bundle --task hello\n" +
			"  agent-env run hello --json          # a JSON report on stdout for scripts",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listBundles(d, req.out)
			}
			return runBundle(cmd.Context(), d, args[0], req)
		},
	}
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return d.completeBundles(cmd.Context(), toComplete), cobra.ShellCompDirectiveDefault // or a folder
	}
	f := cmd.Flags()
	f.StringArrayVar(&req.tasks, "task", nil, "run only this task (repeatable)")
	f.StringArrayVar(&req.evals, "eval", nil, "run only this eval (repeatable)")
	f.StringVar(&req.model, "model", "", "agent model for this run")
	f.StringVar(&req.model, "agent-model", "", "alias of --model")
	req.sandbox = addSandboxFlags(cmd, "envs, agents and sandboxes")
	req.failUnder = addFailUnder(cmd)
	f.BoolVar(&req.keep, "keep", false, "keep the sandboxes and wait for Ctrl-C instead of tearing down")
	f.BoolVar(&req.dryRun, "dry-run", false, "check and print what would be written and run, writing nothing")
	req.out = addOutputFlag(cmd, formatTable)
	return cmd
}

func listBundles(d *deps, out *outputFlag) error {
	all, err := bundle.Installed(d.bundles)
	if err != nil {
		return err
	}
	// The installed bundles are embedded; export them under the state root
	// so that each row names a folder the user can copy.
	if root, err := registry.StateRoot(); err == nil {
		dir := filepath.Join(root, "bundles")
		if err := bundle.Export(d.bundles, dir); err == nil {
			for _, b := range all {
				b.Dir = filepath.Join(dir, b.Package, b.Name)
			}
		} else {
			d.logger().Warn("could not export the installed bundles", "dir", dir, "error", err)
		}
	}
	type row struct {
		Name        string `json:"name"`
		Package     string `json:"package"`
		Contents    string `json:"contents"`
		Description string `json:"description"`
		Dir         string `json:"dir"`
	}
	rows := make([]row, 0, len(all))
	for _, b := range all {
		rows = append(rows, row{b.Name, b.Package, b.Contents(), b.Description, b.Dir})
	}
	return out.print(d.stdout, rows, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPACKAGE\tCONTENTS\tDESCRIPTION")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Package, r.Contents, r.Description)
			fmt.Fprintf(tw, "  %s\t\t\t\n", r.Dir)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w, "Run one with agent-env run NAME. To change one, copy its folder and run the copy.")
		return err
	})
}

func runBundle(ctx context.Context, d *deps, arg string, req runRequest) error {
	if len(req.evals) > 0 && len(req.tasks) > 0 {
		return errors.New("--task and --eval exclude each other: select tasks or evals")
	}
	if req.out.structured() && (req.keep || req.dryRun) {
		return errors.New("--json cannot be combined with --keep or --dry-run")
	}
	b, err := bundle.Locate(arg, d.bundles)
	if err != nil {
		return err
	}
	firstUse := d.stateMissing()
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if firstUse {
		w := d.stdout
		if req.out.structured() {
			w = d.stderr
		}
		d.printStateHome(w)
	}
	r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
	bst := st.bundleStores()
	if req.dryRun {
		var lines strings.Builder
		m, err := bundle.Materialise(ctx, b, bst, r.Steps(), &lines, &bundle.MaterialiseOptions{DryRun: true})
		if err != nil {
			return err
		}
		fmt.Fprintln(d.stdout, "Store refs:")
		for _, e := range append(append(append([]bundle.Entity{}, m.Artifacts...), taskEntities(m)...), evalEntities(m)...) {
			fmt.Fprintf(d.stdout, "  %s -> %s:%d (%s)\n", e.Path, e.ID, e.Version, e.Status)
		}
		fmt.Fprintln(d.stdout, "Would run:")
		if runsEvals(m, req) { // runevals.go
			return printEvalsDryRun(d, m, req)
		}
		for _, t := range m.Tasks {
			if len(req.tasks) == 0 || contains(req.tasks, t.Name) {
				fmt.Fprintf(d.stdout, "  %s (%d steps)\n", t.File, len(t.Task.Steps))
			}
		}
		return nil
	}
	lines := d.stdout
	if req.out.structured() {
		lines = d.stderr
	}
	m, err := bundle.Materialise(ctx, b, bst, r.Steps(), lines, nil)
	if err != nil {
		return err
	}
	if runsEvals(m, req) { // runevals.go
		return runBundleEvals(ctx, d, r, st, m, req, lines)
	}
	prog := d.newProgress() // a spinner for long steps, on a terminal only (progress.go)
	defer prog.Close()
	rep, err := bundle.Run(ctx, r, d.services(ctx, st, registry.LocalPrefix), m, &bundle.RunOptions{
		Tasks: req.tasks, Model: req.model, Sandbox: sandboxSpec(req.sandbox.both), Keep: req.keep,
		EnvSandbox: sandboxSpec(req.sandbox.env), AgentSandbox: sandboxSpec(req.sandbox.agent),
		Documents: st.Local, Out: prog.Writer(lines),
		OnStepStart: func(file string, i, n int, sd *runner.StepDef) {
			prog.Start(file+"|"+sd.ID, fmt.Sprintf("[%s] step %d/%d %s (%s)", file, i+1, n, sd.ID, sd.Type))
		},
		OnStepComplete: func(file string, _, _ int, sd *runner.StepDef, _ float64, _ error) { prog.Done(file + "|" + sd.ID) },
	})
	prog.Close()
	if err != nil {
		return err
	}
	var scores []float64
	for _, rc := range rep.Contexts() {
		scores = append(scores, runScore(rc))
	}
	if req.out.structured() && !req.keep {
		if err := printJSON(d, runReportJSON(m, rep)); err != nil {
			return err
		}
	}
	if req.keep && ctx.Err() == nil {
		printKept(d, rep)
		<-ctx.Done()
		n, terr := rep.Teardown(context.WithoutCancel(ctx))
		fmt.Fprintf(d.stdout, "Tore down %d %s.\n", n, plural(n, "sandbox", "sandboxes"))
		if terr != nil {
			return terr
		}
		if !rep.Failed() {
			return nil
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if rep.Failed() {
		return errSilent
	}
	return req.failUnder.check(mean(scores))
}

// stateMissing reports whether the state root does not exist yet: the
// first command to use it says where it is.
func (d *deps) stateMissing() bool {
	root, err := registry.StateRoot()
	if err != nil {
		return false
	}
	_, err = os.Stat(root)
	return errors.Is(err, fs.ErrNotExist)
}

// printStateHome says where a first run keeps its state.
func (d *deps) printStateHome(w io.Writer) {
	root, err := registry.StateRoot()
	if err != nil {
		return
	}
	fmt.Fprintf(w, "First run: stored tasks, artifacts and run records live in %s;\n", root)
	fmt.Fprintf(w, "  task sandboxes (work folders) in %s. agent-env config show lists every setting.\n", d.sandboxRoot())
}

// printKept lists what --keep left running: every env, agent and sandbox
// the runs hold, each with where it lives (folder or containers) and the
// command that tears down that one alone.
func printKept(d *deps, rep *bundle.Report) {
	fmt.Fprintln(d.stdout, "Kept:")
	for _, rc := range rep.Contexts() {
		envs, agents, boxes := map[string]string{}, map[string]string{}, map[string]runner.DeployedSandbox{}
		for _, e := range rc.Envs() {
			envs[e.SandboxID] = e.EnvID
		}
		for _, a := range rc.Agents() {
			agents[a.SandboxID] = a.AgentName
		}
		for _, s := range rc.Sandboxes() {
			boxes[s.SandboxID] = s
		}
		for _, sb := range rc.Held() {
			id, typ := sb.ID(), sb.Type()
			if is, ok := sb.(*runner.InstanceSandbox); ok {
				name, cmd := envs[id], "agent-env env teardown "+is.InstanceID
				if is.Kind == "agent" {
					name, cmd = agents[id], "agent-env a2a-agent teardown "+is.InstanceID
				}
				fmt.Fprintf(d.stdout, "  %s %s: instance %s on %s, %s\n", is.Kind, name, is.InstanceID, typ, d.groupPlace(typ, id))
				fmt.Fprintf(d.stdout, "    teardown: %s\n", cmd)
				continue
			}
			s := boxes[id]
			switch b := sb.(type) {
			case *local.Sandbox:
				fmt.Fprintf(d.stdout, "  sandbox %s: %s (%s), folder %s\n", s.SandboxName, id, typ, b.Dir())
				fmt.Fprintf(d.stdout, "    teardown: rm -rf %s\n", b.Dir())
			case *docker.Sandbox:
				fmt.Fprintf(d.stdout, "  sandbox %s: %s (%s), container %s\n", s.SandboxName, id, typ, b.ContainerName())
				fmt.Fprintf(d.stdout, "    teardown: docker rm -f %s && docker network rm %s\n", b.ContainerName(), docker.NetworkName(id))
			default:
				fmt.Fprintf(d.stdout, "  sandbox %s: %s (%s)\n", s.SandboxName, id, typ)
				fmt.Fprintf(d.stdout, "    teardown: agent-env sandbox prune (once this run has ended)\n")
			}
			ports := make([]string, 0, len(s.TunnelURLs))
			for p := range s.TunnelURLs {
				ports = append(ports, p)
			}
			sort.Strings(ports)
			for _, p := range ports {
				fmt.Fprintf(d.stdout, "    port %s: %s\n", p, s.TunnelURLs[p])
			}
		}
	}
	fmt.Fprintln(d.stdout, "Press Ctrl-C to tear down.")
}

// groupPlace says where an env or agent group of a backend lives.
func (d *deps) groupPlace(typ, id string) string {
	switch typ {
	case docker.TypeName, "local":
		return "network " + docker.NetworkName(id) + ", containers labelled " + envdeploy.LabelSandbox + "=" + id
	case process.TypeName:
		return "folder " + process.New(d.processRoot(), nil).GroupDir(id)
	case kubernetes.TypeName:
		return "pods, services and secrets labelled " + kubernetes.LabelSandbox + "=" + id
	}
	return "group " + id
}

func taskEntities(m *bundle.Materialised) []bundle.Entity {
	out := make([]bundle.Entity, 0, len(m.Tasks))
	for _, t := range m.Tasks {
		out = append(out, t.Entity)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if strings.TrimSuffix(strings.TrimPrefix(e, "tasks/"), ".json") == s {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
