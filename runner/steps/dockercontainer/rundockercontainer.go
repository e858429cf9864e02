package dockercontainer

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// RunType is the run_docker_container step type name.
const RunType = "run_docker_container"

// Defaults of the reference.
const (
	DefaultDockerfilePath = "Dockerfile"
	DefaultContainerName  = "task-container"
	// readyTries × readyEvery bound the wait for ready_command (120 s).
	readyTries = 60
	readyEvery = 2 * time.Second
	// maxContextBytes bounds a downloaded build context.
	maxContextBytes = 512 << 20
)

// RunStepInfo registers run_docker_container.
func RunStepInfo() runner.StepInfo {
	return runner.StepInfo{Type: RunType, New: func() runner.Step { return new(RunConfig) }}
}

// RunConfig is run_docker_container's fields.
type RunConfig struct {
	SandboxName                  string            `json:"sandbox_name"`
	DockerContextArtifactID      string            `json:"docker_context_artifact_id,omitempty"`
	DockerContextArtifactVersion int               `json:"docker_context_artifact_version,omitempty"`
	DockerContextURL             string            `json:"docker_context_url,omitempty"`
	DockerfilePath               string            `json:"dockerfile_path,omitempty"` // Dockerfile
	ContainerName                string            `json:"container_name,omitempty"`  // task-container
	ImageTag                     string            `json:"image_tag,omitempty"`       // scoped <container_name>:latest
	Ports                        []int             `json:"ports,omitempty"`
	EnvVars                      map[string]string `json:"env_vars,omitempty"`
	BuildArgs                    map[string]string `json:"build_args,omitempty"`
	CommandOverride              string            `json:"command_override,omitempty"`
	KeepAliveWithBaseCommand     bool              `json:"keep_alive_with_base_command,omitempty"`
	Network                      string            `json:"network,omitempty"`
	ExtraNetworks                []string          `json:"extra_networks,omitempty"`
	ReadyCommand                 string            `json:"ready_command,omitempty"`
	Devices                      []string          `json:"devices,omitempty"`
	CapAdd                       []string          `json:"cap_add,omitempty"`
	Privileged                   bool              `json:"privileged,omitempty"`
	Volumes                      []string          `json:"volumes,omitempty"`
	ShmSize                      string            `json:"shm_size,omitempty"`
}

var (
	_ runner.Step         = (*RunConfig)(nil)
	_ runner.Validator    = (*RunConfig)(nil)
	_ runner.EntityRefser = (*RunConfig)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *RunConfig) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.ArtifactRef("docker_context_artifact_id", "docker_context_artifact_version")}
}

// builtinNetworks replace or keep the engine's own networking; they are
// used as named, never created.
func builtinNetwork(n string) bool {
	return n == "host" || n == "none" || n == "bridge" || strings.HasPrefix(n, "container:")
}

