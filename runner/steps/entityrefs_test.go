package steps_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// Every built-in step field that names a stored env, A2A agent or
// artifact is declared as an entity reference, so bundles rewrite it and
// preflight can check it. A field counts when its JSON name says so.
func TestEveryEntityFieldIsDeclared(t *testing.T) {
	names := func(f string) bool {
		return f == "env_id" || f == "env_ids" || f == "a2a_agent_id" || strings.HasSuffix(f, "_a2a_agent_id") ||
			f == "artifact_id" || f == "artifacts" || strings.HasSuffix(f, "artifact_id")
	}
	reg := steps.Builtin()
	for _, typ := range reg.Types() {
		info, _ := reg.Lookup(typ)
		cfg := info.New()
		declared := map[string]bool{}
		if r, ok := cfg.(runner.EntityRefser); ok {
			for _, ref := range r.EntityRefs() {
				declared[ref.Field] = true
			}
		}
		st := reflect.TypeOf(cfg).Elem()
		for i := range st.NumField() {
			f, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
			if names(f) && !declared[f] {
				t.Errorf("%s: field %s names an entity but is not declared in EntityRefs", typ, f)
			}
		}
	}
}

// A missing artifact is found at preflight whichever step names it, each
// problem naming the step and the field.
func TestPreflightFindsMissingArtifacts(t *testing.T) {
	f := newFixture(t)
	f.putFile(t, "have", "have.txt", "x")
	task, err := f.r.ParseTask("t", 1, []byte(`[
	  {"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	  {"id":"load","type":"load_artifact","sandbox_name":"box","artifacts":[{"id":"have"},{"id":"gone"}]},
	  {"id":"grade","type":"env_outcome_verifier","env_id":"email","file_artifact_id":"no-such-program"}]`))
	if err != nil {
		t.Fatal(err)
	}
	probs := runner.Preflight(context.Background(), task, f.svc)
	var got []string
	for _, p := range probs {
		got = append(got, p.Error())
	}
	want := []string{
		`step 2 (id "load"): field "artifacts": Artifact gone version=latest not found`,
		`step 3 (id "grade"): field "file_artifact_id": Artifact no-such-program version=latest not found`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("preflight problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
