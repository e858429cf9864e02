package envdeploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
	"github.com/agentenv/agentenv/runner/sandbox/process"
)

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestPythonDocumentsKeptWhole reads env and agent documents as the Python
// framework writes them, with fields this build does not know and metadata
// values that are not strings: the typed read accepts them, and the stored
// documents keep every field through a read and a metadata update (the
// typed structs are never written back; puts build fresh versions).
func TestPythonDocumentsKeptWhole(t *testing.T) {
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	docs := map[registry.Collection]string{
		registry.Envs: `{"type":"mcp_server","environment_name":"py","image_name":"py:v1",
			"website_envs":[{"name":"shop","port":8080}],"future_field":{"nested":[1,2.5,"x"]},
			"metadata":{"min_disk_size_gb":20,"owner":"py","tags":["a"]}}`,
		registry.A2AAgents: `{"type":"a2a_agent","image_name":"pyagent:v1","default_model":"m",
			"future_field":{"nested":true},"metadata":{"min_disk_size_gb":20}}`,
	}
	for c, body := range docs {
		id := "@local/py/" + string(c)
		if _, err := st.Docs.Put(ctx, c, id, json.RawMessage(body), nil); err != nil {
			t.Fatal(err)
		}
		ref := registry.Ref{ID: id, Version: 1}
		var err error
		if c == registry.Envs {
			_, err = st.GetEnv(ctx, ref)
		} else {
			_, err = st.GetAgent(ctx, ref)
		}
		if err != nil {
			t.Errorf("%s: typed read of a Python document: %v", c, err)
		}
		if mu, ok := st.Docs.(registry.MetadataUpdater); ok {
			if _, err := mu.UpdateMetadata(ctx, c, ref, "", map[string]any{"note": "x"}); err != nil {
				t.Fatalf("%s: UpdateMetadata: %v", c, err)
			}
		}
		d, err := st.Docs.Get(ctx, c, ref)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		_ = json.Unmarshal([]byte(body), &want)
		_ = json.Unmarshal(d.Data, &got)
		for k, v := range want {
			wb, _ := json.Marshal(v)
			gb, _ := json.Marshal(got[k])
			if k == "metadata" {
				m, _ := got[k].(map[string]any)
				delete(m, "note")
				delete(m, "updated_at")
				gb, _ = json.Marshal(m)
			}
			if string(wb) != string(gb) {
				t.Errorf("%s: field %s stored as %s, written %s", c, k, gb, wb)
			}
		}
	}
}

