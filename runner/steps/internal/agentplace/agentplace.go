// Package agentplace starts a registered agent's static binary inside a
// sandbox the run already owns, for the steps that place an agent on a
// VM-mode sandbox instead of deploying it in a sandbox of its own:
// install_agent (host mode) and deploy_agent with sandbox_name.
//
// The agent is a background process of the sandbox: it is stopped when
// the sandbox is terminated (the local provider kills every process that
// carries the sandbox's marker), so the steps register no teardown of
// their own. The port the agent listens on is the sandbox's exposed port;
// on the local provider a sandbox is a host work folder whose exposed
// ports are host ports, so the agent listens on the host port the tunnel
// URL names.
//
//	url, err := agentplace.Start(ctx, sb, bin, agentplace.Options{Name: "solver", Port: 8000})
//	card, err := agentplace.WaitCard(ctx, url, 60*time.Second)
package agentplace

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Options says how to start one agent.
type Options struct {
	// Name is the agent's name in the run; it names the folder
	// /app/.agents/<Name> holding the binary and its log.
	Name string
	// Port is the sandbox port the agent serves A2A on; the sandbox must
	// expose it (deploy_sandbox exposed_ports).
	Port int
	// Env is added to the agent's environment (A2A_PORT and A2A_HOST are
	// set here and win).
	Env map[string]string
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Start writes bin into the sandbox and starts it in the background. It
// returns the agent's base URL as the runner reaches it (the sandbox's
// tunnel URL for Port).
func Start(ctx context.Context, sb sandbox.Sandbox, bin io.Reader, o Options) (string, error) {
	if sb.Mode() != sandbox.ModeVM {
		return "", fmt.Errorf("sandbox %s is in %s mode; an agent is placed on a vm-mode sandbox", sb.ID(), sb.Mode())
	}
	if !safeName.MatchString(o.Name) {
		return "", fmt.Errorf("agent name %q: want letters, digits, '.', '_' or '-'", o.Name)
	}
	tunnel, ok := sb.TunnelURLs()[o.Port]
	if !ok {
		return "", fmt.Errorf("sandbox %s does not expose port %d: add it to the deploy_sandbox step's exposed_ports", sb.ID(), o.Port)
	}
	listen, err := listenPort(sb, tunnel, o.Port)
	if err != nil {
		return "", err
	}
	dir := "/app/.agents/" + o.Name
	if err := sb.WriteFile(ctx, dir+"/agent", bin, 0o755); err != nil {
		return "", fmt.Errorf("copy the agent binary into sandbox %s: %w", sb.ID(), err)
	}
	env := map[string]string{}
	for k, v := range o.Env {
		env[k] = v
	}
	env["A2A_PORT"] = strconv.Itoa(listen)
	env["A2A_HOST"] = "0.0.0.0"
	// setsid: the agent outlives this Exec (whose process group is killed
	// when it returns) and lives until the sandbox is terminated. The
	// script waits for agent.pid, written only once the child runs in its
	// own session, so the kill cannot catch it before. Every standard
	// stream is redirected, so nothing holds the Exec's output pipe.
	script := `rm -f agent.pid; setsid sh -c 'echo $$ >agent.pid; exec ./agent' >agent.log 2>&1 </dev/null &
for _ in $(seq 1 500); do [ -s agent.pid ] && exit 0; sleep 0.01; done; echo "the agent did not start" >&2; exit 1`
	res, err := sb.Exec(ctx, []string{"bash", "-c", script}, &sandbox.ExecOptions{Env: env, Dir: dir})
	if err != nil {
		return "", fmt.Errorf("start the agent in sandbox %s: %w", sb.ID(), err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("start the agent in sandbox %s: exit %d: %s", sb.ID(), res.ExitCode, res.Stderr)
	}
	return tunnel, nil
}

// listenPort is the port the process binds: the host port of the tunnel on
// the local provider (its processes run on the host), else the sandbox port.
func listenPort(sb sandbox.Sandbox, tunnel string, port int) (int, error) {
	if sb.Type() != "local" {
		return port, nil
	}
	u, err := url.Parse(tunnel)
	if err != nil {
		return 0, fmt.Errorf("sandbox %s tunnel %q: %w", sb.ID(), tunnel, err)
	}
	_, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		return 0, fmt.Errorf("sandbox %s tunnel %q: %w", sb.ID(), tunnel, err)
	}
	return strconv.Atoi(p)
}

// Log returns the tail of a placed agent's log, for errors.
func Log(ctx context.Context, sb sandbox.Sandbox, name string) string {
	b, err := sb.ReadFile(ctx, "/app/.agents/"+name+"/agent.log")
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// WaitCard polls the agent's card until it answers 200 with a body, as
// deploy_agent waits for a deployed agent (every 1 s in the reference;
// faster here since a local start takes milliseconds).
func WaitCard(ctx context.Context, base string, timeout time.Duration) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	delay := 20 * time.Millisecond
	last := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+protocol.LegacyAgentCardPath, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && len(b) > 0 && json.Valid(b) {
				return b, nil
			}
			last = "status " + strconv.Itoa(resp.StatusCode)
		} else {
			last = err.Error()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("agent at %s not ready after %s (last: %s)", base, timeout, last)
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
	}
}

// ModelEndpoint is the model base URL and key an agent started by a step
// gets: the run's overrides, then the step's base URL, then
// LITELLM_BASE_URL / LITELLM_API_KEY.
func ModelEndpoint(rc *runner.RunContext, stepBase string) (base, key string) {
	base = stepBase
	if v := rc.UserOverride("litellm_base_url"); v != "" {
		base = v
	}
	if base == "" {
		base = os.Getenv("LITELLM_BASE_URL")
	}
	key = rc.UserOverride("litellm_api_key")
	if key == "" {
		key = os.Getenv("LITELLM_API_KEY")
	}
	return base, key
}

// Record files a placed agent in the agent-instance store
// (envdeploy.Deployer.RecordPlacedAgent) and holds a handle whose
// teardown closes the record when the run's sandboxes are torn down: the
// agent itself ends with its sandbox. It returns the instance id.
func Record(ctx context.Context, rc *runner.RunContext, inst *envdeploy.AgentInstance, ttl time.Duration) (string, error) {
	d := rc.Services().Deployer
	if err := d.RecordPlacedAgent(ctx, inst, ttl); err != nil {
		return "", err
	}
	id := inst.InstanceID
	// The handle's id is the instance's own, so it never shadows the
	// sandbox the agent runs in.
	rc.HoldSandbox(&runner.InstanceSandbox{SandboxID: id, SandboxType: inst.SandboxType, Kind: "agent", InstanceID: id,
		TerminateFunc: func(ctx context.Context) error { return d.MarkPlacedAgentEnded(ctx, id) }})
	return id, nil
}
