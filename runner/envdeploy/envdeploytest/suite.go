package envdeploytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Options tunes Run; nil means none.
type Options struct {
	// Leftovers lists every resource this test process owns (labelled
	// agentenv.owner=pid:<this pid>) that still exists.
	Leftovers func(t *testing.T) []string
	// RemoveImage drops an image from the engine so that deploy must load
	// it from the store (Docker only).
	RemoveImage func(t *testing.T, ref string)
}

// ProcessPrefix starts the repository of every image this test process
// tags: a cleanup removes what is under it, never another process's images
// on the same engine.
var ProcessPrefix = "agentenvtest-" + randHex()

func randHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewStores returns empty stores under a temporary folder; image refs get
// a random repository prefix under ProcessPrefix so runs never share
// engine images.
func NewStores(t testing.TB) envdeploy.Stores {
	return NewStoresWithPrefix(t, ProcessPrefix+"-"+randHex())
}

// NewStoresWithPrefix is NewStores with the repository prefix given. Each
// call is a store of its own (its own folder and store id), so two stores
// with one prefix are two state roots sharing an engine.
func NewStoresWithPrefix(t testing.TB, prefix string) envdeploy.Stores {
	t.Helper()
	dir := t.TempDir()
	docs, err := sqlite.Open(context.Background(), filepath.Join(dir, "documents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docs.Close() })
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	storeID, err := registry.StoreID(dir)
	if err != nil {
		t.Fatal(err)
	}
	return envdeploy.Stores{Docs: docs, Artifacts: artifact.New(docs, objs, nil),
		Images: localimage.New(&localimage.Options{RepositoryPrefix: prefix, StoreID: storeID})}
}

// Script is the scripted agent's script: on "echo" it calls alpha_echo.
const Script = `{"rules":[{"when":{"contains":"echo"},"steps":[{"tool":"alpha_echo","arguments":{"text":"from-agent"}}],"reply":"Agent got: {{result 0}}"}]}`

// Run is the suite.
func Run(t *testing.T, newBackend func(t *testing.T) envdeploy.Backend, o *Options) {
	var opts Options
	if o != nil {
		opts = *o
	}
	bins := Build(t)
	b := newBackend(t)
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Second)
	defer cancel()
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	st := NewStores(t)
	builder, _ := b.(envdeploy.ImageBuilder)
	put := &envdeploy.Putter{Stores: st, Builder: builder, TempDir: t.TempDir()}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	leftovers := func(when string) {
		t.Helper()
		if opts.Leftovers != nil {
			if left := opts.Leftovers(t); len(left) > 0 {
				t.Errorf("%s: left behind %v", when, left)
			}
		}
	}

	_, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway})
	must(err)
	_, err = put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "alpha", EnvironmentName: "alpha", Image: envdeploy.ImageInput{Binary: bins.Echo}})
	must(err)
	var betaRef string
	if builder != nil {
		// beta through a FROM scratch Dockerfile: build, save, then drop
		// the image so deploy loads it back from the store.
		dir := t.TempDir()
		copyFile(t, bins.Echo, filepath.Join(dir, "echo-env"))
		df := filepath.Join(dir, "Dockerfile")
		must(os.WriteFile(df, []byte("FROM scratch\nCOPY echo-env /echo-env\nENV ENVIRONMENT_NAME=beta\nENTRYPOINT [\"/echo-env\"]\n"), 0o644))
		e, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "beta", Image: envdeploy.ImageInput{Dockerfile: df}})
		must(err)
		if e.EnvironmentName != "beta" {
			t.Errorf("derived environment_name %q, want beta", e.EnvironmentName)
		}
		betaRef = e.ImageName
		if opts.RemoveImage != nil {
			opts.RemoveImage(t, betaRef)
		}
	} else {
		_, err = put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "beta", EnvironmentName: "beta", Image: envdeploy.ImageInput{Binary: bins.Echo}})
		must(err)
	}
	// A namespaced env id, as the Python framework writes it: instance
	// ids start with it, and "@" and "/" must not reach sandbox names.
	// (Agent ids must be usable as image names, so that one stays plain.)
	const pairID, agentID = "@local/suite/pair", "scripted"
	_, err = put.PutMulti(ctx, envdeploy.MultiInput{ID: pairID, MCPServers: []string{"alpha", "beta:1"}})
	must(err)
	_, err = put.PutAgent(ctx, envdeploy.AgentInput{ID: agentID, Image: envdeploy.ImageInput{Binary: bins.Agent}})
	must(err)

	storeID := "suite" + randomHex(6)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{b.Type(): b}, DefaultSandbox: b.Type(),
		ReadyTimeout: 60 * time.Second, StoreID: storeID}

	t.Run("BadInput", func(t *testing.T) {
		if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "nope"}}); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("unknown env: %v, want ErrNotFound", err)
		}
		if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "alpha"}, GatewayMode: "fast"}); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("bad gateway mode: %v, want ErrInvalid", err)
		}
		_, err := put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "ghost", EnvironmentName: "ghost",
			Image: envdeploy.ImageInput{ImageRef: "localhost:5000/agentenvtest-missing/ghost:v1"}})
		must(err)
		_, err = d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "ghost"}})
		if !errors.Is(err, envdeploy.ErrImageMissing) {
			t.Errorf("env without a runnable source: %v, want ErrImageMissing", err)
		}
		// A server that dies at once fails the deploy quickly, with its
		// log, and leaves nothing.
		_, err = put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "crash", EnvironmentName: "crash", Image: envdeploy.ImageInput{Binary: bins.Crasher}})
		must(err)
		// The message (not a timer) tells fail-fast from the readiness
		// timeout: a timeout would say "gateway not ready".
		_, err = d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "crash"}})
		if err == nil || !strings.Contains(err.Error(), "crash exited") || !strings.Contains(err.Error(), "failing on purpose") {
			t.Errorf("crashing server: %v", err)
		}
		leftovers("after failed deploys")
	})

	t.Run("DeployCallTeardown", func(t *testing.T) {
		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: pairID}, TTL: 600 * time.Second})
		must(err)
		tornDown := false
		t.Cleanup(func() {
			if !tornDown {
				_ = d.Teardown(context.Background(), inst.InstanceID)
			}
		})
		if inst.SandboxType != b.Type() || inst.Status != envdeploy.StatusDeployed || !strings.HasPrefix(inst.GatewayURL, "http://127.0.0.1:") ||
			inst.MCPURL != inst.GatewayURL+"/mcp" || len(inst.MCPServers) != 2 {
			t.Fatalf("instance %+v", inst)
		}
		checkInstanceID(t, "env", inst.InstanceID, pairID)
		rec, err := d.GetInstance(ctx, inst.InstanceID)
		if err != nil || rec.MCPURL != inst.MCPURL {
			t.Fatalf("GetInstance: %+v %v", rec, err)
		}
		// The gateway holds roles against forging agents: a fresh control
		// token, role credentials required (docs/security.md).
		if rec.ControlToken == "" || len(inst.ControlToken) != 64 {
			t.Fatalf("no control token in the record")
		}
		authed := func(method, path, tok string, hs map[string]string, body string) (int, string) {
			t.Helper()
			req, err := http.NewRequestWithContext(ctx, method, inst.GatewayURL+path, strings.NewReader(body))
			must(err)
			req.Header.Set("Content-Type", "application/json")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			for k, v := range hs {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			must(err)
			defer resp.Body.Close()
			rb, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(rb)
		}
		agentTok := protocol.RoleToken(inst.ControlToken, "agent")
		disable := `{"role":"agent","tools":["alpha_echo"]}`
		if st, body := authed("POST", "/tools/disable", agentTok, nil, disable); st != 401 {
			t.Fatalf("/tools/disable with a role credential: %d %s", st, body)
		}
		if st, body := authed("POST", "/tools/disable", inst.ControlToken, nil, disable); st != 200 {
			t.Fatalf("/tools/disable with the control token: %d %s", st, body)
		}
		call := `{"action":"call_tool","tool_name":"alpha_echo","arguments":{"text":"x"}}`
		for _, tc := range []struct {
			tok    string
			role   string
			status int
		}{{"", "admin", 401}, {agentTok, "admin", 403}, {protocol.RoleToken(inst.ControlToken, "admin"), "agent", 200}} {
			if st, body := authed("POST", "/step", tc.tok, map[string]string{protocol.HeaderRole: tc.role}, call); st != tc.status {
				t.Errorf("/step forged role %s with credential %v: %d %s; want %d", tc.role, tc.tok != "", st, body, tc.status)
			}
		}
		if st, body := authed("POST", "/tools/enable", inst.ControlToken, nil, disable); st != 200 {
			t.Fatalf("/tools/enable: %d %s", st, body)
		}
		defaultTok := protocol.RoleToken(inst.ControlToken, protocol.DefaultRole)
		c := mcpClient(t, ctx, inst.MCPURL, defaultTok)
		for _, name := range []string{"alpha", "beta"} {
			req := mcp.CallToolRequest{}
			req.Params.Name = name + "_echo"
			req.Params.Arguments = map[string]any{"text": "hi " + name}
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				t.Fatalf("/mcp %s_echo: %+v %v", name, res, err)
			}
			sc, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(sc), `"echo":"hi `+name+`"`) || !strings.Contains(string(sc), `"server":"`+name+`"`) {
				t.Errorf("/mcp %s_echo answered %s", name, sc)
			}
		}
		for _, name := range []string{"alpha", "beta"} {
			body := `{"action":"call_tool","tool_name":"` + name + `_echo","arguments":{"text":"step ` + name + `"}}`
			st, rb := authed("POST", "/step", defaultTok, nil, body)
			if st != 200 || !strings.Contains(rb, `step `+name) {
				t.Errorf("/step %s_echo: %d %s", name, st, rb)
			}
		}

		// The agent reaches the env by the URL its record names (the
		// gateway's network alias on Docker).
		ai, err := d.DeployAgent(ctx, envdeploy.AgentDeployRequest{Agent: registry.Ref{ID: agentID},
			EnvInstances: []string{inst.InstanceID}, EnvVars: map[string]string{"SCRIPTED_AGENT_SCRIPT": Script}})
		must(err)
		t.Cleanup(func() { _ = d.TeardownAgent(context.Background(), ai.InstanceID) })
		checkInstanceID(t, "agent", ai.InstanceID, agentID)
		envURL := ai.EnvMCPURLs[inst.InstanceID]
		if envURL == "" || envURL != inst.InternalMCPURL {
			t.Fatalf("agent env URLs %v, env internal %q", ai.EnvMCPURLs, inst.InternalMCPURL)
		}
		ac := &agentsdktest.Client{BaseURL: ai.APIURL}
		if st, body, err := ac.Ext(ctx, http.MethodPost, protocol.AgentMCPConfigPath, map[string]any{"url": envURL, "name": "env",
			"headers": map[string]string{"Authorization": "Bearer " + defaultTok}}); err != nil || st != 200 {
			t.Fatalf("mcp-config add: %d %s %v", st, body, err)
		}
		task, err := ac.Prompt(ctx, "c1", "please echo")
		if err != nil || task.Status.State != "completed" || !strings.Contains(task.Text(), "from-agent") {
			t.Fatalf("agent prompt: %+v %v", task, err)
		}
		// The env goes first while the agent is still joined to its
		// network: its teardown must still remove everything of its own.
		must(d.Teardown(ctx, inst.InstanceID))
		tornDown = true
		must(d.Teardown(ctx, inst.InstanceID)) // idempotent
		must(d.TeardownAgent(ctx, ai.InstanceID))
		must(d.TeardownAgent(ctx, ai.InstanceID))
		if rec, _ := d.GetInstance(ctx, inst.InstanceID); rec == nil || rec.Status != envdeploy.StatusTornDown {
			t.Errorf("record after teardown: %+v", rec)
		}
		if _, err := http.Get(inst.GatewayURL + protocol.EnvCardPath); err == nil {
			t.Errorf("gateway still answers after teardown")
		}
		leftovers("after teardown")
		if err := d.Teardown(ctx, "0123456789abcdef0123456789abcdef"); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("teardown of an unknown instance: %v, want ErrNotFound", err)
		}
	})

	t.Run("ServerTopology", func(t *testing.T) {
		// Documents that can never deploy alone are refused at put, naming
		// the field, and nothing is stored.
		_, err := put.PutMulti(ctx, envdeploy.MultiInput{ID: "solo-multi", MCPServers: []string{"alpha"}, EnvProviderType: envdeploy.ProviderServer})
		var inv *registry.InvalidError
		if !errors.As(err, &inv) || inv.Field != "env_provider_type" {
			t.Errorf("server-topology multi env: %v, want an error naming env_provider_type", err)
		}
		if _, err := st.Docs.Versions(ctx, registry.Envs, "solo-multi"); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("refused multi env stored: %v", err)
		}
		_, err = put.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "solo", EnvironmentName: "solo", EnvProviderType: envdeploy.ProviderServer,
			Image: envdeploy.ImageInput{Binary: bins.Echo}})
		must(err)
		// Options only a gateway honours are refused before anything runs.
		_, err = d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "solo"}, GatewayMode: envdeploy.ModeConsistent})
		if !errors.As(err, &inv) || inv.Field != "gateway_mode" || !strings.Contains(err.Error(), "server topology") {
			t.Errorf("consistent mode on the server topology: %v", err)
		}
		leftovers("after a refused server deploy")

		inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "solo"}, TTL: 600 * time.Second})
		must(err)
		tornDown := false
		t.Cleanup(func() {
			if !tornDown {
				_ = d.Teardown(context.Background(), inst.InstanceID)
			}
		})
		if inst.EnvProviderType != envdeploy.ProviderServer || inst.GatewayURL != "" || inst.ControlToken != "" ||
			!strings.HasPrefix(inst.MCPURL, "http://127.0.0.1:") || !strings.HasSuffix(inst.MCPURL, "/mcp") ||
			len(inst.MCPServers) != 1 || inst.MCPServers[0] != "solo" {
			t.Fatalf("instance %+v", inst)
		}
		// The env's card is the server's own.
		var card protocol.EnvCard
		must(json.Unmarshal(inst.EnvironmentCard, &card))
		if card.Name != "solo" || len(card.ChildrenEnvironments) != 0 {
			t.Errorf("card %s", inst.EnvironmentCard)
		}
		resp, err := http.Get(inst.EnvironmentCardURL)
		must(err)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSuffix(inst.EnvironmentCardURL, protocol.EnvCardPath)+"/mcp" != inst.MCPURL {
			t.Errorf("card URL %s: %d (MCP URL %s)", inst.EnvironmentCardURL, resp.StatusCode, inst.MCPURL)
		}
		// Tools answer unprefixed and without a credential: there is no
		// gateway to hold roles.
		c := mcpClient(t, ctx, inst.MCPURL, "")
		req := mcp.CallToolRequest{}
		req.Params.Name = "solo_echo"
		req.Params.Arguments = map[string]any{"text": "hi solo"}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("/mcp solo_echo: %+v %v", res, err)
		}
		// An agent reaches it by the URL the record gives it.
		ai, err := d.DeployAgent(ctx, envdeploy.AgentDeployRequest{Agent: registry.Ref{ID: agentID},
			EnvInstances: []string{inst.InstanceID}, EnvVars: map[string]string{"SCRIPTED_AGENT_SCRIPT": strings.ReplaceAll(Script, "alpha_echo", "solo_echo")}})
		must(err)
		t.Cleanup(func() { _ = d.TeardownAgent(context.Background(), ai.InstanceID) })
		envURL := ai.EnvMCPURLs[inst.InstanceID]
		if envURL == "" || envURL != inst.InternalMCPURL {
			t.Fatalf("agent env URLs %v, env internal %q", ai.EnvMCPURLs, inst.InternalMCPURL)
		}
		ac := &agentsdktest.Client{BaseURL: ai.APIURL}
		if st, body, err := ac.Ext(ctx, http.MethodPost, protocol.AgentMCPConfigPath, map[string]any{"url": envURL, "name": "env"}); err != nil || st != 200 {
			t.Fatalf("mcp-config add: %d %s %v", st, body, err)
		}
		task, err := ac.Prompt(ctx, "c1", "please echo")
		if err != nil || task.Status.State != "completed" || !strings.Contains(task.Text(), "from-agent") {
			t.Fatalf("agent prompt: %+v %v", task, err)
		}
		must(d.TeardownAgent(ctx, ai.InstanceID))
		must(d.Teardown(ctx, inst.InstanceID))
		tornDown = true
		if rec, _ := d.GetInstance(ctx, inst.InstanceID); rec == nil || rec.Status != envdeploy.StatusTornDown || rec.EnvProviderType != envdeploy.ProviderServer {
			t.Errorf("record after teardown: %+v", rec)
		}
		leftovers("after the server topology's teardown")
	})

	t.Run("Prune", func(t *testing.T) {
		// A dead owner's groups: this store's is pruned; another store's
		// is kept (and named, with why) unless AllStores.
		dead := map[string]string{envdeploy.LabelInstance: "prune-dead", envdeploy.LabelOwner: "pid:999999999",
			envdeploy.LabelPersist: "true", envdeploy.LabelStore: storeID}
		g1, err := b.CreateGroup(ctx, envdeploy.GroupSpec{Labels: dead})
		must(err)
		live := envdeploy.OwnerLabels("prune-live", false, time.Time{})
		live[envdeploy.LabelStore] = storeID
		g2, err := b.CreateGroup(ctx, envdeploy.GroupSpec{Labels: live})
		must(err)
		otherStore := "other" + randomHex(6)
		foreign := map[string]string{envdeploy.LabelInstance: "prune-foreign", envdeploy.LabelOwner: "pid:999999999",
			envdeploy.LabelPersist: "false", envdeploy.LabelStore: otherStore}
		g3, err := b.CreateGroup(ctx, envdeploy.GroupSpec{Labels: foreign})
		must(err)
		t.Cleanup(func() {
			for _, g := range []envdeploy.Group{g3, g2, g1} {
				_ = g.Terminate(context.Background())
			}
		})
		rep, err := d.Prune(ctx, nil)
		must(err)
		joined := strings.Join(rep.Removed, ",")
		if !strings.Contains(joined, g1.ID()) || strings.Contains(joined, g2.ID()) || strings.Contains(joined, g3.ID()) {
			t.Errorf("prune removed %v; want %s and neither %s nor %s", rep.Removed, g1.ID(), g2.ID(), g3.ID())
		}
		kept := strings.Join(rep.Kept, "\n")
		if !strings.Contains(kept, g2.ID()+" (instance prune-live): its owner process") ||
			!strings.Contains(kept, g3.ID()+" (instance prune-foreign): belongs to another store ("+otherStore+")") {
			t.Errorf("kept:\n%s", kept)
		}
		if _, err := b.OpenGroup(ctx, g1.ID()); !errors.Is(err, envdeploy.ErrNotFound) {
			t.Errorf("pruned group still opens: %v", err)
		}
		if _, err := b.OpenGroup(ctx, g3.ID()); err != nil {
			t.Errorf("another store's group was removed: %v", err)
		}
		// The other store's own prune removes it.
		other := *d
		other.StoreID = otherStore
		rep, err = other.Prune(ctx, &envdeploy.PruneOptions{})
		must(err)
		if joined := strings.Join(rep.Removed, ","); !strings.Contains(joined, g3.ID()) {
			t.Errorf("the other store's prune removed %v, want %s", rep.Removed, g3.ID())
		}
		must(g2.Terminate(ctx))
		must(g2.Terminate(ctx))
		if _, err := b.OpenGroup(ctx, g2.ID()); !errors.Is(err, envdeploy.ErrNotFound) {
			t.Errorf("terminated group still opens: %v", err)
		}
		leftovers("after prune")
	})
}

// checkInstanceID fails t unless id is owner's id, "-" and 8 characters
// of [a-z0-9], the form task instance ids already have.
func checkInstanceID(t *testing.T, kind, id, owner string) {
	t.Helper()
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(owner) + `-[a-z0-9]{8}$`).MatchString(id) {
		t.Errorf("%s instance id %q, want %s-<8 of [a-z0-9]>", kind, id, owner)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mcpClient(t *testing.T, ctx context.Context, u, credential string) *client.Client {
	t.Helper()
	hs := map[string]string{}
	if credential != "" {
		hs["Authorization"] = "Bearer " + credential
	}
	tr, err := transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(hs))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "envdeploytest", Version: "0"}}}); err != nil {
		t.Fatalf("initialize %s: %v", u, err)
	}
	return c
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
