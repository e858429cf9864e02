package universegates

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/gwclient"
	"github.com/agentenv/agentenv/runner/steps/snapshotenv"
)

// TypeRoundtrip is verify_universe_load_export_roundtrip's type name.
const TypeRoundtrip = "verify_universe_load_export_roundtrip"

// Gate is the verification key (and metadata key of the details) both
// steps write.
const Gate = "universe_compatibility"

// RoundtripInfo registers verify_universe_load_export_roundtrip.
func RoundtripInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeRoundtrip, New: func() runner.Step { return new(Roundtrip) }}
}

// Roundtrip is verify_universe_load_export_roundtrip. It loads universe
// artifact universe_artifact_id into the deployed env (data/reset and
// data/add per server), exports every loaded server (data/get), stores
// the export as environment_universe "<prefix>-export1", loads that back,
// exports again and compares: the original against export 1 (what the
// load loses) and export 1 against export 2 (idempotency). The env is
// left holding export 1's reload.
type Roundtrip struct {
	EnvID                   string `json:"env_id"`
	UniverseArtifactID      string `json:"universe_artifact_id"`
	UniverseArtifactVersion int    `json:"universe_artifact_version,omitempty"`
	// EmitFileArtifactUniverse also stores the three snapshots as a
	// file_artifact_universe (original/, export_1/, export_2/<server>.json)
	// for an agent judge to read from its files.
	EmitFileArtifactUniverse bool `json:"emit_file_artifact_universe,omitempty"`
	// PersistResult is the reference's "this step is the final writer"
	// switch (default true); false marks the details final:false, for a
	// combine_universe_verdicts step to finalize.
	PersistResult *bool  `json:"persist_result,omitempty"`
	EnvStepID     string `json:"env_step_id,omitempty"` // ours
}

var (
	_ runner.Step         = (*Roundtrip)(nil)
	_ runner.Validator    = (*Roundtrip)(nil)
	_ runner.EntityRefser = (*Roundtrip)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Roundtrip) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id"), runner.ArtifactRef("universe_artifact_id", "universe_artifact_version")}
}

// Validate implements runner.Validator.
func (c *Roundtrip) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	if c.UniverseArtifactID == "" {
		return runner.Required("universe_artifact_id")
	}
	if c.UniverseArtifactVersion < 0 {
		return runner.Invalid("universe_artifact_version", "must be >= 1, got %d", c.UniverseArtifactVersion)
	}
	return nil
}

// ValidationID is the id prefix of what a validation of universe
// (id, version) in env (id, version) stores: "<env>-validate-v<n>-<universe>-v<m>".
func ValidationID(envID string, envVersion int, universeID string, universeVersion int) string {
	safe := strings.NewReplacer("/", "-", "@", "")
	return safe.Replace(fmt.Sprintf("%s-validate-v%d-%s-v%d", envID, envVersion, universeID, universeVersion))
}

// Run implements runner.Step.
func (c *Roundtrip) Run(ctx context.Context, rc *runner.RunContext) error {
	env, err := gwclient.ForEnv(rc, c.EnvID, c.EnvStepID)
	if err != nil {
		return err
	}
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return err
	}
	u, err := arts.GetEnvironmentUniverse(ctx, registry.Ref{ID: c.UniverseArtifactID, Version: c.UniverseArtifactVersion})
	if err != nil {
		return fmt.Errorf("universe_artifact_id: %w", err)
	}
	envVersion := 0
	if v, ok := env.Entry["env_version"].(float64); ok {
		envVersion = int(v)
	} else if v, ok := env.Entry["env_version"].(int); ok {
		envVersion = v
	}
	prefix := ValidationID(c.EnvID, envVersion, u.ID, u.Version)
	servers := map[string]bool{}
	for _, s := range env.Servers {
		servers[s] = true
	}
	// Phase 1: load the original, keeping what it holds for comparison.
	type loaded struct {
		env      *artifact.Environment
		original map[string]any // nil when the artifact is not JSON
	}
	var names []string
	byName := map[string]*loaded{}
	var skipped []string
	for _, ref := range u.EnvironmentArtifactRefs {
		e, err := arts.GetEnvironment(ctx, ref)
		if err != nil {
			return fmt.Errorf("universe %s: %w", u.Ref(), err)
		}
		if !servers[e.EnvironmentName] {
			skipped = append(skipped, e.EnvironmentName)
			continue
		}
		body, f, err := readFile(ctx, arts, e.FileArtifactRef)
		if err != nil {
			return fmt.Errorf("universe %s: environment artifact %s: %w", u.Ref(), e.Ref(), err)
		}
		if err := load(ctx, env, e.EnvironmentName, f.Filename, f.ContentType, body); err != nil {
			return err
		}
		l := &loaded{env: e}
		var v any
		if json.Unmarshal(body, &v) == nil {
			l.original = asObject(Normalize(v))
		}
		names = append(names, e.EnvironmentName)
		byName[e.EnvironmentName] = l
	}
	if len(names) == 0 {
		return fmt.Errorf("universe %s: none of its environments (%s) is a server of env %s (%s)", u.Ref(),
			strings.Join(skipped, ", "), c.EnvID, strings.Join(env.Servers, ", "))
	}
	sort.Strings(names)
	// Phase 2: export 1, stored as a universe.
	export1, err := exportAll(ctx, env, names)
	if err != nil {
		return err
	}
	var refs []registry.Ref
	export1Files := map[string]registry.Ref{}
	for _, n := range names {
		e, err := arts.PutEnvironment(ctx, prefix+"-export1-"+n, artifact.EnvironmentInput{EnvironmentName: n, Filename: n + ".json",
			ContentType: "application/json", Description: "export #1 of " + n + " for universe compatibility validation",
			Body: bytes.NewReader(export1[n])})
		if err != nil {
			return err
		}
		refs = append(refs, e.Ref())
		export1Files[n] = e.FileArtifactRef
	}
	exported, err := arts.PutEnvironmentUniverse(ctx, prefix+"-export1", refs, nil, "export #1 of universe "+u.Ref().String()+" in env "+c.EnvID)
	if err != nil {
		return err
	}
	// Phase 3: reload export 1, export 2.
	for _, n := range names {
		if err := load(ctx, env, n, n+".json", "application/json", export1[n]); err != nil {
			return err
		}
	}
	export2, err := exportAll(ctx, env, names)
	if err != nil {
		return err
	}
	// Phase 4: compare.
	services := map[string]any{}
	compatible := true
	var problems []string
	for _, n := range names {
		e1, e2 := decodeObject(export1[n]), decodeObject(export2[n])
		var loadIssues []Issue
		if o := byName[n].original; o != nil {
			loadIssues = Compare(o, e1, "universe", "export1")
		}
		issues, ok := Classify(loadIssues, Compare(e1, e2, "export1", "export2"))
		compatible = compatible && ok
		services[n] = map[string]any{"compatible": ok, "issues": issues}
		problems = append(problems, criticalProblems(n, issues)...)
	}
	details := map[string]any{"env_id": c.EnvID, "universe_artifact_id": u.ID, "universe_artifact_version": u.Version,
		"compatible": compatible, "services": services, "environments": services,
		"exported_universe_artifact_id": exported.ID, "skipped_environments": nonNil(skipped),
		"final": c.PersistResult == nil || *c.PersistResult}
	if c.EmitFileArtifactUniverse {
		members := map[string]registry.Ref{}
		for _, n := range names {
			members["original/"+n+".json"] = byName[n].env.FileArtifactRef
			members["export_1/"+n+".json"] = export1Files[n]
			f, err := arts.PutFile(ctx, prefix+"-export2-"+n, artifact.FileInput{Filename: n + ".json",
				Description: "export #2 of " + n + " for the universe judge", ContentType: "application/json", Body: bytes.NewReader(export2[n])})
			if err != nil {
				return err
			}
			members["export_2/"+n+".json"] = f.Ref()
		}
		fau, err := arts.PutUniverse(ctx, prefix+"-fau", members, &artifact.UniverseOptions{Description: "universe round trip snapshots for the judge"})
		if err != nil {
			return err
		}
		details["file_artifact_universe_id"] = fau.ID
	}
	Record(rc, details, problems)
	rc.Logger().Info("universe round trip", "env_id", c.EnvID, "universe", u.Ref().String(), "compatible", compatible)
	return nil
}

