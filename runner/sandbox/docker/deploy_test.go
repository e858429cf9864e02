package docker_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// TestDeployConcurrentStartFailure: the servers and the gateway of a
// deploy start together on Docker; when one fails after the others have
// started, the deploy returns its error and removes every container and
// the network. The failing workload waits for the gateway's start too,
// so a deployer that started the gateway only after every server would
// end on the timeout instead of the planted error.
func TestDeployConcurrentStartFailure(t *testing.T) {
	p := engine(t)
	t.Cleanup(func() {
		removeTestImages(t, p)
		p.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	put := &envdeploy.Putter{Stores: st, Builder: p, TempDir: t.TempDir()}
	if _, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"good", "bad"} {
		if _, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: n, EnvironmentName: n, Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := put.PutMulti(ctx, envdeploy.MultiInput{ID: "good-and-bad", MCPServers: []string{"good", "bad"}}); err != nil {
		t.Fatal(err)
	}
	b := &lateFailure{Provider: p, fail: "bad", others: 2} // good and the gateway
	storeID := "late" + strconv.FormatInt(time.Now().UnixNano(), 36)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": b}, DefaultSandbox: "docker",
		StoreID: storeID, ReadyTimeout: 60 * time.Second}
	_, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "good-and-bad"}})
	if !errors.Is(err, errLate) {
		t.Fatalf("deploy: %v, want the planted failure", err)
	}
	if b.started == 0 {
		t.Errorf("no other workload had started when bad failed")
	}
	left, lerr := p.Labelled(context.Background(), envdeploy.LabelStore, storeID)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(left) > 0 {
		t.Errorf("the failed deploy left %v", left)
	}
}

var errLate = errors.New("failing on purpose once the others started")

// lateFailure is the Docker backend, except that the workload named fail
// fails once the other workloads of its group have started.
type lateFailure struct {
	*docker.Provider
	fail    string
	others  int
	started int // workloads started before fail failed
}

func (b *lateFailure) CreateGroup(ctx context.Context, s envdeploy.GroupSpec) (envdeploy.Group, error) {
	g, err := b.Provider.CreateGroup(ctx, s)
	if err != nil {
		return nil, err
	}
	return &lateFailGroup{Group: g.(*docker.Group), b: b, started: make(chan struct{}, b.others)}, nil
}

// lateFailGroup embeds *docker.Group, so it plans addresses as Docker
// does (envdeploy.AddressPlanner) and removes what it started.
type lateFailGroup struct {
	*docker.Group
	b       *lateFailure
	started chan struct{}
}

func (g *lateFailGroup) Run(ctx context.Context, w envdeploy.Workload) (envdeploy.Endpoint, error) {
	if w.Name != g.b.fail {
		ep, err := g.Group.Run(ctx, w)
		if err == nil {
			g.started <- struct{}{}
		}
		return ep, err
	}
	for range g.b.others {
		select {
		case <-g.started:
			g.b.started++
		case <-ctx.Done():
			return envdeploy.Endpoint{}, ctx.Err()
		}
	}
	return envdeploy.Endpoint{}, errLate
}
