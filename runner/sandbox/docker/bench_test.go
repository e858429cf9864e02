package docker_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// BenchmarkDeployVsDockerRun measures env deploy → a ready gateway (its
// card lists every server and /step lists their tools) for one and three
// MCP servers, against the floor of the same run: a bare `docker run -d
// -p` of the same echo image, one container per server started together,
// until each card answers 200. Deploys and bare runs alternate (which
// goes first alternates too), images are already in the engine (a
// warm-up deploy loads them), and removal is not timed. It reports the
// medians, their ratio, and where a deploy's time goes, from the debug
// logs of the provider and the deployer. It never fails on timing.
//
//	go test -run '^$' -bench DeployVsDockerRun -benchtime 10x ./runner/sandbox/docker/
func BenchmarkDeployVsDockerRun(b *testing.B) {
	logs := &phaseLog{}
	log := slog.New(logs)
	p, err := docker.New(&docker.Options{Logger: log})
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
	var echoImage string
	for _, n := range []string{"one", "two", "three"} {
		e, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: n, EnvironmentName: n, Image: envdeploy.ImageInput{Binary: bins.Echo}})
		if err != nil {
			b.Fatal(err)
		}
		names = append(names, n)
		if echoImage == "" {
			echoImage = e.ImageName
		}
	}
	if _, err := put.PutMulti(ctx, envdeploy.MultiInput{ID: "three-servers", MCPServers: names}); err != nil {
		b.Fatal(err)
	}
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker", Logger: log}
	defer removeTestImagesB(b, p)
	// Warm up: the first deploy loads the images from their tarballs.
	for _, id := range []string{"one", "three-servers"} {
		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: id}})
		if err != nil {
			b.Fatal(err)
		}
		_ = d.Teardown(ctx, inst.InstanceID)
	}
	if ins, err := p.Client().ImageInspect(ctx, gw.ImageName); err == nil {
		b.Logf("gateway image %s: %.1f MB", gw.ImageName, float64(ins.Size)/1e6)
	}
	for _, c := range []struct {
		name, env string
		servers   int
	}{{"servers=1", "one", 1}, {"servers=3", "three-servers", 3}} {
		b.Run(c.name, func(b *testing.B) {
			var deploys, bares, bareStarts []time.Duration
			logs.reset()
			i := 0
			for b.Loop() {
				deploy := func() {
					start := time.Now()
					inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: c.env}})
					if err != nil {
						b.Fatal(err)
					}
					deploys = append(deploys, time.Since(start))
					if err := d.Teardown(ctx, inst.InstanceID); err != nil {
						b.Fatal(err)
					}
				}
				bare := func() {
					started, ready, err := bareRun(ctx, p, echoImage, c.servers)
					if err != nil {
						b.Fatal(err)
					}
					bareStarts, bares = append(bareStarts, started), append(bares, ready)
				}
				if i%2 == 0 {
					deploy()
					bare()
				} else {
					bare()
					deploy()
				}
				i++
			}
			dm, bm, sm := median(deploys), median(bares), median(bareStarts)
			b.ReportMetric(float64(dm.Milliseconds()), "ms-deploy-median")
			b.ReportMetric(float64(bm.Milliseconds()), "ms-bare-ready-median")
			b.ReportMetric(float64(dm)/float64(bm), "x-bare-ready")
			b.ReportMetric(float64(dm)/float64(sm), "x-bare-started")
			b.Logf("%s, n=%d: deploy median %s (min %s, max %s); bare docker run of %d: started %s, ready %s (min %s, max %s); deploy = %.2fx bare ready, %.2fx bare started",
				c.name, len(deploys), dm, minOf(deploys), maxOf(deploys), c.servers, sm, bm, minOf(bares), maxOf(bares),
				float64(dm)/float64(bm), float64(dm)/float64(sm))
			b.Logf("%s, where a deploy's time goes (medians):\n%s", c.name, logs.summary())
		})
	}
}

