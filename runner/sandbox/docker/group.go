package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner/envdeploy"
)

// NetworkName is the bridge network of group id.
func NetworkName(id string) string { return "agentenv-" + id }

// Group is one bridge network and its containers.
type Group struct {
	p      *Provider
	id     string
	labels map[string]string

	mu         sync.Mutex
	containers map[string]string // workload name → container id
	terminated bool
	lastExit   time.Time // last Exited check (rate limit)
}

var (
	_ envdeploy.Group          = (*Group)(nil)
	_ envdeploy.AddressPlanner = (*Group)(nil)
)

// CreateGroup implements envdeploy.Backend: it creates the network.
func (p *Provider) CreateGroup(ctx context.Context, s envdeploy.GroupSpec) (envdeploy.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := s.ID
	if id == "" {
		id = "docker-" + randHex(4)
	}
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[envdeploy.LabelSandbox] = id
	if _, ok := labels[envdeploy.LabelInstance]; !ok {
		labels[envdeploy.LabelInstance] = id
	}
	if _, ok := labels[envdeploy.LabelOwner]; !ok {
		maps.Copy(labels, envdeploy.OwnerLabels(labels[envdeploy.LabelInstance], false, time.Time{}))
	}
	if _, ok := labels[envdeploy.LabelStore]; !ok && p.storeID != "" {
		labels[envdeploy.LabelStore] = p.storeID
	}
	// The create runs to its end even when ctx is cancelled meanwhile
	// (Ctrl-C): the engine may create the network after the client gave
	// up, and only a completed call tells us it exists. A cancelled ctx
	// then removes it again.
	cctx, cancel := envdeploy.CleanupContext(ctx)
	start := time.Now()
	_, err := p.cli.NetworkCreate(cctx, NetworkName(id), client.NetworkCreateOptions{Driver: "bridge", Labels: labels})
	cancel()
	if err != nil {
		return nil, p.wrap("create network "+NetworkName(id), err)
	}
	p.log.Debug("network created", "network", NetworkName(id), "took", time.Since(start))
	g := &Group{p: p, id: id, labels: labels, containers: map[string]string{}}
	if err := ctx.Err(); err != nil {
		return nil, g.cleanup(ctx, err)
	}
	return g, nil
}

// cleanup removes the group after ctx ended mid-create, on a fresh bounded
// context, and returns cause (with the removal's failure, if any).
func (g *Group) cleanup(ctx context.Context, cause error) error {
	cctx, cancel := envdeploy.CleanupContext(ctx)
	defer cancel()
	if err := g.Terminate(cctx); err != nil {
		return fmt.Errorf("%w (and removing the partial group %s failed: %v)", cause, g.id, err)
	}
	return cause
}

// OpenGroup implements envdeploy.Backend from the network's labels.
func (p *Provider) OpenGroup(ctx context.Context, id string) (envdeploy.Group, error) {
	nets, err := p.cli.NetworkList(ctx, client.NetworkListOptions{Filters: labelFilter(envdeploy.LabelSandbox, id)})
	if err != nil {
		return nil, p.wrap("list networks", err)
	}
	cs, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(envdeploy.LabelSandbox, id)})
	if err != nil {
		return nil, p.wrap("list containers", err)
	}
	if len(nets.Items) == 0 && len(cs.Items) == 0 {
		return nil, fmt.Errorf("docker group %s: %w", id, envdeploy.ErrNotFound)
	}
	g := &Group{p: p, id: id, containers: map[string]string{}}
	for _, n := range nets.Items {
		g.labels = n.Labels
	}
	for _, c := range cs.Items {
		g.containers[c.Labels[labelWorkload]] = c.ID
	}
	return g, nil
}

const labelWorkload = "agentenv.workload"

// ID implements envdeploy.Group.
func (g *Group) ID() string { return g.id }

// ContainerName is the container of workload name.
func (g *Group) ContainerName(name string) string { return g.id + "-" + name }

// InternalURL implements envdeploy.AddressPlanner: a workload is reached
// inside the group by its network alias, known before it runs.
func (g *Group) InternalURL(w envdeploy.Workload) string {
	if w.Port <= 0 {
		return ""
	}
	return "http://" + w.Name + ":" + strconv.Itoa(w.Port)
}

