package docker_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// BenchmarkServiceDBDeployDocker deploys and tears down a service_db env
// on Docker with the host-closure PostgreSQL image: ms from Deploy to a
// ready gateway (initdb in the container, postgres accepting sessions,
// the db MCP server's tools listed), and the summed VmRSS of each
// container's processes right after, by workload (postgres, db, gateway).
// A warm-up deploy, reported apart, loads the images into the engine.
//
//	go test -run '^$' -bench ServiceDBDeployDocker -benchtime 3x ./runner/sandbox/docker/
func BenchmarkServiceDBDeployDocker(b *testing.B) {
	pgservertest.Need(b)
	p := engine(b)
	defer p.Close()
	defer removeTestImagesB(b, p)
	ctx := context.Background()
	bins := envdeploytest.Build(b)
	st := envdeploytest.NewStores(b)
	put := &envdeploy.Putter{Stores: st, Builder: p, TempDir: b.TempDir()}
	if _, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		b.Fatal(err)
	}
	e, err := put.PutServiceDB(ctx, envdeploy.ServiceDBInput{ID: "shop", DBMCP: envdeploy.ImageInput{Binary: bins.DBEnv},
		DB: envdeploy.ImageInput{Binary: bins.Postgres}, DBHostClosure: true})
	if err != nil {
		b.Fatal(err)
	}
	if ins, err := p.Client().ImageInspect(ctx, e.DBImageName); err == nil {
		b.Logf("database image: %.1f MB", float64(ins.Size)/1e6)
	}
	storeID := "sdbb" + strconv.FormatInt(time.Now().UnixNano(), 36)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker",
		StoreID: storeID, ReadyTimeout: 300 * time.Second}
	deploy := func() (*envdeploy.EnvInstance, time.Duration) {
		t0 := time.Now()
		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "shop"}})
		if err != nil {
			b.Fatal(err)
		}
		return inst, time.Since(t0)
	}
	inst, warm := deploy()
	_ = d.Teardown(ctx, inst.InstanceID)
	var total time.Duration
	rss := map[string]int64{}
	b.ResetTimer()
	for range b.N {
		inst, took := deploy()
		total += took
		for k, v := range containerRSS(ctx, b, p.Client(), storeID) {
			rss[k] += v
		}
		if err := d.Teardown(ctx, inst.InstanceID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(warm.Milliseconds()), "ms/first-deploy")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
	for k, v := range rss {
		b.ReportMetric(float64(v)/float64(b.N)/1024, "MiB-rss-"+k)
	}
}

// containerRSS sums VmRSS (KiB) of the processes of each container of
// store, by the workload suffix of its name (db-postgres, db, gateway),
// finding them by the container id in their cgroup paths.
func containerRSS(ctx context.Context, b *testing.B, cli *client.Client, store string) map[string]int64 {
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", envdeploy.LabelStore+"="+store)})
	if err != nil {
		b.Fatal(err)
	}
	kind := map[string]string{}
	for _, c := range cs.Items {
		name := strings.TrimPrefix(strings.Join(c.Names, ","), "/")
		switch {
		case strings.HasSuffix(name, "-postgres"):
			kind[c.ID] = "postgres"
		case strings.HasSuffix(name, "-gateway"):
			kind[c.ID] = "gateway"
		default:
			kind[c.ID] = "db-mcp"
		}
	}
	out := map[string]int64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
		if err != nil {
			continue
		}
		for id, k := range kind {
			if !bytes.Contains(cg, []byte(id)) {
				continue
			}
			out[k] += vmRSS(filepath.Join(dir, "status"))
			break
		}
	}
	return out
}

func vmRSS(status string) int64 {
	f, err := os.Open(status)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