// Validate implements runner.Validator.
func (c *RunConfig) Validate() error {
	if c.SandboxName == "" {
		return runner.Required("sandbox_name")
	}
	if (c.DockerContextArtifactID == "") == (c.DockerContextURL == "") {
		return runner.Invalid("docker_context_artifact_id", "give exactly one of docker_context_artifact_id and docker_context_url")
	}
	if c.DockerContextURL != "" {
		u, err := url.Parse(c.DockerContextURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return runner.Invalid("docker_context_url", "must be an http(s) URL, got %q", c.DockerContextURL)
		}
		if !strings.HasSuffix(u.Path, ".zip") {
			return runner.Invalid("docker_context_url", "must name a .zip archive (the only format supported), got %q", c.DockerContextURL)
		}
	}
	if c.DockerfilePath != "" && (path.IsAbs(c.DockerfilePath) || strings.Contains("/"+c.DockerfilePath+"/", "/../")) {
		return runner.Invalid("dockerfile_path", "must be a path inside the build context, got %q", c.DockerfilePath)
	}
	if c.ContainerName != "" && !name.MatchString(c.ContainerName) {
		return runner.Invalid("container_name", "must be letters, digits, '_', '.' or '-', got %q", c.ContainerName)
	}
	if c.CommandOverride != "" && c.KeepAliveWithBaseCommand {
		return runner.Invalid("command_override", "give command_override or keep_alive_with_base_command, not both")
	}
	for _, p := range c.Ports {
		if p <= 0 || p > 65535 {
			return runner.Invalid("ports", "port %d out of range", p)
		}
	}
	if c.Network != "" && !builtinNetwork(c.Network) && !name.MatchString(c.Network) {
		return runner.Invalid("network", "invalid network name %q", c.Network)
	}
	for _, n := range c.ExtraNetworks {
		if n == "host" || n == "none" || strings.HasPrefix(n, "container:") {
			return runner.Invalid("extra_networks", "%q replaces the container's network stack; extra networks must be user bridges", n)
		}
		if n != "bridge" && !name.MatchString(n) {
			return runner.Invalid("extra_networks", "invalid network name %q", n)
		}
	}
	for _, v := range c.Volumes {
		if _, err := parseVolume(v); err != nil {
			return runner.Invalid("volumes", "%v", err)
		}
	}
	if c.ShmSize != "" {
		if _, err := parseSize(c.ShmSize); err != nil {
			return runner.Invalid("shm_size", "%v", err)
		}
	}
	for _, d := range c.Devices {
		if !strings.HasPrefix(d, "/") {
			return runner.Invalid("devices", "must be HOST_PATH[:CONTAINER_PATH[:PERMISSIONS]], got %q", d)
		}
	}
	if _, err := splitWords(c.CommandOverride); err != nil {
		return runner.Invalid("command_override", "%v", err)
	}
	return nil
}

// volume is one volumes entry: SRC:DST[:ro|rw].
type volume struct {
	src, dst string
	ro       bool
}

func parseVolume(v string) (volume, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return volume{}, fmt.Errorf("%q: want SOURCE:TARGET[:ro|rw]", v)
	}
	vol := volume{src: parts[0], dst: parts[1]}
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
			vol.ro = true
		case "rw":
		default:
			return volume{}, fmt.Errorf("%q: mode must be ro or rw, got %q", v, parts[2])
		}
	}
	if !path.IsAbs(vol.src) {
		return volume{}, fmt.Errorf("%q: the source must be an absolute path in the sandbox (named volumes would outlive the run)", v)
	}
	if !path.IsAbs(vol.dst) {
		return volume{}, fmt.Errorf("%q: the target must be an absolute path in the container", v)
	}
	return vol, nil
}

// parseSize reads "64m", "1g", "512k" or a byte count.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	num := strings.ToLower(strings.TrimSpace(s))
	num = strings.TrimSuffix(num, "b")
	switch {
	case strings.HasSuffix(num, "k"):
		mult, num = 1<<10, strings.TrimSuffix(num, "k")
	case strings.HasSuffix(num, "m"):
		mult, num = 1<<20, strings.TrimSuffix(num, "m")
	case strings.HasSuffix(num, "g"):
		mult, num = 1<<30, strings.TrimSuffix(num, "g")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a size such as 64m or 1g, got %q", s)
	}
	return n * mult, nil
}

// splitWords splits a command line into words: spaces separate, single
// and double quotes group (no expansions), as a shell would for a plain
// command.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

func (c *RunConfig) containerName() string {
	if c.ContainerName == "" {
		return DefaultContainerName
	}
	return c.ContainerName
}

