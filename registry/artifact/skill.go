package artifact

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentenv/agentenv/registry"
)

// SkillMDName is the file every skill folder holds at its root.
const SkillMDName = "SKILL.md"

// AgentSkillsSpecVersion is the Agent Skills format revision a skill is
// checked against (agent_skills_spec_version).
const AgentSkillsSpecVersion = "0.1"

// Limits of the Agent Skills format.
const (
	maxSkillDescription   = 1024
	maxSkillCompatibility = 500
)

// skillNameRE: 1-64 of [a-z0-9-], no leading, trailing or doubled hyphen.
var skillNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// SkillFront is the front matter of a SKILL.md.
type SkillFront struct {
	Name          string
	Description   string
	License       string
	Compatibility string
	AllowedTools  string
	Metadata      map[string]string
	Body          string // the text after the front matter
}

// ParseSkillMD reads a SKILL.md: a YAML front matter block between "---"
// lines, then the instructions. It checks what the Agent Skills format
// requires: name (1-64 lowercase letters, digits and single hyphens, not
// at either end) and description (1-1024 characters) are non-empty
// strings; license, compatibility (≤ 500) and allowed-tools, when given,
// are non-empty strings; metadata maps strings to strings. Errors are
// *registry.InvalidError naming the front matter key.
func ParseSkillMD(b []byte) (*SkillFront, error) {
	bad := func(field, reason string) error {
		return &registry.InvalidError{Field: SkillMDName + " " + field, Reason: reason}
	}
	text := strings.TrimPrefix(string(b), "\ufeff")
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() || strings.TrimRight(sc.Text(), " \t\r") != "---" {
		return nil, bad("front matter", "must begin with a YAML front matter block: a first line \"---\", the keys, then a line \"---\"")
	}
	var front strings.Builder
	closed := false
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " \t\r") == "---" {
			closed = true
			break
		}
		front.WriteString(line)
		front.WriteByte('\n')
	}
	if !closed {
		return nil, bad("front matter", "is not closed by a line \"---\"")
	}
	var body strings.Builder
	for sc.Scan() {
		body.WriteString(sc.Text())
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, bad("front matter", err.Error())
	}
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(front.String()), &fm); err != nil {
		return nil, bad("front matter", "is not valid YAML: "+strings.TrimPrefix(err.Error(), "yaml: "))
	}
	str := func(key string, required bool, max int) (string, error) {
		v, ok := fm[key]
		if !ok || v == nil {
			if required {
				return "", bad(key, "is required (a non-empty string)")
			}
			return "", nil
		}
		s, isStr := v.(string)
		if !isStr || s == "" {
			return "", bad(key, "must be a non-empty string")
		}
		if max > 0 && len([]rune(s)) > max {
			return "", bad(key, fmt.Sprintf("is %d characters; at most %d", len([]rune(s)), max))
		}
		return s, nil
	}
	f := &SkillFront{Body: strings.TrimLeft(body.String(), "\n")}
	var err error
	if f.Name, err = str("name", true, 64); err != nil {
		return nil, err
	}
	if !skillNameRE.MatchString(f.Name) {
		return nil, &registry.InvalidError{Field: SkillMDName + " name", Value: f.Name,
			Reason: "must be 1-64 lowercase letters, digits and hyphens, with no hyphen at either end or doubled"}
	}
	if f.Description, err = str("description", true, maxSkillDescription); err != nil {
		return nil, err
	}
	if f.License, err = str("license", false, 0); err != nil {
		return nil, err
	}
	if f.Compatibility, err = str("compatibility", false, maxSkillCompatibility); err != nil {
		return nil, err
	}
	if f.AllowedTools, err = str("allowed-tools", false, 0); err != nil {
		return nil, err
	}
	if m, ok := fm["metadata"]; ok && m != nil {
		mm, isMap := m.(map[string]any)
		if !isMap {
			return nil, bad("metadata", "must be a mapping of strings to strings")
		}
		f.Metadata = make(map[string]string, len(mm))
		for k, v := range mm {
			s, isStr := v.(string)
			if !isStr {
				return nil, bad("metadata", fmt.Sprintf("key %q: must map strings to strings", k))
			}
			f.Metadata[k] = s
		}
	}
	return f, nil
}

// SkillName is the name a skill artifact id's SKILL.md must carry: the
// id's last path segment ("tidy", "@local/pkg/bundle/tidy" → "tidy").
func SkillName(id string) string { return path.Base(id) }

// PutSkill stores the folder dir as a new version of skill artifact id.
// dir must hold a SKILL.md whose front matter passes ParseSkillMD and
// names the skill SkillName(id). Every file under dir becomes part of
// file_artifact_universe "<id>-files" (stored with its tar.gz), which the
// skill pins.
func (s *Store) PutSkill(ctx context.Context, id, dir string) (*Skill, error) {
	if err := registry.ValidateID(id); err != nil {
		return nil, err
	}
	mdPath := filepath.Join(dir, SkillMDName)
	st, err := os.Lstat(mdPath) // a symbolic link is not stored with the files
	if err != nil || !st.Mode().IsRegular() {
		return nil, &registry.InvalidError{Field: "skill folder", Value: dir, Reason: "has no " + SkillMDName + " at its root (a regular file)"}
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", id, err)
	}
	front, err := ParseSkillMD(md)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %s: %w", id, mdPath, err)
	}
	if want := SkillName(id); front.Name != want {
		return nil, fmt.Errorf("skill %s: %s: %w", id, mdPath, &registry.InvalidError{Field: SkillMDName + " name", Value: front.Name,
			Reason: fmt.Sprintf("must equal the skill id's last segment %q", want)})
	}
	// A type clash fails before any file is stored (put checks again).
	if _, err := s.next(ctx, TypeSkill, id); err != nil {
		return nil, err
	}
	u, err := s.PutUniverseFromDir(ctx, SkillFilesID(id), dir, &UniverseOptions{Bundle: true, Description: "files of skill " + id})
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", id, err)
	}
	d, err := s.put(ctx, TypeSkill, id, nil, func(int, map[string]stored) (any, error) {
		return Skill{Header: Header{Type: TypeSkill, Description: front.Description}, SkillFilesID: u.ID, SkillFilesRef: refOf(u.Header),
			SkillS3URL: u.BundleS3URL, AgentSkillsSpecVersion: AgentSkillsSpecVersion, SkillName: front.Name,
			License: front.License, Compatibility: front.Compatibility, AllowedTools: front.AllowedTools, SkillMetadata: front.Metadata}, nil
	})
	if err != nil {
		return nil, err
	}
	var sk Skill
	return &sk, d.Decode(&sk)
}

// SkillFilesID is the id of the file universe holding a skill's files.
func SkillFilesID(id string) string { return id + "-files" }

// GetSkill reads a skill artifact.
func (s *Store) GetSkill(ctx context.Context, ref registry.Ref) (*Skill, error) {
	return get[Skill](ctx, s, ref, TypeSkill)
}

// WriteSkill writes every file of a skill under dir and returns the
// written paths.
func (s *Store) WriteSkill(ctx context.Context, ref registry.Ref, dir string) (*Skill, []string, error) {
	sk, err := s.GetSkill(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	paths, err := s.WriteUniverse(ctx, pinnedOrLatest(sk.SkillFilesID, sk.SkillFilesRef), dir)
	return sk, paths, err
}
