package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// newEnvWebsiteCmds are `env website put` and `env website-browser put`.
func newEnvWebsiteCmds(d *deps) []*cobra.Command {
	web := &cobra.Command{Use: "website", Short: "Website envs: an HTTP app a multi env lists in website_envs"}
	web.AddCommand(newEnvWebsitePutCmd(d))
	browser := &cobra.Command{Use: "website-browser", Short: "The browser env: headless Chromium for the gateway's computer-use tools"}
	browser.AddCommand(newEnvWebsiteBrowserPutCmd(d))
	return []*cobra.Command{web, browser}
}

func newEnvWebsitePutCmd(d *deps) *cobra.Command {
	var img imageFlags
	var in envdeploy.WebsiteInput
	var readySeconds int
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Build and register a website env (an HTTP app listening on $MCP_HOST:$PORT)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.Image = img.in
			if readySeconds < 0 || readySeconds > 3600 {
				return &registry.InvalidError{Field: "ready-timeout-seconds", Reason: "must be between 1 and 3600"}
			}
			in.ReadyTimeout = time.Duration(readySeconds) * time.Second
			return d.withEnvSession(cmd.Context(), in.ID, func(ctx context.Context, s *envSession) error {
				_, err := s.put.PutWebsite(ctx, in)
				return err
			})
		},
	}
	img.add(cmd)
	f := cmd.Flags()
	idArg(cmd, &in.ID, idSpec{noun: "env", complete: d.completeDocs(registry.Envs)})
	f.StringVar(&in.EnvironmentName, "environment-name", "", "the website's name: its network alias and /website/<name> on the gateway (required)")
	f.IntVar(&readySeconds, "ready-timeout-seconds", 60, "deploy fails, naming the website, when GET / does not answer below 500 within this")
	f.StringVar(&in.Description, "description", "", "description")
	return cmd
}

func newEnvWebsiteBrowserPutCmd(d *deps) *cobra.Command {
	var img imageFlags
	var in envdeploy.BrowserInput
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Register the browser env (default: agentenv-browser built from this source tree, running the host's chromium)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			in.Image = img.in
			return d.withEnvSession(cmd.Context(), in.ID, func(ctx context.Context, s *envSession) error {
				_, err := s.put.PutWebsiteBrowser(ctx, in)
				return err
			})
		},
	}
	img.add(cmd)
	idArg(cmd, &in.ID, idSpec{noun: "env", optional: true, def: envdeploy.BrowserName, complete: d.completeDocs(registry.Envs)})
	cmd.Flags().BoolVar(&in.HostClosure, "host-closure", false, "put this host's Chromium (/usr/lib/chromium), its NSS modules, fonts and library closure into the image (Docker without pulls)")
	return cmd
}
