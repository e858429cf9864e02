// Package addskills is the add_skills step: push skills to a deployed
// agent through its skill-config extension (urn:agentenv:skill-config/v1,
// inline SKILL.md). A skill comes from one of three places:
//
//   - inline in the step (name, description, body and the optional
//     Agent Skills frontmatter fields), rendered into SKILL.md;
//   - a stored artifact (skill_artifact_id): a file artifact holding a
//     SKILL.md whose frontmatter gives the name and description (this
//     build has no separate skill artifact type);
//   - a pointer the step writes itself: for each cli_artifact_ids entry a
//     skill telling the agent where the CLI installed on it lives
//     (metadata.installed_clis[<agent>][<cli id>]), and for each
//     file_artifact_universe_ids entry a skill telling it where a
//     load_artifact step put those files (metadata.loaded_file_artifact_universes).
//
// The reference's s3_url form (a skill folder in an object store, sent as
// read grants) is refused at validation: this build sends SKILL.md text
// only. Added skill names are recorded in metadata.added_skills[] (ours).
package addskills

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/internal/agentext"
)

// Type is the step type name.
const Type = "add_skills"

// KeyAddedSkills is the metadata list the step appends to (ours).
const KeyAddedSkills = "added_skills"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Skill is one skill of the step (the reference's fields).
type Skill struct {
	Name                 string            `json:"name,omitempty"`
	Description          string            `json:"description,omitempty"`
	Body                 string            `json:"body,omitempty"`
	License              string            `json:"license,omitempty"`
	Compatibility        string            `json:"compatibility,omitempty"`
	Metadata             map[string]string `json:"metadata,omitempty"`
	AllowedTools         string            `json:"allowed_tools,omitempty"`
	S3URL                string            `json:"s3_url,omitempty"`
	SkillArtifactID      string            `json:"skill_artifact_id,omitempty"`
	SkillArtifactVersion int               `json:"skill_artifact_version,omitempty"`
}

// Config is the step's fields (the reference's names).
type Config struct {
	Skills                  []Skill  `json:"skills,omitempty"`
	CLIArtifactIDs          []string `json:"cli_artifact_ids,omitempty"`
	FileArtifactUniverseIDs []string `json:"file_artifact_universe_ids,omitempty"`
	AgentName               string   `json:"agent_name,omitempty"` // default-agent
}

var (
	_ runner.Step         = (*Config)(nil)
	_ runner.Validator    = (*Config)(nil)
	_ runner.EntityRefser = (*Config)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{
		{Field: "skills", Collection: string(registry.Artifacts), List: true, ListKey: "skill_artifact_id", VersionField: "skill_artifact_version"},
		{Field: "cli_artifact_ids", Collection: string(registry.Artifacts), List: true},
		{Field: "file_artifact_universe_ids", Collection: string(registry.Artifacts), List: true},
	}
}

// skillName is the skill-config name rule.
var skillName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if len(c.Skills)+len(c.CLIArtifactIDs)+len(c.FileArtifactUniverseIDs) == 0 {
		return runner.Invalid("skills", "give at least one of skills, cli_artifact_ids and file_artifact_universe_ids")
	}
	for i, s := range c.Skills {
		if err := s.validate(); err != nil {
			return runner.Invalid("skills", "skills[%d]: %v", i, err)
		}
	}
	for _, f := range []struct {
		name string
		ids  []string
	}{{"cli_artifact_ids", c.CLIArtifactIDs}, {"file_artifact_universe_ids", c.FileArtifactUniverseIDs}} {
		seen := map[string]bool{}
		for _, id := range f.ids {
			if id == "" || seen[id] {
				return runner.Invalid(f.name, "ids must be non-empty and unique, got %q", id)
			}
			seen[id] = true
		}
	}
	return nil
}

