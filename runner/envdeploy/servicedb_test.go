package envdeploy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/pgserver"
	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

// A service_db env on the process provider: a PostgreSQL per instance
// recorded in env_state_instances, its db MCP server behind the gateway,
// a dump loaded through the data plane, a state copied into a second
// instance with env_state_instance_id, and teardown stopping both.
func TestServiceDBProcess(t *testing.T) {
	pgservertest.Need(t)
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st}
	if _, err := p.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		t.Fatal(err)
	}
	e, err := p.PutServiceDB(ctx, envdeploy.ServiceDBInput{ID: "shop", DBMCP: envdeploy.ImageInput{Binary: bins.DBEnv},
		DB: envdeploy.ImageInput{Binary: bins.Postgres}, WriteRoles: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != envdeploy.TypeServiceDB || e.EnvironmentName != "db" || e.DBBinaryArtifactRef == nil || e.DBMCPImageArtifactRef == nil {
		t.Fatalf("env = %+v", e)
	}
	proc := process.New(t.TempDir(), nil)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"process": proc}, ReadyTimeout: 90 * time.Second}

	// env_state_* on an env without state names the field.
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "echo", EnvironmentName: "echo", Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "echo"}, Sandbox: "process", EnvStateType: "postgres"}); err == nil || !strings.Contains(err.Error(), "env_state_type") {
		t.Errorf("env_state_type on mcp_server: %v", err)
	}
	if _, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "shop"}, Sandbox: "process", EnvStateType: "mysql"}); err == nil || !strings.Contains(err.Error(), "env_state_type") {
		t.Errorf("unknown env_state_type: %v", err)
	}

	inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "shop"}, Sandbox: "process"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.WithoutCancel(ctx), inst.InstanceID)
	if len(inst.EnvStateInstanceIDs) != 1 || inst.DBMCPURL == nil || !strings.HasPrefix(inst.DBURL, "postgres://postgres@127.0.0.1:") {
		t.Fatalf("instance = %+v", inst)
	}
	rec, err := st.Docs.GetRecord(ctx, registry.EnvStateInstances, inst.EnvStateInstanceIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	var state envdeploy.EnvStateInstance
	if err := rec.Decode(&state); err != nil || state.EnvInstanceID != inst.InstanceID || state.DBURL != inst.DBURL || state.Status != envdeploy.StatusDeployed {
		t.Fatalf("state record = %+v %v", state, err)
	}

	gw := gwclient.NewWithControlToken(inst.GatewayURL, inst.ControlToken, nil)
	srv := gw.Server("db")
	dump := "CREATE TABLE items (id int PRIMARY KEY, name text);\nINSERT INTO items VALUES (1, 'pen'), (2, 'ink');\n"
	if err := srv.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddData(ctx, []protocol.Part{protocol.FilePart(protocol.FileContent{Name: "shop.sql", Bytes: []byte(dump)})}); err != nil {
		t.Fatal(err)
	}
	// The db web console, through the gateway's website proxy.
	if inst.DBWebURL == nil || !strings.HasPrefix(*inst.DBWebURL, inst.GatewayURL+"/website/db/") {
		t.Fatalf("db_web_url %v", inst.DBWebURL)
	}
	if body := getBody(t, *inst.DBWebURL+"table?name=items"); !strings.Contains(body, "<td>ink</td>") {
		t.Fatalf("console table page:\n%s", body)
	}
	// The db server's changelog: an agent's write is a change with an id,
	// which the gateway reports as the call's changelog_id.
	var step struct {
		IsError     bool   `json:"isError"`
		ChangelogID *int64 `json:"changelog_id"`
	}
	if err := gw.Do(ctx, http.MethodPost, "/step", "admin", map[string]any{"action": "call_tool", "tool_name": "db_execute",
		"arguments": map[string]any{"sql": "UPDATE items SET name = 'pen' WHERE id = 1"}}, &step); err != nil || step.IsError || step.ChangelogID == nil || *step.ChangelogID != 1 {
		t.Fatalf("db_execute as admin: %+v %v", step, err)
	}
	// A bad dump fails with its line and leaves the data.
	if err := srv.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	err = srv.AddData(ctx, []protocol.Part{protocol.FilePart(protocol.FileContent{Name: "bad.sql", Bytes: []byte("CREATE TABLE t (a int);\nSELECT nope;\n")})})
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), `column "nope" does not exist`) {
		t.Fatalf("bad dump: %v", err)
	}
	parts, err := srv.GetData(ctx, nil)
	if err != nil || len(parts) != 1 || !strings.Contains(string(parts[0].File.Bytes), `"name":"ink"`) {
		t.Fatalf("export after a failed load: %v %v", parts, err)
	}

	// A second instance starts with a copy of the first one's data.
	inst2, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "shop"}, Sandbox: "process", EnvStateType: "postgres",
		EnvStateInstanceID: inst.EnvStateInstanceIDs[0]})
	if err != nil {
		t.Fatal(err)
	}
	res, err := gwclient.NewWithControlToken(inst2.GatewayURL, inst2.ControlToken, nil).CallTool(ctx, "", "db_query", map[string]any{"sql": "SELECT name FROM items ORDER BY id"})
	if err != nil || !strings.Contains(string(res.StructuredContent), `[["pen"],["ink"]]`) {
		t.Fatalf("copied state: %+v %v", res, err)
	}
	if err := d.Teardown(ctx, inst2.InstanceID); err != nil {
		t.Fatal(err)
	}
	if err := d.Teardown(ctx, inst.InstanceID); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(inst.DBURL, "postgres://postgres@"), "/postgres?sslmode=disable")
	if pgserver.Ping(ctx, host) == nil {
		t.Error("database still answers after teardown")
	}
	rec, _ = st.Docs.GetRecord(ctx, registry.EnvStateInstances, inst.EnvStateInstanceIDs[0])
	var m map[string]any
	_ = rec.Decode(&m)
	if m["status"] != envdeploy.StatusTornDown {
		t.Errorf("state record after teardown: %v", m)
	}
	if left := proc.Groups(); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// getBody GETs u and returns its body, failing t unless the answer is 200.
func getBody(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
