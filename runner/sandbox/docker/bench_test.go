package docker_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// BenchmarkDeployReady measures env deploy → a ready gateway (card lists
// every server) for one and three MCP servers, images already in the
// engine; teardown is not timed. It reports the median and the gateway
// image size.
func BenchmarkDeployReady(b *testing.B) {
	p, err := docker.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.Check(ctx); err != nil {
		b.Skip(err)
	}
	bins := envdeploytest.Build(b)
	st := envdeploytest.NewStores(b)
	put := &envdeploy.Putter{Stores: st, Builder: p, TempDir: b.TempDir()}
	gw, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway})
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, n := range []string{"one", "two", "three"} {
		if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: n, EnvironmentName: n, Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
			b.Fatal(err)
		}
		names = append(names, n)
	}
	if _, err := put.PutMulti(ctx, envdeploy.MultiInput{ID: "three-servers", MCPServers: names}); err != nil {
		b.Fatal(err)
	}
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker"}
	defer func() {
		removeTestImagesB(b, p)
	}()
	// Warm up: the first deploy loads the images from their tarballs.
	for _, id := range []string{"one", "three-servers"} {
		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: id}})
		if err != nil {
			b.Fatal(err)
		}
		_ = d.Teardown(ctx, inst.InstanceID)
	}
	ins, err := p.Client().ImageInspect(ctx, gw.ImageName)
	if err == nil {
		b.Logf("gateway image %s: %.1f MB", gw.ImageName, float64(ins.Size)/1e6)
	}
	for _, c := range []struct {
		name, env string
	}{{"servers=1", "one"}, {"servers=3", "three-servers"}} {
		b.Run(c.name, func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: c.env}})
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
				b.StopTimer()
				if err := d.Teardown(ctx, inst.InstanceID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Milliseconds()), "ms-median")
			if ins.Size > 0 {
				b.ReportMetric(float64(ins.Size)/1e6, "MB-gateway-image")
			}
			b.Logf("%s: n=%d median %s min %s max %s", c.name, len(ds), ds[len(ds)/2], ds[0], ds[len(ds)-1])
		})
	}
}