// Record writes the verdict: metadata.universe_compatibility and
// verifications.universe_compatibility (score 1 when compatible, one row
// per critical issue).
func Record(rc *runner.RunContext, details map[string]any, problems []string) {
	rows := make([]runner.Row, 0, len(problems)+1)
	for _, p := range problems {
		rows = append(rows, runner.Row{"gate": Gate, "result": false, "score": 0.0, "justification": p})
	}
	score := 0.0
	if details["compatible"] == true {
		score = 1
		rows = append(rows, runner.Row{"gate": Gate, "result": true, "score": 1.0, "justification": "round trip preserves the universe"})
	}
	rc.SetVerification(Gate, runner.Verification{Score: score, Results: rows})
	rc.SetMetadata(Gate, details)
}

// criticalProblems are the rows of a server's critical issues.
func criticalProblems(server string, issues []Issue) []string {
	var out []string
	for _, i := range issues {
		if i["critical"] == true {
			loc := fmt.Sprint(i["entity"])
			if f, _ := i["field"].(string); f != "" {
				loc += "." + f
			}
			out = append(out, fmt.Sprintf("server %s: %s %s (%s): %s", server, i["type"], loc, i["phase"], i["detail"]))
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func readFile(ctx context.Context, arts *artifact.Store, ref registry.Ref) ([]byte, *artifact.File, error) {
	r, f, err := arts.OpenFile(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return b, f, err
}

// load replaces server's data with one inline file, as load_artifact does.
func load(ctx context.Context, env *gwclient.Env, server, filename, mime string, body []byte) error {
	if mime == "" {
		mime = "application/json"
	}
	srv := env.Server(server)
	if err := srv.ResetData(ctx); err != nil {
		return fmt.Errorf("env %s server %s refused data/reset: %w", env.EnvID, server, err)
	}
	part := protocol.Part{Kind: protocol.PartKindFile, File: &protocol.FileContent{Name: filename, MimeType: mime, Bytes: body}}
	if err := srv.AddData(ctx, []protocol.Part{part}); err != nil {
		return fmt.Errorf("env %s server %s refused data/add of %s: %w", env.EnvID, server, filename, err)
	}
	return nil
}

// exportAll reads each server's data as one JSON document.
func exportAll(ctx context.Context, env *gwclient.Env, names []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, n := range names {
		parts, err := env.Server(n).GetData(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("env %s server %s: data/get: %w", env.EnvID, n, err)
		}
		b, err := snapshotenv.ExportBody(parts)
		if err != nil {
			return nil, fmt.Errorf("env %s server %s: %w", env.EnvID, n, err)
		}
		out[n] = b
	}
	return out, nil
}

// asObject is an export as entity → records; a document that is not an
// object is compared as the one entity "data".
func asObject(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"data": v}
}

func decodeObject(b []byte) map[string]any {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return map[string]any{"data": string(b)}
	}
	return asObject(Normalize(v))
}
