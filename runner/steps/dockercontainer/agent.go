package dockercontainer

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner"
)

// AgentOptions says how StartAgent starts an agent in a task container.
type AgentOptions struct {
	Name string            // the agent's name in the run; names /opt/agentenv/<Name>/agent
	Port int               // container port the agent serves A2A on; the container must publish it
	Env  map[string]string // added to the agent's environment (A2A_PORT wins)
	Dir  string            // working folder; "" = the container's
}

// maxAgentBinary bounds the agent binary copied into a container.
const maxAgentBinary = 512 << 20

// StartAgent copies an agent's static binary into a task container that
// run_docker_container started (sandboxName, containerName as the task
// names them) and runs it detached, for install_agent's container mode.
// The container needs no shell: the binary is exec'd directly. It returns
// the agent's base URL on this host (the container's published port);
// the agent stops when the container is removed at teardown.
func StartAgent(ctx context.Context, rc *runner.RunContext, sandboxName, containerName string, bin io.Reader, o AgentOptions) (string, error) {
	entry, err := containerEntry(rc, sandboxName, containerName)
	if err != nil {
		return "", fmt.Errorf("container_name: %w", err)
	}
	tunnels, _ := entry["tunnel_urls"].(map[string]any)
	url, _ := tunnels[strconv.Itoa(o.Port)].(string)
	if url == "" {
		return "", fmt.Errorf("task container %q does not publish port %d: add it to the run_docker_container step's ports", containerName, o.Port)
	}
	engineName, _ := entry["docker_container_name"].(string)
	p, err := engineOf(rc.Services())
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(bin, maxAgentBinary+1))
	if err != nil {
		return "", fmt.Errorf("read the agent binary: %w", err)
	}
	if len(b) > maxAgentBinary {
		return "", fmt.Errorf("agent binary larger than %d bytes", maxAgentBinary)
	}
	dir := "/opt/agentenv/" + o.Name
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, d := range []string{"opt", "opt/agentenv", dir[1:]} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now}); err != nil {
			return "", err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Join(dir[1:], "agent"), Mode: 0o755, Size: int64(len(b)), ModTime: now}); err != nil {
		return "", err
	}
	if _, err := tw.Write(b); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	cli := p.Client()
	if _, err := cli.CopyToContainer(ctx, engineName, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return "", fmt.Errorf("copy the agent into container %q: %w", containerName, err)
	}
	env := map[string]string{}
	for k, v := range o.Env {
		env[k] = v
	}
	env["A2A_PORT"] = strconv.Itoa(o.Port)
	env["A2A_HOST"] = "0.0.0.0"
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]string, 0, len(keys))
	for _, k := range keys {
		list = append(list, k+"="+env[k])
	}
	ex, err := cli.ExecCreate(ctx, engineName, client.ExecCreateOptions{Cmd: []string{dir + "/agent"}, Env: list, WorkingDir: o.Dir})
	if err != nil {
		return "", fmt.Errorf("start the agent in container %q: %w", containerName, err)
	}
	if _, err := cli.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return "", fmt.Errorf("start the agent in container %q: %w", containerName, err)
	}
	return url, nil
}
