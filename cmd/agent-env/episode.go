package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
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
	specs := func(ctx context.Context, ref registry.Ref, o *runner.EpisodeOptions) (*runner.EpisodeSpec, error) {
		if err := registry.ValidateID(ref.ID); err != nil {
			return nil, err
		}
		docs := st.docsFor(ref.ID)
		o.Documents, o.Context, o.Logger = docs, initial, d.logger()
		return r.LoadEpisodeSpec(ctx, docs, ref, d.services(ctx, st, ref.ID), o)
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
	fmt.Fprintf(d.stdout, "Episode server listening on http://%s. Press Ctrl-C to stop.\n", ln.Addr())
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
