package docker_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// engineProxy forwards the Engine API from a loopback TCP port to the
// local engine's socket and "unplugs the engine" (closes every connection
// and stops answering) at the first request matching cut.
type engineProxy struct {
	srv  *http.Server
	ln   net.Listener
	once sync.Once
	gone chan struct{}
}

func newEngineProxy(t *testing.T, cut func(*http.Request) bool) *engineProxy {
	t.Helper()
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		sock = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		t.Skipf("engine proxy needs a unix socket engine, DOCKER_HOST=%s", h)
	}
	target, _ := url.Parse("http://docker")
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	rp.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := &engineProxy{ln: ln, gone: make(chan struct{})}
	ep.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cut(r) {
			ep.once.Do(func() { close(ep.gone); go ep.srv.Close() })
		}
		select {
		case <-ep.gone:
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
				}
			}
			return
		default:
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = ep.srv.Serve(ln) }()
	t.Cleanup(func() { ep.srv.Close() })
	return ep
}

// An engine that goes away mid-deploy (while the gateway container is
// being created) gives a clear error naming it; once it is back, prune
// removes what the deploy had created.
func TestEngineGoneMidDeploy(t *testing.T) {
	real := engine(t)
	t.Cleanup(func() { real.Close() })
	bins := envdeploytest.Build(t)
	ep := newEngineProxy(t, func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create") &&
			strings.HasSuffix(r.URL.Query().Get("name"), "-gateway")
	})
	p, err := docker.New(&docker.Options{Host: "tcp://" + ep.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st := envdeploytest.NewStores(t)
	put := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		t.Fatal(err)
	}
	if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: "echo", Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTestImages(t, real) })
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker"}
	_, err = d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}})
	if !errors.Is(err, envdeploy.ErrEngineUnavailable) || !strings.Contains(err.Error(), ep.ln.Addr().String()) {
		t.Fatalf("deploy with the engine gone: %v", err)
	}
	me := "pid:" + strconv.Itoa(os.Getpid())
	left, err := real.Labelled(ctx, envdeploy.LabelOwner, me)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Error("nothing was created before the engine went away: the test proves nothing")
	}
	removed, err := real.Prune(ctx, func(l map[string]string) bool { return l[envdeploy.LabelOwner] == me })
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := real.Labelled(ctx, envdeploy.LabelOwner, me); len(after) != 0 {
		t.Errorf("left after prune: %v (before: %v, removed: %v)", after, left, removed)
	}
}
