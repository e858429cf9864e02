package steps_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// load_artifact artifact_from_step_id loads the artifact an earlier step
// of the run produced: collect_artifacts' universe, or what a snapshot
// step recorded (here given in the initial context, in the reference's
// shape). A step that recorded nothing is an error naming it.
func TestLoadArtifactFromStep(t *testing.T) {
	f := newFixture(t)
	f.putFile(t, "report-file", "report.txt", "Q3 ok\n")
	arts, _ := f.svc.ArtifactStore()
	ctx := context.Background()
	file, err := arts.Get(ctx, registry.Ref{ID: "report-file"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := arts.PutUniverse(ctx, "snap-universe", map[string]registry.Ref{"snap/state.txt": file.Ref()}, nil); err != nil {
		t.Fatal(err)
	}
	initial := map[string]any{"metadata": map[string]any{
		"env_snapshotted_universes": map[string]any{"snap": map[string]any{"id": "snap-universe", "version": 1}},
		"collected_artifacts":       map[string]any{"empty": map[string]any{"file_artifact_universe": nil}},
	}}
	rc, _, err := f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"load","type":"load_artifact","sandbox_name":"box","artifact_id":"report-file","destination_path":"/app/artifact"},
	  {"id":"collect","type":"collect_artifacts","sandbox_name":"box"},
	  {"id":"reload","type":"load_artifact","sandbox_name":"box","artifact_from_step_id":"collect","destination_path":"/app/back"},
	  {"id":"from-snap","type":"load_artifact","sandbox_name":"box","collected_artifacts_step_id":"snap","destination_path":"/app/snap"},
	  {"id":"nothing","type":"load_artifact","sandbox_name":"box","artifact_from_step_id":"empty"},
	  {"id":"v","type":"verify_sandbox","sandbox_name":"box","verifier_id":"v","criteria":[
	    {"type":"probe_file_contains","paths":["/app/back/report.txt"],"value":"Q3 ok"},
	    {"type":"probe_file_contains","paths":["/app/snap/snap/state.txt"],"value":"Q3 ok"}]}]`, initial)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Verification("v"); v.Score != 1 {
		t.Errorf("verification %+v", v)
	}
	_, _, err = f.run(t, `[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"reload","type":"load_artifact","sandbox_name":"box","artifact_from_step_id":"collect"}]`, nil)
	if err == nil || !strings.Contains(err.Error(), `no artifact recorded by step "collect"`) {
		t.Errorf("unknown producer: %v", err)
	}
}