// Run implements envdeploy.Group. Its steps' durations are logged at
// debug level (image, create, start, published port), which is how
// docs/benchmarks.md splits a deploy.
func (g *Group) Run(ctx context.Context, w envdeploy.Workload) (envdeploy.Endpoint, error) {
	g.mu.Lock()
	if g.terminated {
		g.mu.Unlock()
		return envdeploy.Endpoint{}, fmt.Errorf("docker group %s is terminated", g.id)
	}
	g.mu.Unlock()
	t0 := time.Now()
	if err := g.p.ensureImage(ctx, w.Source); err != nil {
		return envdeploy.Endpoint{}, err
	}
	tImage := time.Now()
	env := maps.Clone(w.Env)
	if env == nil {
		env = map[string]string{}
	}
	if w.PortEnv != "" && w.Port > 0 {
		env[w.PortEnv] = strconv.Itoa(w.Port)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	envList := make([]string, 0, len(keys))
	for _, k := range keys {
		envList = append(envList, k+"="+env[k])
	}
	labels := maps.Clone(g.labels)
	labels[labelWorkload] = w.Name
	if w.Role != "" {
		labels[envdeploy.LabelRole] = w.Role
	}
	cfg := &container.Config{Image: w.Source.Ref, Env: envList, Labels: labels}
	hc := &container.HostConfig{
		ExtraHosts:    []string{"host.docker.internal:host-gateway"},
		RestartPolicy: container.RestartPolicy{Name: "on-failure", MaximumRetryCount: 3},
	}
	var port network.Port
	if w.Port > 0 {
		port = network.MustParsePort(strconv.Itoa(w.Port) + "/tcp")
		cfg.ExposedPorts = network.PortSet{port: {}}
		if w.Publish {
			hc.PortBindings = network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}}
		}
	}
	aliases := append([]string{w.Name}, w.Aliases...)
	nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		NetworkName(g.id): {Aliases: aliases}}}
	// As for the network: the create completes on a fresh context and its
	// result is recorded before ctx is looked at, so a cancel in flight
	// cannot leave a container the group does not know of. The caller's
	// Terminate (every deploy path has one on error) removes it.
	cctx, cancel := envdeploy.CleanupContext(ctx)
	cr, err := g.p.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Name: g.ContainerName(w.Name), Config: cfg, HostConfig: hc, NetworkingConfig: nc})
	cancel()
	if err != nil {
		return envdeploy.Endpoint{}, g.p.wrap("create container "+g.ContainerName(w.Name), err)
	}
	g.mu.Lock()
	g.containers[w.Name] = cr.ID
	g.mu.Unlock()
	tCreate := time.Now()
	if err := ctx.Err(); err != nil {
		return envdeploy.Endpoint{}, err
	}
	for _, other := range w.Join {
		if _, err := g.p.cli.NetworkConnect(ctx, NetworkName(other), client.NetworkConnectOptions{Container: cr.ID,
			EndpointConfig: &network.EndpointSettings{Aliases: aliases}}); err != nil {
			return envdeploy.Endpoint{}, g.p.wrap("connect "+w.Name+" to "+NetworkName(other), err)
		}
	}
	if _, err := g.p.cli.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
		return envdeploy.Endpoint{}, g.p.wrap("start container "+g.ContainerName(w.Name), err)
	}
	tStart := time.Now()
	ep := envdeploy.Endpoint{ID: cr.ID, Internal: g.InternalURL(w)}
	if w.Port > 0 {
		if w.Publish {
			hp, err := g.p.hostPort(ctx, cr.ID, w.Port)
			if err != nil {
				return envdeploy.Endpoint{}, err
			}
			ep.Host = "http://127.0.0.1:" + hp
		}
	}
	g.p.log.Debug("container started", "container", g.ContainerName(w.Name), "image", tImage.Sub(t0),
		"create", tCreate.Sub(tImage), "start", tStart.Sub(tCreate), "port", time.Since(tStart))
	return ep, nil
}

// Exited implements envdeploy.ExitWatcher: a container of the group that
// exited, died or is restarting after a crash (checked at most every
// 400 ms).
func (g *Group) Exited(ctx context.Context) (string, bool) {
	g.mu.Lock()
	if time.Since(g.lastExit) < 400*time.Millisecond {
		g.mu.Unlock()
		return "", false
	}
	g.lastExit = time.Now()
	g.mu.Unlock()
	cs, err := g.p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(envdeploy.LabelSandbox, g.id)})
	if err != nil {
		return "", false
	}
	for _, c := range cs.Items {
		switch c.State {
		case "exited", "dead", "restarting":
			return c.Labels[labelWorkload], true
		}
	}
	return "", false
}

// Logs implements envdeploy.Group.
func (g *Group) Logs(ctx context.Context, name string, lines int) string {
	g.mu.Lock()
	id := g.containers[name]
	g.mu.Unlock()
	if id == "" {
		return ""
	}
	rc, err := g.p.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(lines)})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out strings.Builder
	_, _ = stdcopy.StdCopy(&out, &out, rc)
	return strings.TrimSpace(out.String())
}

// Terminate implements envdeploy.Group: it removes the containers and the
// network carrying the group's label; a second call finds nothing.
func (g *Group) Terminate(ctx context.Context) error {
	g.mu.Lock()
	g.terminated = true
	g.mu.Unlock()
	_, err := g.p.removeLabelled(ctx, envdeploy.LabelSandbox, g.id, nil)
	return err
}

