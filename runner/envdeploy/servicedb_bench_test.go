package envdeploy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

// BenchmarkServiceDBDeploy deploys and tears down a service_db env on the
// process provider: ms from Deploy to a ready gateway (the database
// initialised and accepting sessions, the db MCP server's tools listed),
// and the resident memory of the instance's processes right after,
// split into PostgreSQL (postmaster and its helpers), the db MCP server
// and the gateway.
func BenchmarkServiceDBDeploy(b *testing.B) {
	pgservertest.Need(b)
	bins := envdeploytest.Build(b)
	st := envdeploytest.NewStores(b)
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st}
	if _, err := p.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		b.Fatal(err)
	}
	if _, err := p.PutServiceDB(ctx, envdeploy.ServiceDBInput{ID: "shop", DBMCP: envdeploy.ImageInput{Binary: bins.DBEnv},
		DB: envdeploy.ImageInput{Binary: bins.Postgres}}); err != nil {
		b.Fatal(err)
	}
	proc := process.New(b.TempDir(), nil)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"process": proc}, ReadyTimeout: 120 * time.Second}
	var deploy time.Duration
	rss := map[string]int64{}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "shop"}, Sandbox: "process"})
		if err != nil {
			b.Fatal(err)
		}
		deploy += time.Since(t0)
		for k, v := range groupRSS(inst.SandboxID) {
			rss[k] += v
		}
		if err := d.Teardown(ctx, inst.InstanceID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(deploy.Milliseconds())/float64(b.N), "ms/deploy")
	for k, v := range rss {
		b.ReportMetric(float64(v)/float64(b.N)/1024, "MiB-rss-"+k)
	}
}

// groupRSS sums VmRSS (KiB) of the processes started in process group
// (sandbox) id, found by the marker variable every workload inherits, by
// kind: postgres, db-env (the db MCP server) and gateway.
func groupRSS(id string) map[string]int64 {
	out := map[string]int64{}
	marker := []byte(process.EnvMarker + "=" + id + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(env, marker) {
			continue
		}
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			continue
		}
		var name string
		var kb int64
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Name:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			}
		}
		switch {
		case name == "postgres" || strings.HasSuffix(name, "-postgres.bin") || strings.HasPrefix(name, "db-postgres"):
			out["postgres"] += kb
		case strings.HasPrefix(name, "gateway"):
			out["gateway"] += kb
		default:
			out["dbserver"] += kb
		}
	}
	return out
}