// bareRun starts n containers of image the way `docker run -d -p
// 127.0.0.1::18765` does, all at once, and returns when their create and
// start calls have all returned (started) and when every card answers 200
// (ready). The containers carry the project's labels and are removed
// before it returns, untimed.
func bareRun(ctx context.Context, p *docker.Provider, image string, n int) (started, ready time.Duration, err error) {
	cli := p.Client()
	labels := envdeploy.OwnerLabels("bench-bare", false, time.Now().Add(time.Hour))
	port := network.MustParsePort(strconv.Itoa(envdeploy.MCPPort) + "/tcp")
	ids := make([]string, n)
	defer func() {
		for _, id := range ids {
			if id != "" {
				_, _ = cli.ContainerRemove(context.WithoutCancel(ctx), id, client.ContainerRemoveOptions{Force: true})
			}
		}
	}()
	errs := make([]error, n)
	urls := make([]string, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "bare" + strconv.Itoa(i)
			cr, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
				Config: &container.Config{Image: image, Labels: labels, ExposedPorts: network.PortSet{port: {}},
					Env: []string{"MCP_HOST=0.0.0.0", "MCP_PORT=" + strconv.Itoa(envdeploy.MCPPort), "ENVIRONMENT_NAME=" + name}},
				HostConfig: &container.HostConfig{PortBindings: network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}}},
			})
			if err != nil {
				errs[i] = err
				return
			}
			ids[i] = cr.ID
			if _, err := cli.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
				errs[i] = err
				return
			}
			ins, err := cli.ContainerInspect(ctx, cr.ID, client.ContainerInspectOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			for _, b := range ins.Container.NetworkSettings.Ports[port] {
				urls[i] = "http://127.0.0.1:" + b.HostPort + protocol.EnvCardPath
			}
			if urls[i] == "" {
				errs[i] = fmt.Errorf("container %s publishes no port", cr.ID[:12])
			}
		}()
	}
	wg.Wait()
	started = time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, 0, err
		}
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, u := range urls {
		if err := waitOK(ctx, hc, u); err != nil {
			return 0, 0, err
		}
	}
	return started, time.Since(start), nil
}

// waitOK polls u until it answers 200, with the deployer's backoff (from
// 10 ms, doubling to 160 ms), for at most a minute.
func waitOK(ctx context.Context, hc *http.Client, u string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	delay := 10 * time.Millisecond
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", u, ctx.Err())
		case <-time.After(delay):
		}
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func minOf(ds []time.Duration) time.Duration { return sortedAt(ds, 0) }
func maxOf(ds []time.Duration) time.Duration { return sortedAt(ds, len(ds)-1) }

func sortedAt(ds []time.Duration, i int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[i]
}

// phaseLog is a slog.Handler that keeps the durations the provider and
// the deployer log at debug level ("network created", "container
// started", "image loaded", "env deployed"), per message and attribute.
type phaseLog struct {
	mu     sync.Mutex
	phases map[string][]time.Duration
}

func (l *phaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *phaseLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *phaseLog) WithGroup(string) slog.Handler            { return l }

func (l *phaseLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phases == nil {
		l.phases = map[string][]time.Duration{}
	}
	role := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "container" {
			// <group>-<workload>: gateway or a server.
			if strings.HasSuffix(a.Value.String(), "-gateway") {
				role = " (gateway)"
			} else {
				role = " (server)"
			}
		}
		return true
	})
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindDuration {
			k := r.Message + role + ": " + a.Key
			l.phases[k] = append(l.phases[k], a.Value.Duration())
		}
		return true
	})
	return nil
}

func (l *phaseLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phases = nil
}

// summary is one line per phase: its median, range and count.
func (l *phaseLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.phases))
	for k := range l.phases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		ds := l.phases[k]
		fmt.Fprintf(&out, "  %-40s median %8s  range %s–%s  (n=%d)\n", k, median(ds).Round(time.Millisecond),
			minOf(ds).Round(time.Millisecond), maxOf(ds).Round(time.Millisecond), len(ds))
	}
	return out.String()
}
