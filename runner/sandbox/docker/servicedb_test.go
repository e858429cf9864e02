package docker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/gwclient"
)

// TestServiceDBDocker: a service_db env on Docker, its database image
// built FROM scratch with the host's PostgreSQL and its library closure
// (nothing pulled): a dump loads through the gateway, the db tools answer
// from the database, the host reaches the DB URL, and teardown leaves
// nothing of this store.
func TestServiceDBDocker(t *testing.T) {
	p := engine(t)
	pgservertest.Need(t)
	t.Cleanup(func() {
		removeTestImages(t, p)
		p.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Second)
	defer cancel()
	start := time.Now()
	bins := envdeploytest.Build(t)
	t.Logf("binaries built in %s", time.Since(start).Round(time.Millisecond))
	st := envdeploytest.NewStores(t)
	put := &envdeploy.Putter{Stores: st, Builder: p, TempDir: t.TempDir()}
	if _, err := put.PutGateway(ctx, "default", envdeploy.ImageInput{Binary: bins.Gateway}); err != nil {
		t.Fatal(err)
	}
	if _, err := put.PutServiceDB(ctx, envdeploy.ServiceDBInput{ID: "shop", DBMCP: envdeploy.ImageInput{Binary: bins.DBEnv},
		DB: envdeploy.ImageInput{Binary: bins.Postgres}, DBHostClosure: true}); err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway and service_db put in %s", time.Since(start).Round(time.Millisecond))
	storeID := "sdb" + strconv.FormatInt(time.Now().UnixNano(), 36)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"docker": p}, DefaultSandbox: "docker",
		StoreID: storeID, ReadyTimeout: 300 * time.Second}
	deployStart := time.Now()
	inst, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deployed in %s", time.Since(deployStart).Round(time.Millisecond))
	defer d.Teardown(context.WithoutCancel(ctx), inst.InstanceID)
	if !strings.HasPrefix(inst.DBURL, "postgres://postgres@127.0.0.1:") || len(inst.EnvStateInstanceIDs) != 1 {
		t.Fatalf("instance %+v", inst)
	}
	gw := gwclient.NewWithControlToken(inst.GatewayURL, inst.ControlToken, nil)
	srv := gw.Server("db")
	if err := srv.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	dump := "CREATE TABLE items (id int PRIMARY KEY, name text);\nINSERT INTO items VALUES (1, 'pen');\n"
	if err := srv.AddData(ctx, []protocol.Part{protocol.FilePart(protocol.FileContent{Name: "db.sql", Bytes: []byte(dump)})}); err != nil {
		t.Fatal(err)
	}
	res, err := gw.CallTool(ctx, "", "db_query", map[string]any{"sql": "SELECT name, now() IS NOT NULL FROM items"})
	if err != nil || !strings.Contains(string(res.StructuredContent), `[["pen",true]]`) {
		t.Fatalf("query: %+v %v", res, err)
	}
	if err := d.Teardown(ctx, inst.InstanceID); err != nil {
		t.Fatal(err)
	}
	left, err := p.Labelled(context.Background(), envdeploy.LabelStore, storeID)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("teardown left %v", left)
	}
}