func (s Skill) validate() error {
	modes := 0
	for _, set := range []bool{s.Body != "", s.S3URL != "", s.SkillArtifactID != ""} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return fmt.Errorf("give exactly one of body (inline), s3_url and skill_artifact_id")
	}
	if s.S3URL != "" {
		return fmt.Errorf("s3_url: skill folders in an object store are not supported by this build; give the SKILL.md body inline or a skill_artifact_id")
	}
	if s.SkillArtifactID != "" {
		if s.Name != "" || s.Description != "" || s.License != "" || s.Compatibility != "" || len(s.Metadata) > 0 || s.AllowedTools != "" {
			return fmt.Errorf("a skill_artifact_id skill takes its name, description and frontmatter from the artifact's SKILL.md")
		}
		if s.SkillArtifactVersion < 0 {
			return fmt.Errorf("skill_artifact_version must be positive")
		}
		return nil
	}
	if s.SkillArtifactVersion != 0 {
		return fmt.Errorf("skill_artifact_version goes with skill_artifact_id")
	}
	if s.Name == "" || s.Description == "" {
		return fmt.Errorf("an inline skill needs name and description")
	}
	if !skillName.MatchString(s.Name) {
		return fmt.Errorf("name %q: want letters, digits, '.', '_' or '-' (at most 128)", s.Name)
	}
	if strings.ContainsAny(s.Description, "\n\r") {
		return fmt.Errorf("description must be one line (it goes into the SKILL.md frontmatter)")
	}
	return nil
}

// SkillMD renders the skill's SKILL.md: YAML frontmatter, then the body.
func (s Skill) SkillMD() string {
	lines := []string{"---", "name: " + s.Name, "description: " + s.Description}
	if s.License != "" {
		lines = append(lines, "license: "+s.License)
	}
	if s.Compatibility != "" {
		lines = append(lines, "compatibility: "+s.Compatibility)
	}
	if len(s.Metadata) > 0 {
		keys := make([]string, 0, len(s.Metadata))
		for k := range s.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lines = append(lines, "metadata:")
		for _, k := range keys {
			lines = append(lines, fmt.Sprintf("  %s: %q", k, s.Metadata[k]))
		}
	}
	if s.AllowedTools != "" {
		lines = append(lines, "allowed-tools: "+s.AllowedTools)
	}
	lines = append(lines, "---")
	if s.Body != "" {
		lines = append(lines, "", s.Body)
	}
	return strings.Join(lines, "\n")
}

// add is one skill-config add.
type add struct{ Name, Description, SkillMD string }

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	entry, name, err := agentext.Entry(rc, c.AgentName, protocol.URISkillConfig)
	if err != nil {
		return err
	}
	var adds []add
	for i, s := range c.Skills {
		if s.SkillArtifactID == "" {
			adds = append(adds, add{s.Name, s.Description, s.SkillMD()})
			continue
		}
		a, err := fromArtifact(ctx, rc, s)
		if err != nil {
			return fmt.Errorf("skills[%d]: %w", i, err)
		}
		adds = append(adds, a)
	}
	clis := map[string]any{}
	if v, ok := rc.Metadata("installed_clis"); ok {
		all, _ := v.(map[string]any)
		clis, _ = all[name].(map[string]any)
	}
	for _, id := range c.CLIArtifactIDs {
		e, _ := clis[id].(map[string]any)
		cmd, _ := e["command_name"].(string)
		at, _ := e["install_path"].(string)
		if cmd == "" || at == "" {
			return fmt.Errorf("cli_artifact_ids: CLI %q is not installed on agent %q (metadata.installed_clis); load it into the agent first", id, name)
		}
		adds = append(adds, cliSkill(cmd, at))
	}
	loaded := map[string]map[string]any{}
	if v, ok := rc.Metadata("loaded_file_artifact_universes"); ok {
		l, _ := v.([]any)
		for _, x := range l {
			m, _ := x.(map[string]any)
			if id, _ := m["id"].(string); id != "" && m["agent_name"] == name {
				loaded[id] = m
			}
		}
	}
	for _, id := range c.FileArtifactUniverseIDs {
		e, ok := loaded[id]
		if !ok {
			return fmt.Errorf("file_artifact_universe_ids: %q was not loaded into agent %q; run a load_artifact step with agent_name %q first", id, name, name)
		}
		dest, _ := e["destination_path"].(string)
		adds = append(adds, filesSkill(id, dest))
	}
	api, _ := entry["api_url"].(string)
	ac := a2aclient.New(api, &http.Client{Timeout: 180 * time.Second})
	names := make([]string, 0, len(adds))
	for _, a := range adds {
		if _, err := ac.ExtOK(ctx, http.MethodPost, protocol.AgentSkillConfigPath,
			map[string]any{"name": a.Name, "description": a.Description, "skill_md": a.SkillMD}); err != nil {
			return fmt.Errorf("agent %q: skill-config add %s: %w", name, a.Name, err)
		}
		names = append(names, a.Name)
	}
	rc.AppendMetadata(KeyAddedSkills, map[string]any{"step_id": rc.StepID(), "agent_name": name, "skills": names})
	rc.Logger().Info("skills added", "agent_name", name, "skills", names)
	return nil
}

