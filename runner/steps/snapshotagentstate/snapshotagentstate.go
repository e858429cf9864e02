// Package snapshotagentstate is the snapshot_agent_state step: save a
// deployed agent's conversation (the context a prompt_agent step used)
// through the agent's snapshot extension (urn:agentenv:snapshot/v1), and
// optionally the state of each server of an env, into a new version of a
// file_artifact_universe. A later task can load that universe, and an
// agent's snapshot load can resume the conversation from it.
//
// The agent uploads its objects through write grants. The runner has no
// object store reachable over HTTP, so the step serves the grants itself:
// a receiver on a loopback port that accepts one PUT per object at an
// unguessable path, for the step's duration only. Agents on this machine
// (the process and local sandboxes) reach it; the agentsdk accepts http
// grant URLs only for loopback hosts.
//
// Universe members: trajectory.json, workspace.tar (when the agent keeps
// one) and, with env_id, services/<server>.json (each server's data/get
// export). Recorded in metadata.agent_snapshots[] as {id, version,
// bundle_object_url, source_agent_name, source_context_id}; with env_id
// also metadata.snapshot_json_url, a JSON string {server: object URL}.
package snapshotagentstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/steps/internal/agentext"
	"github.com/agentenv/agentenv/runner/steps/snapshotenv"
)

// Type is the step type name.
const Type = "snapshot_agent_state"

// KeySnapshots is the metadata list the step appends to.
const KeySnapshots = "agent_snapshots"

// Object limits (the reference's runner limits).
const (
	maxTrajectoryBytes = 1 << 30
	maxWorkspaceBytes  = 5 << 30
)

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields (the reference's names).
type Config struct {
	ArtifactID         string `json:"artifact_id"`
	PromptID           string `json:"prompt_id"`
	AgentName          string `json:"agent_name,omitempty"` // default-agent
	EnvID              string `json:"env_id,omitempty"`
	UniverseArtifactID string `json:"universe_artifact_id,omitempty"`
	TimeoutSeconds     *int   `json:"timeout_seconds,omitempty"` // 120
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser. artifact_id is the step's
// output (a new universe version), so it is not checked for existence.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{{Field: "artifact_id", Collection: string(registry.Artifacts), Output: true},
		runner.EnvRef("env_id"), runner.ArtifactRef("universe_artifact_id", "")}
}

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.ArtifactID == "" {
		return runner.Required("artifact_id")
	}
	if err := registry.ValidateID(c.ArtifactID); err != nil {
		return runner.Invalid("artifact_id", "%v", err)
	}
	if c.PromptID == "" {
		return runner.Required("prompt_id")
	}
	if c.TimeoutSeconds != nil && *c.TimeoutSeconds <= 0 {
		return runner.Invalid("timeout_seconds", "must be positive")
	}
	if c.UniverseArtifactID != "" && c.EnvID == "" {
		return runner.Invalid("universe_artifact_id", "goes with env_id (the env whose servers are captured)")
	}
	return nil
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	entry, name, err := agentext.Entry(rc, c.AgentName, protocol.URISnapshot)
	if err != nil {
		return err
	}
	pr, err := rc.PromptResponseEntry(c.PromptID)
	if err != nil {
		return fmt.Errorf("prompt_id: %w", err)
	}
	contextID, _ := pr["a2a_context_id"].(string)
	if contextID == "" {
		return fmt.Errorf("prompt_id %q: the prompt response has no a2a_context_id", c.PromptID)
	}
	if pn, _ := pr["agent_name"].(string); pn != "" && pn != name {
		return fmt.Errorf("prompt_id %q was answered by agent %q, not %q", c.PromptID, pn, name)
	}
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return err
	}
	timeout := 120 * time.Second
	if c.TimeoutSeconds != nil {
		timeout = time.Duration(*c.TimeoutSeconds) * time.Second
	}
	dir, err := os.MkdirTemp("", "agentenv-agent-snapshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	recv, err := newReceiver(dir)
	if err != nil {
		return err
	}
	defer recv.close()
	expires := time.Now().Add(timeout).UTC().Truncate(time.Second)
	objects := map[string]protocol.WriteObject{
		protocol.SnapshotTrajectory: recv.grant("trajectory.json", "application/json", maxTrajectoryBytes, expires),
		protocol.SnapshotWorkspace:  recv.grant("workspace.tar", "application/x-tar", maxWorkspaceBytes, expires),
	}
	api, _ := entry["api_url"].(string)
	if api == "" {
		api, _ = entry["a2a_url"].(string)
	}
	ac := a2aclient.New(api, &http.Client{Timeout: timeout})
	b, err := ac.ExtOK(ctx, http.MethodPost, protocol.AgentSnapshotPath, protocol.SnapshotSaveRequest{ContextID: contextID, Objects: objects})
	if err != nil {
		return fmt.Errorf("agent %q snapshot save: %w", name, err)
	}
	var saved protocol.SnapshotSaveResponse
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("agent %q snapshot save: answer: %w", name, err)
	}
	for obj, up := range saved.Objects {
		file := map[string]string{protocol.SnapshotTrajectory: "trajectory.json", protocol.SnapshotWorkspace: "workspace.tar"}[obj]
		if got := recv.size(file); file == "" || got != up.SizeBytes {
			return fmt.Errorf("agent %q snapshot save: object %q reported %d bytes, %d arrived", name, obj, up.SizeBytes, got)
		}
	}
	if _, ok := saved.Objects[protocol.SnapshotTrajectory]; !ok {
		return fmt.Errorf("agent %q snapshot save: no trajectory object was saved", name)
	}
	recv.close() // no more uploads
	var services []string
	if c.EnvID != "" {
		if services, err = c.captureEnv(ctx, rc, dir); err != nil {
			return err
		}
	}
	u, err := arts.PutUniverseFromDir(ctx, c.ArtifactID, dir, &artifact.UniverseOptions{Bundle: true,
		Description: fmt.Sprintf("conversation %s of agent %s", contextID, name)})
	if err != nil {
		return fmt.Errorf("artifact_id %q: %w", c.ArtifactID, err)
	}
	rc.AppendMetadata(KeySnapshots, map[string]any{"id": u.ID, "version": u.Version, "bundle_object_url": u.BundleS3URL,
		"source_agent_name": name, "source_context_id": contextID, "step_id": rc.StepID()})
	if len(services) > 0 {
		urls := map[string]string{}
		for _, s := range services {
			f, err := arts.GetFile(ctx, u.FileArtifactRefs["services/"+s+".json"])
			if err == nil {
				urls[s] = f.S3URL
			}
		}
		j, _ := json.Marshal(urls)
		rc.SetMetadata("snapshot_json_url", string(j))
	}
	rc.Logger().Info("agent state snapshotted", "agent_name", name, "context_id", contextID, "artifact_id", u.ID, "version", u.Version)
	return nil
}