// TestPutsWriteReferenceNames: what put writes uses the Python framework's
// field names (docker_image_artifact {id, version, type}, mcp_server_envs
// and website_envs, default_env_vars, metadata.default_model), never the
// names older builds wrote.
func TestPutsWriteReferenceNames(t *testing.T) {
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "items", EnvironmentName: "items", Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutMulti(ctx, envdeploy.MultiInput{ID: "shop", MCPServers: []string{"items"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutAgent(ctx, envdeploy.AgentInput{ID: "helper", Image: envdeploy.ImageInput{Binary: bins.Agent},
		EnvVars: map[string]string{"LOG": "1"}, DefaultModel: "m1"}); err != nil {
		t.Fatal(err)
	}
	stored := func(c registry.Collection, id string) map[string]any {
		t.Helper()
		d, err := st.Docs.Get(ctx, c, registry.Ref{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(d.Data, &m); err != nil {
			t.Fatal(err)
		}
		for _, old := range []string{"docker_image_artifact_ref", "mcp_server_refs", "env_vars", "default_model"} {
			if _, ok := m[old]; ok {
				t.Errorf("%s %s: wrote the old name %s", c, id, old)
			}
		}
		return m
	}
	items := stored(registry.Envs, "items")
	if got := asJSON(items["docker_image_artifact"]); got != `{"id":"items__env_image","type":"docker_image","version":1}` {
		t.Errorf("mcp_server docker_image_artifact = %s", got)
	}
	if items["environment_name"] != "items" || items["service_name"] != "items" || items["env_provider_type"] != "gateway" || asJSON(items["metadata"]) != "{}" {
		t.Errorf("mcp_server document = %s", asJSON(items))
	}
	shop := stored(registry.Envs, "shop")
	if asJSON(shop["mcp_server_envs"]) != `[{"id":"items","type":"mcp_server","version":1}]` || asJSON(shop["website_envs"]) != `[]` {
		t.Errorf("multi document = %s", asJSON(shop))
	}
	agent := stored(registry.A2AAgents, "helper")
	if asJSON(agent["docker_image_artifact"]) != `{"id":"a2a-agent-helper","type":"docker_image","version":1}` ||
		asJSON(agent["default_env_vars"]) != `{"LOG":"1"}` || asJSON(agent["metadata"]) != `{"default_model":"m1"}` {
		t.Errorf("agent document = %s", asJSON(agent))
	}
	// The typed reads give back what was put.
	a, err := st.GetAgent(ctx, registry.Ref{ID: "helper"})
	if err != nil || a.DefaultModel != "m1" || a.EnvVars["LOG"] != "1" || a.DockerImageArtifactRef == nil || a.ImageName == "" {
		t.Errorf("GetAgent = %+v, %v", a, err)
	}
}

// TestOlderBuildsDocumentsRead: env and agent documents written by older
// builds of this project (docker_image_artifact_ref, mcp_server_refs,
// env_vars, default_model at the top) still read.
func TestOlderBuildsDocumentsRead(t *testing.T) {
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	put := func(c registry.Collection, id, body string) {
		t.Helper()
		if _, err := st.Docs.Put(ctx, c, id, json.RawMessage(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	put(registry.Envs, "old", `{"type":"mcp_server","environment_name":"old","env_provider_type":"gateway","image_name":"localhost:5000/old__env_image:v1",
		"docker_image_artifact_ref":{"id":"old__env_image","version":1},"binary_artifact_ref":{"id":"old__env_image__binary","version":1}}`)
	put(registry.Envs, "oldmulti", `{"type":"multi","mcp_server_refs":[{"id":"old","version":1}],"env_provider_type":"gateway"}`)
	put(registry.A2AAgents, "oldagent", `{"type":"a2a_agent","image_name":"a:v1","docker_image_artifact_ref":{"id":"a2a-agent-oldagent","version":2},
		"env_vars":{"K":"V"},"default_model":"m0"}`)
	e, err := st.GetEnv(ctx, registry.Ref{ID: "old"})
	if err != nil || e.DockerImageArtifactRef == nil || *e.DockerImageArtifactRef != (registry.Ref{ID: "old__env_image", Version: 1}) ||
		e.BinaryArtifactRef == nil || e.ImageName != "localhost:5000/old__env_image:v1" || len(e.Extra) != 0 {
		t.Errorf("old mcp_server = %+v, %v", e, err)
	}
	m, err := st.GetEnv(ctx, registry.Ref{ID: "oldmulti"})
	if err != nil || len(m.MCPServerRefs) != 1 || m.MCPServerRefs[0] != (registry.Ref{ID: "old", Version: 1}) {
		t.Errorf("old multi = %+v, %v", m, err)
	}
	a, err := st.GetAgent(ctx, registry.Ref{ID: "oldagent"})
	if err != nil || a.EnvVars["K"] != "V" || a.DefaultModel != "m0" || a.DockerImageArtifactRef.Version != 2 || len(a.Extra) != 0 {
		t.Errorf("old agent = %+v, %v", a, err)
	}
	// Written again, they take the reference's names.
	b, _ := json.Marshal(m)
	if !strings.Contains(string(b), `"mcp_server_envs":[{"id":"old","version":1,"type":"mcp_server"}]`) || strings.Contains(string(b), "mcp_server_refs") {
		t.Errorf("old multi written as %s", b)
	}
}

// TestNamespacedIDsMapToImageNames: an @local or upper-case agent or env id
// is not refused at put: its image artifact keeps to the @local store and
// its image name is a valid mapping of the id, distinct per id.
func TestNamespacedIDsMapToImageNames(t *testing.T) {
	bins := envdeploytest.Build(t)
	st := envdeploytest.NewStores(t)
	local := envdeploytest.NewStores(t)
	st.Route = func(id string) (registry.DocumentStore, *artifact.Store) {
		if registry.IsLocalID(id) {
			return local.Docs, local.Artifacts
		}
		return nil, nil
	}
	ctx := context.Background()
	p := &envdeploy.Putter{Stores: st, TempDir: t.TempDir()}
	names := map[string]bool{}
	for _, id := range []string{"@local/pkg/hello/Helper", "@local/pkg/hello/helper", "Helper"} {
		a, err := p.PutAgent(ctx, envdeploy.AgentInput{ID: id, Image: envdeploy.ImageInput{Binary: bins.Agent}})
		if err != nil {
			t.Fatalf("PutAgent(%s): %v", id, err)
		}
		repo := strings.TrimSuffix(a.ImageName[strings.Index(a.ImageName, "/")+1:], ":"+a.ImageName[strings.LastIndex(a.ImageName, ":")+1:])
		if !registry.ValidRepository(repo) || names[a.ImageName] {
			t.Errorf("%s: image name %s (repository %s) invalid or shared", id, a.ImageName, repo)
		}
		names[a.ImageName] = true
		if registry.IsLocalID(id) {
			if !registry.IsLocalID(a.DockerImageArtifactRef.ID) {
				t.Errorf("%s: image artifact %s is not an @local id", id, a.DockerImageArtifactRef.ID)
			}
			if _, err := local.Artifacts.GetDockerImage(ctx, *a.DockerImageArtifactRef); err != nil {
				t.Errorf("%s: image artifact not in the @local store: %v", id, err)
			}
		}
	}
	if _, err := p.PutMCPServer(ctx, envdeploy.MCPServerInput{ID: "@local/pkg/hello/Items", EnvironmentName: "items",
		Image: envdeploy.ImageInput{Binary: bins.Echo}}); err != nil {
		t.Errorf("PutMCPServer(@local/...): %v", err)
	}
}

// A multi env whose website_envs names an env that is not a website (a
// document the reference or a hand edit wrote) is refused at deploy,
// naming the field and the member, before anything starts.
func TestDeployRefusesMultiWithWebsites(t *testing.T) {
	st := envdeploytest.NewStores(t)
	ctx := context.Background()
	for id, body := range map[string]string{
		"mail": `{"type":"mcp_server","environment_name":"mail"}`,
		"shop": `{"type":"mcp_server","environment_name":"shop"}`,
		"office": `{"type":"multi","mcp_server_envs":[{"id":"mail","version":1,"type":"mcp_server"}],
		"website_envs":[{"id":"shop","version":1,"type":"website"}]}`,
	} {
		if _, err := st.Docs.Put(ctx, registry.Envs, id, json.RawMessage(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	proc := process.New(t.TempDir(), nil)
	d := &envdeploy.Deployer{Stores: st, Backends: map[string]envdeploy.Backend{"process": proc}}
	_, err := d.Deploy(ctx, envdeploy.DeployRequest{Env: registry.Ref{ID: "office"}, Sandbox: "process"})
	if !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), "website_envs") || !strings.Contains(err.Error(), "shop") {
		t.Fatalf("deploy of a multi env with a non-website in website_envs: %v", err)
	}
	if left := proc.Groups(); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}