// Run implements runner.Step.
func (c *RunConfig) Run(ctx context.Context, rc *runner.RunContext) error {
	ds, sb, err := sandboxOf(ctx, rc, c.SandboxName)
	if err != nil {
		return err
	}
	p, err := engineOf(rc.Services())
	if err != nil {
		return err
	}
	if err := p.Check(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	if exists(rc, c.SandboxName, c.containerName()) {
		return fmt.Errorf("container_name %q on sandbox %q: %w", c.containerName(), c.SandboxName, runner.ErrDuplicateName)
	}
	gid := groupID(ds.SandboxID)
	expires := time.Now().Add(7200 * time.Second)
	if t, err := time.Parse("2006-01-02 15:04 UTC", ds.ExpiresAtUTC); err == nil {
		expires = t
	}
	lbl := labels(gid, p.StoreID(), expires)
	lbl[labelContainer] = c.containerName()
	g := &group{p: p, gid: gid}
	// Held before anything exists, so every path after this one (a failed
	// build, a container that never gets ready) is torn down with the run.
	g.hold(rc, ds.SandboxID)

	dir, err := os.MkdirTemp("", "agentenv-docker-context-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := c.stage(ctx, rc, dir); err != nil {
		return err
	}
	dockerfile := c.DockerfilePath
	if dockerfile == "" {
		dockerfile = DefaultDockerfilePath
	}
	if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(dockerfile))); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("dockerfile_path: %s is not a file in the build context", dockerfile)
	}
	tarball, dfName, err := imagebuild.ContextTar(dir, filepath.Join(dir, filepath.FromSlash(dockerfile)))
	if err != nil {
		return err
	}
	defer tarball.Close()
	tag := c.ImageTag
	if tag == "" {
		tag = strings.ToLower(containerName(gid, c.containerName())) + ":latest"
	}
	if err := build(ctx, p, tarball, dfName, tag, lbl, c.BuildArgs); err != nil {
		return err
	}
	engineName := containerName(gid, c.containerName())
	id, tunnels, err := c.start(ctx, p, sb, gid, engineName, tag, lbl)
	if err != nil {
		return err
	}
	if c.ReadyCommand != "" {
		if err := waitReady(ctx, p, id, c.ReadyCommand); err != nil {
			return fmt.Errorf("container %s: %w", c.containerName(), err)
		}
	}
	entry := map[string]any{
		"container_name": c.containerName(), "sandbox_name": c.SandboxName, "sandbox_id": ds.SandboxID,
		"image_tag": tag, "ports": c.Ports, "network": nullable(c.Network),
		// ours: the engine's names, and the host URLs of the ports.
		"docker_container_name": engineName, "container_id": id, "tunnel_urls": tunnels,
	}
	rc.AppendMetadata(KeyDeployedContainers, entry)
	rc.Logger().Info("task container running", "container_name", c.containerName(), "sandbox_name", c.SandboxName, "image", tag)
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// exists reports whether the context already records the container.
func exists(rc *runner.RunContext, sandboxName, containerName string) bool {
	_, err := containerEntry(rc, sandboxName, containerName)
	return err == nil
}

// containerEntry is the deployed_docker_containers entry of a container.
func containerEntry(rc *runner.RunContext, sandboxName, containerName string) (map[string]any, error) {
	v, _ := rc.Metadata(KeyDeployedContainers)
	list, _ := v.([]any)
	var known []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		if m["container_name"] == containerName && m["sandbox_name"] == sandboxName {
			return m, nil
		}
		known = append(known, fmt.Sprintf("%v on %v", m["container_name"], m["sandbox_name"]))
	}
	return nil, &runner.NameError{Kind: "task container", Name: containerName + " on sandbox " + sandboxName, Known: known, Err: runner.ErrUnknownName}
}