// maxSkillMD bounds a SKILL.md read from an artifact.
const maxSkillMD = 1 << 20

// fromArtifact reads a SKILL.md file artifact; its frontmatter names the skill.
func fromArtifact(ctx context.Context, rc *runner.RunContext, s Skill) (add, error) {
	arts, err := rc.Services().ArtifactStore()
	if err != nil {
		return add{}, err
	}
	ref := registry.Ref{ID: s.SkillArtifactID, Version: s.SkillArtifactVersion}
	d, err := arts.Get(ctx, ref)
	if err != nil {
		return add{}, fmt.Errorf("skill_artifact_id %q: %w", s.SkillArtifactID, err)
	}
	if d.Type != artifact.TypeFile {
		return add{}, fmt.Errorf("skill_artifact_id %q is a %s artifact; want a file holding SKILL.md", s.SkillArtifactID, d.Type)
	}
	r, _, err := arts.OpenFile(ctx, d.Ref())
	if err != nil {
		return add{}, fmt.Errorf("skill_artifact_id %q: %w", s.SkillArtifactID, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxSkillMD+1))
	if err != nil {
		return add{}, fmt.Errorf("skill_artifact_id %q: %w", s.SkillArtifactID, err)
	}
	if len(b) > maxSkillMD {
		return add{}, fmt.Errorf("skill_artifact_id %q: SKILL.md larger than %d bytes", s.SkillArtifactID, maxSkillMD)
	}
	fm := frontmatter(string(b))
	if fm["name"] == "" || fm["description"] == "" {
		return add{}, fmt.Errorf("skill_artifact_id %q: SKILL.md frontmatter needs name and description", s.SkillArtifactID)
	}
	if !skillName.MatchString(fm["name"]) {
		return add{}, fmt.Errorf("skill_artifact_id %q: frontmatter name %q is not a valid skill name", s.SkillArtifactID, fm["name"])
	}
	return add{fm["name"], fm["description"], string(b)}, nil
}

// frontmatter reads the top-level "key: value" lines between the leading
// "---" lines of a SKILL.md (enough for name and description).
func frontmatter(md string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(md))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return out
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			break
		}
		if strings.HasPrefix(line, " ") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return out
}

var nonSkill = regexp.MustCompile(`[^a-z0-9]+`)

// slug lowers s to the Agent Skills name alphabet.
func slug(s string, n int) string {
	s = strings.Trim(nonSkill.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	return s
}

// cliSkill tells the agent where an installed CLI lives.
func cliSkill(command, at string) add {
	name := slug(command, 60)
	if name == "" {
		name = "env"
	}
	name += "-cli"
	desc := fmt.Sprintf("Use when working with the %s environment. Run with --help to discover available subcommands at runtime.", command)
	body := fmt.Sprintf("# %s CLI\n\nA command-line interface for the `%s` MCP environment.\n\n## Location\n\nThe binary is installed at `%s`.\n\n"+
		"## Discovery\n\nRun `%s --help` to see all currently-available subcommands. Run `%s <subcommand> --help` for the flags of a specific subcommand.\n\n"+
		"## Output\n\nSubcommands print pretty-printed JSON on success. Errors go to stderr with non-zero exit code.\n", command, command, at, at, at)
	s := Skill{Name: name, Description: desc, Body: body}
	return add{name, desc, s.SkillMD()}
}

// filesSkill tells the agent where a loaded file universe is. The name is
// a slug of the id's last segment plus a hash of the whole id, since an id
// need not be a valid skill name.
func filesSkill(id, dest string) add {
	last := id[strings.LastIndex(id, "/")+1:]
	sum := sha256.Sum256([]byte(id))
	digest := hex.EncodeToString(sum[:])[:12]
	name := digest + "-files"
	if s := slug(last, 45); s != "" {
		name = s + "-" + name
	}
	desc := fmt.Sprintf("Files possibly relevant to the current task are available at %s.", dest)
	s := Skill{Name: name, Description: desc, Body: fmt.Sprintf("Files possibly relevant to the current task are available at `%s`.\n", dest)}
	return add{name, desc, s.SkillMD()}
}
