package envsteptest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/pgserver/pgservertest"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/steps/envsteptest"
)

func putDump(t *testing.T, f *envsteptest.Fixture, id, sql string) {
	t.Helper()
	if _, err := f.Services.Artifacts.PutEnvironment(context.Background(), id, artifact.EnvironmentInput{
		EnvironmentName: "db", Filename: "db.sql", ContentType: "application/sql", Body: strings.NewReader(sql)}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceDBLoadSnapshotRestore: a service_db env loads an environment
// artifact (a SQL dump) through load_artifact; a dump that fails names the
// database's error and line and leaves the loaded state; snapshot_env
// exports a SQL dump that load_artifact restores after reset_env.
func TestServiceDBLoadSnapshotRestore(t *testing.T) {
	pgservertest.Need(t)
	f := envsteptest.New(t)
	putDump(t, f, "shop", "CREATE TABLE items (id int PRIMARY KEY, name text);\nINSERT INTO items VALUES (1, 'pen');\n")
	putDump(t, f, "broken", "CREATE TABLE t (a int);\n\nINSERT INTO t VALUES ('x');\n")
	count := func(id string, n int) string {
		return `{"id":"` + id + `","type":"env_outcome_verifier","env_id":"shop-db","verifier_id":"` + id + `","checks":[
		   {"tool":"db_query","args":{"sql":"SELECT count(*) FROM items"},"extract":"rows[0][0]","predicate":{"equals":` + string(rune('0'+n)) + `}}]}`
	}
	rc, _, err := f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"shop-db","ttl_seconds":600,"env_state_type":"postgres"},
	 {"id":"load","type":"load_artifact","env_id":"shop-db","artifact_id":"shop"},
	 `+count("loaded", 1)+`,
	 {"id":"snap","type":"snapshot_env","env_id":"shop-db","snapshot_id":"shop-snap"},
	 {"id":"reset","type":"reset_env","env_id":"shop-db"},
	 {"id":"restore","type":"load_artifact","env_id":"shop-db","artifact_id":"shop-snap"},
	 `+count("restored", 1)+`
	]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"loaded", "restored"} {
		if v, _ := rc.Verification(id); v.Score != 1 {
			t.Errorf("%s: %+v", id, v)
		}
	}
	e, _ := rc.EnvEntry("shop-db", "")
	if ids, _ := e["env_state_instance_ids"].([]any); len(ids) != 1 || e["db_mcp_url"] == nil {
		t.Errorf("env entry: state ids %v, db_mcp_url %v", e["env_state_instance_ids"], e["db_mcp_url"])
	}

	_, _, err = f.Run(t, `[
	 {"id":"env","type":"deploy_env","env_id":"shop-db","ttl_seconds":600},
	 {"id":"load","type":"load_artifact","env_id":"shop-db","artifact_id":"shop"},
	 {"id":"bad","type":"load_artifact","env_id":"shop-db","artifact_id":"broken"}
	]`, nil)
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "invalid input syntax for type integer") {
		t.Fatalf("bad dump: %v", err)
	}
}
