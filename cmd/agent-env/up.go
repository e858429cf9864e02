package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/explorer"
)

// upRequest is `agent-env up`'s flags.
type upRequest struct {
	addr, token        string
	open, allowControl bool
	noGateway          bool
}

// explorerTokenEnv is the environment variable that configures the token
// when --token is not given.
const explorerTokenEnv = "AGENT_ENV_EXPLORER_TOKEN"

func newUpCmd(d *deps) *cobra.Command {
	req := upRequest{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Serve the explorer: a web UI for runs, trajectories, evals and the registry",
		Long: "Serve the explorer for the configured stores until interrupted.\n\n" +
			"It binds 127.0.0.1 by default. Another address needs a token (--token or " + explorerTokenEnv + "),\n" +
			"which every request must then carry: an Authorization: Bearer header, or the link printed at start.\n" +
			"The default gateway env (envs/default) is registered in the background when it is missing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.token == "" {
				req.token = d.getenv(explorerTokenEnv)
			}
			return runUp(cmd.Context(), d, req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.addr, "addr", "127.0.0.1:8765", "listen address (a non-loopback one requires --token)")
	f.StringVar(&req.token, "token", "", "token every request must carry (default $"+explorerTokenEnv+")")
	f.BoolVar(&req.open, "open", false, "open the explorer in the browser")
	f.BoolVar(&req.allowControl, "allow-control", false, "enable the buttons that change live env instances")
	f.BoolVar(&req.noGateway, "no-gateway", false, "do not register the default gateway env when it is missing")
	return cmd
}

// loopback reports whether addr's host only accepts local connections.
func loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, &registry.InvalidError{Field: "--addr", Value: addr, Reason: "must be host:port, such as 127.0.0.1:8765"}
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

func runUp(ctx context.Context, d *deps, req upRequest) error {
	local, err := loopback(req.addr)
	if err != nil {
		return err
	}
	if !local && req.token == "" {
		return fmt.Errorf("--addr %s accepts connections from other machines: give --token (or set %s) so that every request must carry it", req.addr, explorerTokenEnv)
	}
	st, err := d.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := explorer.New(&explorer.Stores{Documents: st.Documents, Local: st.Local, Objects: st.Objects},
		&explorer.Options{Token: req.token, AllowControl: req.allowControl, Logger: d.logger(), PluginPages: plugin.ExplorerPages(d.pluginRegistry())})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", req.addr)
	if err != nil {
		return fmt.Errorf("explorer: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	link := "http://" + ln.Addr().String() + "/"
	if req.token != "" {
		link += "?token=" + url.QueryEscape(req.token)
	}
	fmt.Fprintf(d.stdout, "Explorer on %s (Ctrl-C stops it)\n", link)
	if req.open {
		if err := openBrowser(link); err != nil {
			fmt.Fprintf(d.stderr, "Could not open a browser (%v): open the link above.\n", err)
		}
	}
	regDone := make(chan struct{})
	regCtx, stopReg := context.WithCancel(ctx)
	go func() {
		defer close(regDone)
		if !req.noGateway {
			d.ensureGateway(regCtx, st)
		}
	}()

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	stopReg()
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	serr := hs.Shutdown(shut)
	<-regDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("explorer: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("explorer: shutdown: %w", serr)
	}
	fmt.Fprintln(d.stdout, "Explorer stopped.")
	return nil
}

// ensureGateway registers the default gateway env when the configured
// store has none, as the reference's `up` does (it can take minutes: the
// image is built). A failure is reported, the explorer keeps serving.
func (d *deps) ensureGateway(ctx context.Context, st *storeSet) {
	_, err := st.Documents.Get(ctx, registry.Envs, registry.Ref{ID: envdeploy.DefaultGatewayID})
	if !errors.Is(err, registry.ErrNotFound) {
		return
	}
	cfg, err := d.loadConfig()
	if err != nil {
		fmt.Fprintf(d.stderr, "Default gateway env not registered: %v\n", err)
		return
	}
	fmt.Fprintln(d.stdout, "Registering the default gateway env (envs/default) in the background...")
	dep, _, dp, _ := d.envDeployer(cfg, st, envdeploy.DefaultGatewayID, false)
	if dp != nil {
		defer dp.Close()
	}
	if _, err := dep.Gateway(ctx); err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(d.stderr, "Default gateway env not registered: %v\n", err)
		}
		return
	}
	fmt.Fprintln(d.stdout, "Registered the default gateway env (envs/default).")
}

func openBrowser(link string) error {
	cmd := exec.Command("xdg-open", link)
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", link)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it
	return nil
}