// stage writes the build context into dir.
func (c *RunConfig) stage(ctx context.Context, rc *runner.RunContext, dir string) error {
	if c.DockerContextArtifactID != "" {
		arts, err := rc.Services().ArtifactStore()
		if err != nil {
			return err
		}
		ref := registry.Ref{ID: c.DockerContextArtifactID, Version: c.DockerContextArtifactVersion}
		written, err := arts.WriteUniverse(ctx, ref, dir)
		if err != nil {
			return fmt.Errorf("docker_context_artifact_id %s (a file_artifact_universe): %w", c.DockerContextArtifactID, err)
		}
		// Artifacts keep no file modes: every file of the context is
		// staged executable, so a COPY'd binary (a FROM scratch image's
		// program) can run.
		for _, p := range written {
			if err := os.Chmod(p, 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.DockerContextURL, nil)
	if err != nil {
		return fmt.Errorf("docker_context_url: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("docker_context_url: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("docker_context_url: GET answered %s", res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxContextBytes+1))
	if err != nil {
		return fmt.Errorf("docker_context_url: %w", err)
	}
	if len(b) > maxContextBytes {
		return fmt.Errorf("docker_context_url: the archive passes %d bytes", maxContextBytes)
	}
	return unzip(b, dir)
}

// unzip extracts a .zip build context into dir; an entry that would land
// outside dir fails the step.
func unzip(b []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("docker_context_url: not a zip archive: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range zr.File {
		n := path.Clean(strings.TrimPrefix(f.Name, "./"))
		if path.IsAbs(n) || n == ".." || strings.HasPrefix(n, "../") {
			return fmt.Errorf("docker_context_url: the archive entry %q leaves the build context", f.Name)
		}
		if f.FileInfo().IsDir() {
			if err := root.MkdirAll(n, 0o755); err != nil {
				return err
			}
			continue
		}
		if !f.Mode().IsRegular() {
			continue // links and devices are no part of a build context
		}
		if d := path.Dir(n); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := extract(root, f, n); err != nil {
			return err
		}
	}
	return nil
}

func extract(root *os.Root, f *zip.File, n string) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := root.OpenFile(n, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, f.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.LimitReader(r, maxContextBytes)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// hostPather is the local provider's sandbox: its /app is a host folder.
type hostPather interface {
	HostPath(p string) (string, error)
}

// start creates the networks and the container and starts it; it returns
// the container id and the host URL of each published port.
func (c *RunConfig) start(ctx context.Context, p *docker.Provider, sb any, gid, engineName, tag string, lbl map[string]string) (string, map[string]string, error) {
	cli := p.Client()
	cfg := &container.Config{Image: tag, Labels: lbl}
	keys := make([]string, 0, len(c.EnvVars))
	for k := range c.EnvVars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cfg.Env = append(cfg.Env, k+"="+c.EnvVars[k])
	}
	switch {
	case c.CommandOverride != "":
		cfg.Cmd, _ = splitWords(c.CommandOverride)
	case c.KeepAliveWithBaseCommand:
		ins, err := cli.ImageInspect(ctx, tag)
		if err != nil {
			return "", nil, fmt.Errorf("inspect image %s: %w", tag, err)
		}
		var base []string
		if ins.Config != nil {
			base = append(append(base, ins.Config.Entrypoint...), ins.Config.Cmd...)
		}
		// The image's own start command keeps running (a database the
		// task needs), and the shell holds the container open for execs.
		script := "exec sleep infinity"
		if len(base) > 0 {
			quoted := make([]string, len(base))
			for i, a := range base {
				quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
			script = strings.Join(quoted, " ") + " & exec sleep infinity"
		}
		cfg.Entrypoint, cfg.Cmd = []string{"/bin/sh", "-c"}, []string{script}
	}
	hc := &container.HostConfig{ExtraHosts: []string{"host.docker.internal:host-gateway"}, CapAdd: c.CapAdd, Privileged: c.Privileged}
	if c.ShmSize != "" {
		hc.ShmSize, _ = parseSize(c.ShmSize)
	}
	for _, d := range c.Devices {
		parts := strings.SplitN(d, ":", 3)
		m := container.DeviceMapping{PathOnHost: parts[0], PathInContainer: parts[0], CgroupPermissions: "rwm"}
		if len(parts) > 1 {
			m.PathInContainer = parts[1]
		}
		if len(parts) > 2 {
			m.CgroupPermissions = parts[2]
		}
		hc.Devices = append(hc.Devices, m)
	}
	for _, v := range c.Volumes {
		vol, _ := parseVolume(v)
		src := vol.src
		if hp, ok := sb.(hostPather); ok {
			host, err := hp.HostPath(vol.src)
			if err != nil {
				return "", nil, fmt.Errorf("volumes: %w", err)
			}
			if err := os.MkdirAll(host, 0o755); err != nil {
				return "", nil, fmt.Errorf("volumes: %w", err)
			}
			src = host
		}
		bind := src + ":" + vol.dst
		if vol.ro {
			bind += ":ro"
		}
		hc.Binds = append(hc.Binds, bind)
	}
	if len(c.Ports) > 0 {
		cfg.ExposedPorts = network.PortSet{}
		hc.PortBindings = network.PortMap{}
		for _, port := range c.Ports {
			pp := network.MustParsePort(strconv.Itoa(port) + "/tcp")
			cfg.ExposedPorts[pp] = struct{}{}
			hc.PortBindings[pp] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
		}
	}
	primary := docker.NetworkName(gid)
	if c.Network != "" {
		primary = c.engineNetwork(gid, c.Network)
	}
	if !builtinNetwork(primary) {
		if err := ensureNetwork(ctx, p, primary, lbl); err != nil {
			return "", nil, err
		}
	}
	hc.NetworkMode = container.NetworkMode(primary)
	if primary == "host" || primary == "none" || strings.HasPrefix(primary, "container:") {
		hc.ExtraHosts = nil // the engine refuses host entries with another's network stack
	}
	var nc *network.NetworkingConfig
	if !builtinNetwork(primary) {
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{primary: {Aliases: []string{c.containerName()}}}}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	cr, err := cli.ContainerCreate(cctx, client.ContainerCreateOptions{Name: engineName, Config: cfg, HostConfig: hc, NetworkingConfig: nc})
	cancel()
	if err != nil {
		return "", nil, fmt.Errorf("create container %s: %w", engineName, err)
	}
	seen := map[string]bool{primary: true}
	for _, n := range c.ExtraNetworks {
		en := c.engineNetwork(gid, n)
		if seen[en] {
			continue
		}
		seen[en] = true
		if !builtinNetwork(en) {
			if err := ensureNetwork(ctx, p, en, lbl); err != nil {
				return "", nil, err
			}
		}
		if _, err := cli.NetworkConnect(ctx, en, client.NetworkConnectOptions{Container: cr.ID,
			EndpointConfig: &network.EndpointSettings{Aliases: []string{c.containerName()}}}); err != nil {
			return "", nil, fmt.Errorf("connect %s to network %s: %w", c.containerName(), n, err)
		}
	}
	if _, err := cli.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
		return "", nil, fmt.Errorf("start container %s: %w", engineName, err)
	}
	tunnels := map[string]string{}
	if len(c.Ports) > 0 {
		ins, err := cli.ContainerInspect(ctx, cr.ID, client.ContainerInspectOptions{})
		if err != nil {
			return "", nil, fmt.Errorf("inspect container %s: %w", engineName, err)
		}
		for _, port := range c.Ports {
			if ins.Container.NetworkSettings == nil {
				break
			}
			for _, b := range ins.Container.NetworkSettings.Ports[network.MustParsePort(strconv.Itoa(port)+"/tcp")] {
				if b.HostPort != "" {
					tunnels[strconv.Itoa(port)] = "http://127.0.0.1:" + b.HostPort
					break
				}
			}
		}
	}
	return cr.ID, tunnels, nil
}

// engineNetwork is the engine's name of a task's network: builtins as
// they are, user networks scoped by the group so runs never share one.
func (c *RunConfig) engineNetwork(gid, n string) string {
	if builtinNetwork(n) {
		return n
	}
	return "agentenv-" + gid + "-" + n
}

// ensureNetwork creates a labelled bridge network unless it exists (a
// concurrent step may have created it meanwhile).
func ensureNetwork(ctx context.Context, p *docker.Provider, n string, lbl map[string]string) error {
	cli := p.Client()
	if _, err := cli.NetworkInspect(ctx, n, client.NetworkInspectOptions{}); err == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_, err := cli.NetworkCreate(cctx, n, client.NetworkCreateOptions{Driver: "bridge", Labels: lbl})
	if err != nil && !cerrdefs.IsConflict(err) && !cerrdefs.IsAlreadyExists(err) {
		return fmt.Errorf("create network %s: %w", n, err)
	}
	return nil
}

// waitReady runs ready (with the container's /bin/sh) until it succeeds,
// at most readyTries times readyEvery apart.
func waitReady(ctx context.Context, p *docker.Provider, id, ready string) error {
	var last string
	for i := range readyTries {
		if i > 0 {
			t := time.NewTimer(readyEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		res, err := execIn(ctx, p, id, "", nil, []string{"/bin/sh", "-c", ready})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = err.Error()
			continue
		}
		if res.exitCode == 0 {
			return nil
		}
		last = fmt.Sprintf("exit %d: %s", res.exitCode, tail(string(res.stderr)+string(res.stdout), 300))
	}
	return errors.New("failed its readiness check (ready_command) within " + (readyTries * readyEvery).String() + "; last: " + last)
}