// removeLabelled force-removes every container, then every network,
// carrying key=value ("" value: the key at all) that keep does not keep.
func (p *Provider) removeLabelled(ctx context.Context, key, value string, orphaned func(map[string]string) bool) ([]string, error) {
	var removed []string
	var errs []error
	cs, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(key, value)})
	if err != nil {
		return nil, p.wrap("list containers", err)
	}
	for _, c := range cs.Items {
		if orphaned != nil && !orphaned(c.Labels) {
			continue
		}
		if err := p.removeContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		removed = append(removed, "container "+name)
	}
	nets, err := p.cli.NetworkList(ctx, client.NetworkListOptions{Filters: labelFilter(key, value)})
	if err != nil {
		return removed, errors.Join(append(errs, p.wrap("list networks", err))...)
	}
	for _, n := range nets.Items {
		if orphaned != nil && !orphaned(n.Labels) {
			continue
		}
		// Containers of other groups joined to this network (an agent in
		// an env's network) would keep it alive: disconnect them first.
		if ins, err := p.cli.NetworkInspect(ctx, n.ID, client.NetworkInspectOptions{}); err == nil {
			for cid := range ins.Network.Containers {
				_, _ = p.cli.NetworkDisconnect(ctx, n.ID, client.NetworkDisconnectOptions{Container: cid, Force: true})
			}
		}
		if err := p.removeNetwork(ctx, n.ID); err != nil {
			errs = append(errs, p.wrap("remove network "+n.Name, err))
			continue
		}
		removed = append(removed, "network "+n.Name)
	}
	return removed, errors.Join(errs...)
}

// removeGrace bounds the wait for a removal that another caller (a
// concurrent prune or teardown) has in progress.
const removeGrace = 30 * time.Second

// removeContainer force-removes a container. A container already gone
// counts as removed; so does one whose removal another caller has in
// progress (the engine answers 409 Conflict) once it is gone, which is
// awaited for at most removeGrace.
func (p *Provider) removeContainer(ctx context.Context, id string) error {
	_, err := p.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil || cerrdefs.IsNotFound(err):
		return nil
	case !cerrdefs.IsConflict(err):
		return p.wrap("remove container "+id[:min(12, len(id))], err)
	}
	gone := func(ctx context.Context) (bool, error) {
		_, ierr := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(ierr) {
			return true, nil
		}
		return false, ierr
	}
	if werr := waitUntil(ctx, removeGrace, gone); werr != nil {
		return p.wrap("remove container "+id[:min(12, len(id))], fmt.Errorf("%w (then waiting for it to go: %v)", err, werr))
	}
	return nil
}

// removeNetwork removes a network; gone already is removed. A network
// whose last endpoint is still being removed by another caller refuses
// (active endpoints): it is retried until removed, for at most
// removeGrace.
func (p *Provider) removeNetwork(ctx context.Context, id string) error {
	var last error
	try := func(ctx context.Context) (bool, error) {
		_, err := p.cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || cerrdefs.IsNotFound(err) {
			return true, nil
		}
		last = err
		if cerrdefs.IsConflict(err) || cerrdefs.IsPermissionDenied(err) {
			return false, nil // endpoints still going (403 active endpoints): try again
		}
		return false, err
	}
	if err := waitUntil(ctx, removeGrace, try); err != nil {
		if last != nil && !errors.Is(err, last) {
			return fmt.Errorf("%w (%v)", last, err)
		}
		return err
	}
	return nil
}

// waitUntil calls done every 100 ms until it reports true, returns an
// error, or grace (or ctx) runs out.
func waitUntil(ctx context.Context, grace time.Duration, done func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := done(ctx)
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Prune implements envdeploy.Backend over everything labelled with an
// instance.
//
// A container whose create or start was still in flight in the engine when
// its owner died can appear after the first listing, so Prune lists again
// until a pass removes nothing (at most three passes).
func (p *Provider) Prune(ctx context.Context, orphaned func(map[string]string) bool) ([]string, error) {
	var all []string
	for range 3 {
		removed, err := p.removeLabelled(ctx, envdeploy.LabelInstance, "", orphaned)
		all = append(all, removed...)
		if err != nil || len(removed) == 0 {
			return all, err
		}
	}
	return all, nil
}

// Labelled lists the containers and networks carrying key=value (tests and
// leak checks).
func (p *Provider) Labelled(ctx context.Context, key, value string) ([]string, error) {
	var out []string
	cs, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(key, value)})
	if err != nil {
		return nil, p.wrap("list containers", err)
	}
	for _, c := range cs.Items {
		out = append(out, "container "+strings.TrimPrefix(strings.Join(c.Names, ","), "/"))
	}
	nets, err := p.cli.NetworkList(ctx, client.NetworkListOptions{Filters: labelFilter(key, value)})
	if err != nil {
		return nil, p.wrap("list networks", err)
	}
	for _, n := range nets.Items {
		out = append(out, "network "+n.Name)
	}
	return out, nil
}
