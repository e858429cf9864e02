package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/bundle"
)

// episodeServeRequest is the flags of `agent-env episode serve`.
type episodeServeRequest struct {
	addr        string
	maxEpisodes int
	sandbox     string
	maxWait     time.Duration
	retention   time.Duration
}

func newEpisodeCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "episode", Short: "Play some of a task's agents from your own loop (trainers)"}
	cmd.AddCommand(newEpisodeServeCmd(d))
	return cmd
}

func newEpisodeServeCmd(d *deps) *cobra.Command {
	var req episodeServeRequest
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve episodes over HTTP until interrupted (docs/episodes.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.maxEpisodes < 1 {
				return fmt.Errorf("--max-episodes must be at least 1, got %d", req.maxEpisodes)
			}
			if req.maxWait <= 0 || req.retention <= 0 {
				return fmt.Errorf("--max-wait and --retention must be positive")
			}
			return serveEpisodes(cmd.Context(), d, req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.addr, "addr", "127.0.0.1:8765", "listen address")
	f.IntVar(&req.maxEpisodes, "max-episodes", 256, "episodes running at once (more are refused with 429)")
	f.StringVar(&req.sandbox, "sandbox", "", "sandbox provider spec for the envs and agents of every episode (e.g. process)")
	f.DurationVar(&req.maxWait, "max-wait", 60*time.Second, "longest long poll")
	f.DurationVar(&req.retention, "retention", 10*time.Minute, "how long an ended episode's result stays readable")
	return cmd
}

// serveEpisodes serves until ctx ends, then abandons every running episode
// and waits for their teardown.
func serveEpisodes(ctx context.Context, d *deps, req episodeServeRequest) error {
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r := runner.New(&runner.Options{Steps: d.steps(), Logger: d.logger()})
	initial := map[string]any{"metadata": map[string]any{}}
	if s := strings.TrimSpace(req.sandbox); s != "" {
		initial["metadata"] = map[string]any{"user_overrides": map[string]any{"env_sandbox": s, "agent_sandbox": s, "sandbox": s}}
	}
	named := &bundleTasks{d: d, st: st, r: r, refs: map[string]registry.Ref{}}
	specs := func(ctx context.Context, ref registry.Ref, o *runner.EpisodeOptions) (*runner.EpisodeSpec, error) {
		if err := registry.ValidateID(ref.ID); err != nil {
			return nil, err
		}
		load := func(ref registry.Ref) (*runner.EpisodeSpec, error) {
			docs := st.docsFor(ref.ID)
			o.Documents, o.Context, o.Logger = docs, initial, d.logger()
			return r.LoadEpisodeSpec(ctx, docs, ref, d.services(ctx, st, ref.ID), o)
		}
		spec, err := load(ref)
		if !errors.Is(err, registry.ErrNotFound) {
			return spec, err
		}
		// Not a stored task: the name of an installed bundle, as `run`
		// takes it (q3-email), is registered on first use.
		bref, ok, berr := named.resolve(ctx, ref.ID)
		if !ok {
			return nil, err
		}
		if berr != nil {
			return nil, berr
		}
		if ref.Version != 0 {
			bref.Version = ref.Version
		}
		return load(bref)
	}
	srv := runner.NewEpisodeServer(specs, &runner.EpisodeServerOptions{MaxEpisodes: req.maxEpisodes, MaxWait: req.maxWait,
		Retention: req.retention, Logger: d.logger()})
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", req.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	printEpisodeRoutes(d, srv, "http://"+ln.Addr().String())
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	live := srv.Live()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 240*time.Second)
	defer cancel()
	cerr := srv.Close(cctx)
	_ = hs.Shutdown(cctx)
	if live > 0 {
		fmt.Fprintf(d.stdout, "Abandoned %d running episode(s).\n", live)
	}
	fmt.Fprintln(d.stdout, "Episode server stopped.")
	return cerr
}

// printEpisodeRoutes says where the server is, what it serves and how to
// start an episode.
func printEpisodeRoutes(d *deps, srv *runner.EpisodeServer, base string) {
	fmt.Fprintf(d.stdout, "Episode server listening on %s. Press Ctrl-C to stop.\n", base)
	fmt.Fprintln(d.stdout, "Routes (docs/episodes.md):")
	for _, rt := range srv.Routes() {
		method := rt.Method
		if method == "" {
			method = "MCP"
		}
		fmt.Fprintf(d.stdout, "  %-4s %-48s %s\n", method, rt.Path, rt.Doc)
	}
	fmt.Fprintf(d.stdout, "Try: curl -s -X POST %s/episodes -d '{\"task_id\":\"q3-email\"}'\n", base)
}

// bundleTasks resolves the names `run` takes for installed bundles
// (q3-email, agentenv-framework/q3-email) to the bundle's task in the
// stores, materialising the bundle on first use. Only installed bundles
// are looked up: a client of the server names no folder of this machine.
type bundleTasks struct {
	d  *deps
	st *storeSet
	r  *runner.Runner

	mu   sync.Mutex
	refs map[string]registry.Ref
}

// resolve returns the task of the installed bundle called name; ok is
// false when no installed bundle has that name.
func (b *bundleTasks) resolve(ctx context.Context, name string) (ref registry.Ref, ok bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ref, ok := b.refs[name]; ok {
		return ref, true, nil
	}
	all, err := bundle.Installed(b.d.bundles)
	if err != nil {
		return registry.Ref{}, false, nil
	}
	var found *bundle.Bundle
	for _, bd := range all {
		if bd.Name == name || bd.Package+"/"+bd.Name == name {
			found = bd
			break
		}
	}
	if found == nil {
		return registry.Ref{}, false, nil
	}
	m, err := bundle.Materialise(ctx, found, b.st.bundleStores(), b.r.Steps(), b.d.stdout, nil)
	if err != nil {
		return registry.Ref{}, true, fmt.Errorf("bundle %s: %w", name, err)
	}
	var task *bundle.Task
	for i := range m.Tasks {
		if len(m.Tasks) == 1 || m.Tasks[i].Name == found.Name {
			task = &m.Tasks[i]
			break
		}
	}
	if task == nil {
		names := make([]string, 0, len(m.Tasks))
		for _, t := range m.Tasks {
			names = append(names, t.Entity.ID)
		}
		return registry.Ref{}, true, fmt.Errorf("%w: bundle %s has %d tasks; start one by id: %s",
			runner.ErrEpisodeSpec, name, len(m.Tasks), strings.Join(names, ", "))
	}
	ref = registry.Ref{ID: task.Entity.ID, Version: task.Entity.Version}
	b.refs[name] = ref
	return ref, true, nil
}
