package envdeploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/internal/mcpdial"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
)

// The server topology (env_provider_type "server") runs one MCP server
// and nothing else: no gateway, so the server's own card is the env's
// card, its own /mcp the env's MCP URL, and there are no control routes
// (role rules, triggers, the virtual clock, /step).

// Readiness bounds of the server topology.
const (
	serverCardTimeout  = 180 * time.Second
	serverToolsTimeout = 60 * time.Second
)

// CheckTopology reports why env e can never deploy with its
// env_provider_type; nil when it can. Put refuses such a document before
// storing it, and deploy refuses one written elsewhere (by another build
// or the Python framework). The error names the field.
func CheckTopology(e *Env) error {
	switch e.EnvProviderType {
	case "", ProviderGateway:
		return nil
	case ProviderServer:
	default:
		return &registry.InvalidError{Field: "env_provider_type", Value: e.EnvProviderType, Reason: "must be gateway or server"}
	}
	switch e.Type {
	case TypeMCPServer:
		if e.EnvironmentName == "" {
			return &registry.InvalidError{Field: "environment_name", Reason: "is required: the server topology checks that the server's card carries it"}
		}
		return nil
	case TypeMulti:
		return &registry.InvalidError{Field: "env_provider_type", Value: ProviderServer,
			Reason: "a multi env puts its servers behind one gateway; the server topology deploys exactly one mcp_server env (use gateway)"}
	default:
		return &registry.InvalidError{Field: "env_provider_type", Value: ProviderServer,
			Reason: "the server topology deploys exactly one mcp_server env, not a " + e.Type + " env"}
	}
}

// checkServerRequest refuses the deploy options only a gateway honours.
func checkServerRequest(req DeployRequest) error {
	if req.GatewayMode == ModeConsistent {
		return &registry.InvalidError{Field: "gateway_mode", Value: req.GatewayMode,
			Reason: "needs a gateway to serialise tool calls; env " + req.Env.ID + " deploys with the server topology (env_provider_type server), which has none"}
	}
	if req.GatewayID != "" && req.GatewayID != DefaultGatewayID {
		return &registry.InvalidError{Field: "gateway", Value: req.GatewayID,
			Reason: "env " + req.Env.ID + " deploys with the server topology (env_provider_type server), which runs no gateway"}
	}
	return nil
}

// deployServer deploys e alone, published on 127.0.0.1 (the reference's
// server-only topology, in our terms): its card must carry its environment name and its MCP
// endpoint must list tools, without duplicates.
func (d *Deployer) deployServer(ctx context.Context, b Backend, e *Env, ttl time.Duration) (inst *EnvInstance, err error) {
	servers, err := d.resolve(ctx, e)
	if err != nil {
		return nil, err
	}
	s := servers[0]
	name := e.EnvironmentName
	d.printf("Deploying (ttl=%ds, env_provider_type=server, disk=10.0GB)...", int(ttl.Seconds()))
	ng, err := d.newGroup(ctx, b, e.ID, ttl)
	if err != nil {
		return nil, err
	}
	defer removePartial(ctx, ng.g, &err)
	id, now, expires, g := ng.id, ng.created, ng.expires, ng.g
	ep, err := g.Run(ctx, Workload{Name: name, Role: TypeMCPServer, Source: s.src, Port: MCPPort, PortEnv: "MCP_PORT", Publish: true,
		Env: map[string]string{"MCP_HOST": "0.0.0.0", "ENVIRONMENT_NAME": name, "SERVICE_NAME": name,
			"DATABASE_URL": "sqlite:////tmp/" + name + ".sqlite"}})
	if err != nil {
		return nil, err
	}
	cardURL := ep.Host + protocol.EnvCardPath
	raw, card, err := d.waitServerCard(ctx, g, name, cardURL)
	if err != nil {
		return nil, err
	}
	mcpPath := card.MCPPath()
	if err := d.checkServerTools(ctx, g, name, ep.Host+mcpPath); err != nil {
		return nil, err
	}
	inst = &EnvInstance{InstanceID: id, EnvID: e.ID, EnvVersion: e.Version, EnvType: e.Type, EnvProviderType: ProviderServer,
		Status: StatusDeployed, MCPURL: ep.Host + mcpPath, EnvironmentCardURL: cardURL, EnvironmentCard: raw,
		WebsiteFrontendURLs: map[string]string{}, EnvStateInstanceIDs: []string{},
		SandboxID: g.ID(), SandboxType: b.Type(), SandboxIDs: map[string]any{TypeMCPServer: map[string]string{name: ep.ID}},
		ServerName: name, InternalMCPURL: ep.Internal + mcpPath, MCPServers: []string{name},
		CreatedAtUTC: now.Format(time.RFC3339), ExpiresAtUTC: expires.Format(time.RFC3339)}
	body, _ := json.Marshal(inst)
	if _, err := d.Stores.Docs.InsertRecord(ctx, registry.EnvInstances, id, body); err != nil {
		return nil, fmt.Errorf("record env instance: %w", err)
	}
	return inst, nil
}