// captureEnv writes each server's data/get export to services/<name>.json.
func (c *Config) captureEnv(ctx context.Context, rc *runner.RunContext, dir string) ([]string, error) {
	env, err := gwclient.ForEnv(rc, c.EnvID, "")
	if err != nil {
		return nil, err
	}
	servers := env.Servers
	if c.UniverseArtifactID != "" {
		// Only the servers the universe names, as the reference does.
		arts, err := rc.Services().ArtifactStore()
		if err != nil {
			return nil, err
		}
		eu, err := arts.GetEnvironmentUniverse(ctx, registry.Ref{ID: c.UniverseArtifactID})
		if err != nil {
			return nil, fmt.Errorf("universe_artifact_id: %w", err)
		}
		want := map[string]bool{}
		for _, r := range eu.EnvironmentArtifactRefs {
			if e, err := arts.GetEnvironment(ctx, r); err == nil {
				want[e.EnvironmentName] = true
			}
		}
		servers = nil
		for _, s := range env.Servers {
			if want[s] {
				servers = append(servers, s)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "services"), 0o700); err != nil {
		return nil, err
	}
	var done []string
	for _, s := range servers {
		parts, err := env.Server(s).GetData(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("env %s server %s: data/get: %w", c.EnvID, s, err)
		}
		body, err := snapshotenv.ExportBody(parts)
		if err != nil {
			return nil, fmt.Errorf("env %s server %s: %w", c.EnvID, s, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "services", s+".json"), body, 0o600); err != nil {
			return nil, err
		}
		done = append(done, s)
	}
	return done, nil
}

// receiver accepts the agent's uploads: one PUT per granted file, at a
// random path, into dir.
type receiver struct {
	dir, token string
	ln         net.Listener
	srv        *http.Server
	once       sync.Once

	mu    sync.Mutex
	limit map[string]int64 // file -> max bytes
	sizes map[string]int64 // file -> bytes received
}

func newReceiver(dir string) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("snapshot receiver: %w", err)
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	r := &receiver{dir: dir, token: hex.EncodeToString(b), ln: ln, limit: map[string]int64{}, sizes: map[string]int64{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.put), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) grant(file, media string, max int64, expires time.Time) protocol.WriteObject {
	r.mu.Lock()
	r.limit[file] = max
	r.mu.Unlock()
	u := "http://" + r.ln.Addr().String() + "/" + r.token + "/" + file
	return protocol.WriteObject{MediaType: media, MaxBytes: max,
		Write: protocol.HTTPGrant{Kind: protocol.GrantHTTPPut, URL: u, ExpiresAt: expires}}
}

func (r *receiver) put(w http.ResponseWriter, req *http.Request) {
	file, ok := strings.CutPrefix(req.URL.Path, "/"+r.token+"/")
	r.mu.Lock()
	max, granted := r.limit[file]
	_, done := r.sizes[file]
	r.mu.Unlock()
	switch {
	case req.Method != http.MethodPut:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	case !ok || !granted:
		http.NotFound(w, req)
		return
	case done:
		http.Error(w, "already uploaded", http.StatusConflict)
		return
	case req.ContentLength > max:
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	f, err := os.Create(filepath.Join(r.dir, file))
	if err != nil {
		http.Error(w, "cannot store", http.StatusInternalServerError)
		return
	}
	n, err := io.Copy(f, io.LimitReader(req.Body, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || n > max || (req.ContentLength >= 0 && n != req.ContentLength) {
		_ = os.Remove(f.Name())
		http.Error(w, "upload incomplete or too large", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.sizes[file] = n
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) size(file string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.sizes[file]; ok {
		return n
	}
	return -1
}

func (r *receiver) close() {
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.srv.Shutdown(ctx)
	})
}
