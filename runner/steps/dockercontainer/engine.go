package dockercontainer

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/docker"
)

// KeyDeployedContainers is the metadata list run_docker_container appends to.
const KeyDeployedContainers = "deployed_docker_containers"

// labelContainer names the task's container (container_name) on the
// engine object, for leak checks and messages.
const labelContainer = "agentenv.task_container"

// ErrNoEngine is matched when the run has no Docker engine to build on.
var ErrNoEngine = errors.New("no Docker engine")

// name is a container, image or network name part: what the engine takes.
var name = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// engineOf finds the local engine among the run's sandbox providers.
func engineOf(svc *runner.Services) (*docker.Provider, error) {
	keys := make([]string, 0, len(svc.Sandboxes))
	for k := range svc.Sandboxes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p, ok := svc.Sandboxes[k].(*docker.Provider); ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: the run's sandbox providers (%s) include no Docker engine to build and run containers on", ErrNoEngine, strings.Join(keys, ", "))
}

// groupID is the id every engine object of a sandbox's task containers is
// labelled with.
func groupID(sandboxID string) string { return sandboxID + "-containers" }

// containerName is the engine name of a task container.
func containerName(gid, name string) string { return gid + "-" + name }

// labels are the labels of the group's objects. storeID is the store the
// run's engine provider was made for: with it, `sandbox prune` (scoped to
// a store) reclaims a killed run's task containers and never another
// store's.
func labels(gid, storeID string, expires time.Time) map[string]string {
	l := envdeploy.OwnerLabels(gid, false, expires)
	if storeID != "" {
		l[envdeploy.LabelStore] = storeID
	}
	l[envdeploy.LabelSandbox] = gid
	l[envdeploy.LabelRole] = "task_container"
	return l
}

// group is what the run holds for a sandbox's task containers: its
// teardown removes every container, network and image of the group.
type group struct {
	p   *docker.Provider
	gid string
}

func (g *group) hold(rc *runner.RunContext, sandboxID string) {
	rc.HoldSandbox(&runner.InstanceSandbox{SandboxID: g.gid, SandboxType: docker.TypeName, Kind: "task containers of sandbox",
		InstanceID: sandboxID, TerminateFunc: g.terminate})
}

// terminate removes the group's containers and networks, then its images.
func (g *group) terminate(ctx context.Context) error {
	var errs []error
	grp, err := g.p.OpenGroup(ctx, g.gid)
	switch {
	case errors.Is(err, envdeploy.ErrNotFound):
	case err != nil:
		errs = append(errs, err)
	default:
		errs = append(errs, grp.Terminate(ctx))
	}
	f := make(client.Filters).Add("label", envdeploy.LabelSandbox+"="+g.gid)
	imgs, err := g.p.Client().ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list images of %s: %w", g.gid, err))
	} else {
		for _, im := range imgs.Items {
			if _, err := g.p.Client().ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove image %s: %w", im.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// build builds the context tar with dockerfile and tags it ref.
func build(ctx context.Context, p *docker.Provider, contextTar io.Reader, dockerfile, ref string, lbl map[string]string, args map[string]string) error {
	ba := make(map[string]*string, len(args))
	for k, v := range args {
		ba[k] = &v
	}
	all := maps.Clone(lbl)
	all["agentenv.built"] = "true"
	res, err := p.Client().ImageBuild(ctx, contextTar, client.ImageBuildOptions{
		Tags: []string{ref}, Dockerfile: dockerfile, Remove: true, ForceRemove: true, Labels: all, BuildArgs: ba})
	if err != nil {
		return fmt.Errorf("build image %s: %w", ref, err)
	}
	defer res.Body.Close()
	var log strings.Builder
	dec := json.NewDecoder(res.Body)
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("build image %s: reading the build output: %w", ref, err)
		}
		log.WriteString(m.Stream)
		if msg := m.Error + m.ErrorDetail.Message; msg != "" {
			if m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return fmt.Errorf("build image %s failed: %s\nbuild log (tail):\n%s", ref, msg, tail(log.String(), 1500))
		}
	}
}

// execResult is one command run in a container.
type execResult struct {
	exitCode       int
	stdout, stderr []byte
}

// execIn runs argv in container as user. When ctx ends first it returns
// ctx's error: the engine has no call to stop an exec, so the process runs
// on until the container is removed.
func execIn(ctx context.Context, p *docker.Provider, container, user string, env map[string]string, argv []string) (execResult, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	envList := make([]string, 0, len(keys))
	for _, k := range keys {
		envList = append(envList, k+"="+env[k])
	}
	cli := p.Client()
	ex, err := cli.ExecCreate(ctx, container, client.ExecCreateOptions{Cmd: argv, Env: envList, User: user, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return execResult{}, fmt.Errorf("exec in %s: %w", container, err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return execResult{}, fmt.Errorf("exec in %s: %w", container, err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader)
		done <- err
	}()
	select {
	case <-ctx.Done():
		att.Close()
		<-done
		return execResult{}, ctx.Err()
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			return execResult{}, fmt.Errorf("exec in %s: output: %w", container, err)
		}
	}
	ins, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return execResult{}, fmt.Errorf("exec in %s: %w", container, err)
	}
	return execResult{exitCode: ins.ExitCode, stdout: stdout.Bytes(), stderr: stderr.Bytes()}, nil
}

// readFile reads one regular file out of a container (no shell needed).
func readFile(ctx context.Context, p *docker.Provider, container, path string) ([]byte, error) {
	res, err := p.Client().CopyFromContainer(ctx, container, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, err
	}
	if h.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(tr, maxResultBytes))
}

// maxResultBytes bounds a result file read back from a container.
const maxResultBytes = 10 << 20

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// sandboxOf finds a deployed VM-mode sandbox by name.
func sandboxOf(ctx context.Context, rc *runner.RunContext, sandboxName string) (runner.DeployedSandbox, sandbox.Sandbox, error) {
	ds, sb, err := rc.Sandbox(ctx, sandboxName)
	if err != nil {
		return ds, nil, fmt.Errorf("sandbox_name: %w", err)
	}
	if ds.SandboxMode != sandbox.ModeVM {
		return ds, nil, fmt.Errorf("sandbox_name %q is a %s-mode sandbox; only VM-mode sandboxes run task containers", sandboxName, ds.SandboxMode)
	}
	return ds, sb, nil
}