// waitServerCard polls the server's card until it answers 200 with a card
// (≤ ReadyTimeout, default 180 s). A card with another name fails at once:
// the server ignores ENVIRONMENT_NAME and would answer under a name the
// env's records do not know.
func (d *Deployer) waitServerCard(ctx context.Context, g Group, name, u string) (json.RawMessage, *protocol.EnvCard, error) {
	timeout := d.ReadyTimeout
	if timeout == 0 {
		timeout = serverCardTimeout
	}
	var raw json.RawMessage
	var card protocol.EnvCard
	err := d.poll(ctx, g, "server "+name, name, u, timeout, func(ctx context.Context) (bool, string, error) {
		status, b, err := d.getCard(ctx, u)
		if err != nil {
			return false, err.Error(), nil
		}
		if status != http.StatusOK {
			return false, "status " + strconv.Itoa(status), nil
		}
		card = protocol.EnvCard{}
		if err := json.Unmarshal(b, &card); err != nil {
			return false, "card is not JSON: " + err.Error(), nil
		}
		if card.Name != name {
			return false, "", fmt.Errorf("server %s: its card at %s names the env %q, not its environment_name %q (the server must honour ENVIRONMENT_NAME)", name, u, card.Name, name)
		}
		raw = b
		return true, "", nil
	})
	if err != nil {
		return nil, nil, err
	}
	return raw, &card, nil
}

// checkServerTools lists the server's tools over MCP until it lists some
// (≤ 60 s); a duplicate tool name fails at once.
func (d *Deployer) checkServerTools(ctx context.Context, g Group, name, mcpURL string) error {
	return d.poll(ctx, g, "server "+name, name, mcpURL, serverToolsTimeout, func(ctx context.Context) (bool, string, error) {
		names, err := listTools(ctx, mcpURL)
		if err != nil {
			return false, "tools/list: " + err.Error(), nil
		}
		if len(names) == 0 {
			return false, "tools/list is empty", nil
		}
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				return false, "", fmt.Errorf("server %s lists tool %q twice at %s", name, n, mcpURL)
			}
			seen[n] = true
		}
		return true, "", nil
	})
}

// listTools lists the tool names of the MCP endpoint u.
func listTools(ctx context.Context, u string) ([]string, error) {
	c, err := mcpdial.Dial(ctx, u, "agentenv-deploy")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var names []string
	req := mcp.ListToolsRequest{}
	for {
		res, err := c.ListTools(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		if res.NextCursor == "" {
			return names, nil
		}
		req.Params.Cursor = res.NextCursor
	}
}

// poll calls try with backoff until it is done or fails, within timeout:
// from 10 ms apart (a workload answers soon after its start), the gap
// doubling up to 100 ms.
// A workload of g that exits ends the wait at once, with its log; the
// timeout's error names what (at u) with try's last reason and the log of
// workload.
func (d *Deployer) poll(ctx context.Context, g Group, what, workload, u string, timeout time.Duration,
	try func(ctx context.Context) (done bool, reason string, err error)) error {
	ctx2, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 10 * time.Millisecond
	var last string
	for {
		done, reason, err := try(ctx2)
		if err != nil || done {
			return err
		}
		last = reason
		if ew, ok := g.(ExitWatcher); ok {
			if name, dead := ew.Exited(ctx2); dead {
				return fmt.Errorf("%s exited before the %s was ready; its log tail:\n%s", name, what, g.Logs(context.WithoutCancel(ctx), name, 15))
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx2.Done():
			t.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s not ready after %s at %s (%s); %s log tail:\n%s", what, timeout, u, last, workload,
				g.Logs(context.WithoutCancel(ctx), workload, 15))
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}
