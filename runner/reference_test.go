package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/steps"
)

// TestReferenceCorpus: the task files of testdata/reference, written in
// the reference's documented forms (both depends_on forms, every built-in
// step type with its reference fields), are accepted, stored by
// CreateTask and read back by LoadTask as written: every key a step was
// written with comes back with the same value, the only additions being
// version and fail_task_on_error. The stored form is the golden
// <name>.stored.json (go test -run TestReferenceCorpus -update).
func TestReferenceCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/reference/*.json")
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	reg := steps.Builtin()
	r := runner.New(&runner.Options{Steps: reg})
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.HasPrefix(name, "bad_") || strings.HasSuffix(name, ".stored") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// SkipValidation: the corpus names entities no store holds.
			if _, err := r.CreateTask(ctx, docs, &runner.Services{Documents: docs}, name, in, &runner.CreateTaskOptions{SkipValidation: true}); err != nil {
				t.Fatalf("task create refused a reference-format file:\n%v", err)
			}
			task, err := r.LoadTask(ctx, docs, registry.Ref{ID: name})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := json.MarshalIndent(task.Steps, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var written, back []map[string]any
			if err := json.Unmarshal(in, &written); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(stored, &back); err != nil {
				t.Fatal(err)
			}
			for i, w := range written {
				seen[w["type"].(string)] = true
				for k, v := range w {
					if rc, ok := v.(map[string]any); ok && k == "retry_config" && rc["go_to_step_id"] != nil {
						// The reference reads go_to_step_id as an alias and
						// writes only retry_from_step_id; so do we.
						v = map[string]any{"retry_from_step_id": rc["go_to_step_id"], "max_retries": rc["max_retries"]}
					}
					if k != "version" && !reflect.DeepEqual(v, back[i][k]) {
						t.Errorf("step %d (%v) %s: wrote %s, read back %s", i+1, w["id"], k, asJSON(v), asJSON(back[i][k]))
					}
				}
				for k := range back[i] {
					if _, ok := w[k]; !ok && k != "version" && k != "fail_task_on_error" {
						t.Errorf("step %d (%v): %s was added on the way through the store", i+1, w["id"], k)
					}
				}
			}
			golden := filepath.Join("testdata", "reference", name+".stored.json")
			stored = append(stored, '\n')
			if *update {
				if err := os.WriteFile(golden, stored, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(stored, want) {
				t.Errorf("stored form differs from %s (-update rewrites it):\n%s", golden, stored)
			}
		})
	}
	for _, typ := range reg.Types() {
		if !seen[typ] {
			t.Errorf("built-in step type %s has no step in testdata/reference", typ)
		}
	}
}

// A file using step types this build does not have (plugin types of the
// reference) is refused naming each unknown type once, with every problem
// placed on its step.
func TestReferenceCorpusUnknownTypes(t *testing.T) {
	in, err := os.ReadFile("testdata/reference/bad_plugin_types.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.ParseSteps(steps.Builtin(), in)
	var te *runner.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *runner.TaskError", err)
	}
	if got := te.UnknownTypes(); !slices.Equal(got, []string{"acme_add_notes", "acme_build_report", "acme_install_tool"}) {
		t.Errorf("unknown types = %v", got)
	}
	var where []string
	for _, p := range te.Problems {
		if !errors.Is(p, runner.ErrUnknownStepType) || p.Field != "type" {
			t.Errorf("unexpected problem: %v", p)
		}
		where = append(where, p.StepID)
	}
	if !slices.Equal(where, []string{"install", "skills", "cli", "again"}) {
		t.Errorf("problems on steps %v", where)
	}
	msg := err.Error()
	for _, want := range []string{"4 problems in the task:", `step 2 (id "install"): field "type": Unknown task step type "acme_install_tool"`,
		"unknown step types: acme_add_notes, acme_build_report, acme_install_tool", "agent-env plugin list"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestReferenceDocuments: env, agent and artifact documents of every type,
// as the Python framework writes them (testdata/reference/envs, agents,
// artifacts; a member named x_... stands for one a newer build added), are
// accepted by this build's typed reads and written back whole: every
// member comes back with its value, null and absent being the same. The
// only members a write may add are empty ones ("", 0, {}, []) and the
// environment_name twin of service_name.
func TestReferenceDocuments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	docs, err := sqlite.Open(ctx, filepath.Join(dir, "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	objs, err := fsobject.New(filepath.Join(dir, "objects"), nil)
	if err != nil {
		t.Fatal(err)
	}
	arts := artifact.New(docs, objs, nil)
	st := envdeploy.Stores{Docs: docs, Artifacts: arts}
	typed := map[string]func(registry.Ref) (any, error){
		artifact.TypeFile:                 func(r registry.Ref) (any, error) { return arts.GetFile(ctx, r) },
		artifact.TypeFileArtifactUniverse: func(r registry.Ref) (any, error) { return arts.GetUniverse(ctx, r) },
		artifact.TypeEnvironment:          func(r registry.Ref) (any, error) { return arts.GetEnvironment(ctx, r) },
		artifact.TypeEnvironmentUniverse:  func(r registry.Ref) (any, error) { return arts.GetEnvironmentUniverse(ctx, r) },
		artifact.TypeDockerImage:          func(r registry.Ref) (any, error) { return arts.GetDockerImage(ctx, r) },
		artifact.TypeSkill:                func(r registry.Ref) (any, error) { return arts.GetSkill(ctx, r) },
		artifact.TypeCLI:                  func(r registry.Ref) (any, error) { return arts.GetCLI(ctx, r) },
		artifact.TypeVMImage:              func(r registry.Ref) (any, error) { return arts.GetVMImage(ctx, r) },
	}
	seen := map[string]bool{}
	for _, kind := range []struct {
		folder string
		coll   registry.Collection
	}{{"envs", registry.Envs}, {"agents", registry.A2AAgents}, {"artifacts", registry.Artifacts}} {
		files, _ := filepath.Glob(filepath.Join("testdata", "reference", kind.folder, "*.json"))
		for _, f := range files {
			t.Run(kind.folder+"/"+filepath.Base(f), func(t *testing.T) {
				in, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var written map[string]any
				if err := json.Unmarshal(in, &written); err != nil {
					t.Fatal(err)
				}
				id := written["id"].(string)
				d, err := docs.Put(ctx, kind.coll, id, in, nil)
				if err != nil {
					t.Fatalf("the store refused it: %v", err)
				}
				var v any
				switch kind.coll {
				case registry.Envs:
					e, err := st.GetEnv(ctx, d.Ref())
					if err != nil {
						t.Fatal(err)
					}
					checkEnv(t, e)
					v = e
				case registry.A2AAgents:
					a, err := st.GetAgent(ctx, d.Ref())
					if err != nil {
						t.Fatal(err)
					}
					if a.DockerImageArtifactRef == nil || a.EnvVars["LOG_LEVEL"] != "info" || a.DefaultModel != "claude-sonnet-4-6" {
						t.Errorf("agent read as %+v", a)
					}
					v = a
				default:
					get, ok := typed[d.Type]
					if !ok {
						get = typed[map[string]string{"service": artifact.TypeEnvironment}[d.Type]]
					}
					if get == nil {
						t.Fatalf("no typed read for artifact type %q", d.Type)
					}
					if v, err = get(d.Ref()); err != nil {
						t.Fatal(err)
					}
				}
				seen[written["type"].(string)] = true
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				var stored, back map[string]any
				_ = json.Unmarshal(d.Data, &stored)
				_ = json.Unmarshal(b, &back)
				for k, sv := range stored {
					if sv != nil && !reflect.DeepEqual(sv, back[k]) {
						t.Errorf("%s: stored %s, written back %s", k, asJSON(sv), asJSON(back[k]))
					}
					if sv == nil && back[k] != nil {
						t.Errorf("%s: stored null, written back %s", k, asJSON(back[k]))
					}
				}
				for k, bv := range back {
					if _, ok := stored[k]; ok || isEmptyJSON(bv) || (k == "environment_name" && bv == stored["service_name"]) {
						continue
					}
					t.Errorf("%s: added %s on the way through", k, asJSON(bv))
				}
			})
		}
	}
	for _, typ := range []string{envdeploy.TypeMCPServer, envdeploy.TypeMulti, envdeploy.TypeGatewayServer, envdeploy.TypeWebsite,
		envdeploy.TypeServiceDB, envdeploy.TypeA2AAgent, artifact.TypeFile, artifact.TypeFileArtifactUniverse, artifact.TypeEnvironment,
		artifact.TypeEnvironmentUniverse, artifact.TypeDockerImage, artifact.TypeSkill, artifact.TypeCLI, artifact.TypeVMImage} {
		if !seen[typ] {
			t.Errorf("no document of type %s in testdata/reference", typ)
		}
	}
}

// checkEnv checks that an env document's references were understood.
func checkEnv(t *testing.T, e *envdeploy.Env) {
	t.Helper()
	ok := true
	switch e.Type {
	case envdeploy.TypeMCPServer:
		ok = e.DockerImageArtifactRef != nil && e.DockerImageArtifactRef.Version > 0 && e.EnvironmentName != "" // env_provider_type absent = gateway
	case envdeploy.TypeGatewayServer:
		ok = e.DockerImageArtifactRef != nil
	case envdeploy.TypeMulti:
		ok = len(e.MCPServerRefs) == 2 && e.MCPServerRefs[0] == (registry.Ref{ID: "items", Version: 3}) && len(e.WebsiteEnvRefs) == 1 && e.Name == "shop"
	case envdeploy.TypeWebsite:
		ok = e.BackendImageArtifactRef != nil && e.FrontendImageArtifactRef != nil && e.EnvironmentName == "storefront"
	case envdeploy.TypeServiceDB:
		ok = e.DBImageArtifactRef != nil && e.DBWebImageArtifactRef != nil && e.DBMCPImageArtifactRef != nil && len(e.Extra) == 1
	default:
		ok = false
	}
	if !ok {
		t.Errorf("%s env read as %+v", e.Type, e)
	}
}

func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// A task document of another build, with members this build does not
// know, loads, and is kept whole in the store (task get prints it so).
func TestReferenceTaskDocumentKeptWhole(t *testing.T) {
	ctx := context.Background()
	docs, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	body := `{"type":"task","description":"newer","x_written_by_a_newer_build":{"k":[1,2]},
		"steps":[{"id":"s","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm","version":null}]}`
	if _, err := docs.Put(ctx, registry.Tasks, "t", json.RawMessage(body), nil); err != nil {
		t.Fatal(err)
	}
	r := runner.New(&runner.Options{Steps: steps.Builtin()})
	task, err := r.LoadTask(ctx, docs, registry.Ref{ID: "t"})
	if err != nil || len(task.Steps) != 1 {
		t.Fatalf("LoadTask: %v", err)
	}
	d, err := docs.Get(ctx, registry.Tasks, registry.Ref{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(d.Data, &m)
	if m["description"] != "newer" || asJSON(m["x_written_by_a_newer_build"]) != `{"k":[1,2]}` {
		t.Errorf("stored task lost members: %s", d.Data)
	}
}
