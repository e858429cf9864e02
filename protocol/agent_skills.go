package protocol

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
)

// AgentSkillConfigPath is the route of skill-config.
const AgentSkillConfigPath = "/ext/skill-config"

var skillNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// SkillConfigAddRequest is the inline variant of skill-config add:
// {name, description, skill_md}.
type SkillConfigAddRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	SkillMD     string `json:"skill_md"`
}

// ErrSkillBundleUnsupported is returned for the (later-phase) bundle variant.
var ErrSkillBundleUnsupported = errors.New("unsupported request variant fields: skill_bundle")

// DecodeSkillConfigAdd decodes and validates an inline add body.
func DecodeSkillConfigAdd(b []byte) (*SkillConfigAddRequest, error) {
	var w struct {
		Name        *string         `json:"name"`
		Description *string         `json:"description"`
		SkillMD     *string         `json:"skill_md"`
		SkillBundle json.RawMessage `json:"skill_bundle"`
	}
	if err := decodeStrictObject(b, &w); err != nil {
		return nil, err
	}
	switch {
	case w.SkillBundle != nil:
		return nil, ErrSkillBundleUnsupported
	case w.Name == nil:
		return nil, errors.New("name: required")
	case !skillNameRE.MatchString(*w.Name):
		return nil, errors.New("name: must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}")
	case w.Description == nil || strings.TrimSpace(*w.Description) == "":
		return nil, errors.New("description: required, non-empty")
	case w.SkillMD == nil || strings.TrimSpace(*w.SkillMD) == "":
		return nil, errors.New("skill_md: required, non-empty")
	}
	return &SkillConfigAddRequest{Name: *w.Name, Description: *w.Description, SkillMD: *w.SkillMD}, nil
}

// SkillConfigAddResponse answers add: {"name"}.
type SkillConfigAddResponse struct {
	Name string `json:"name"`
}

// SkillConfigListResponse answers list: {"skills":{"<name>":{"description"}}}.
type SkillConfigListResponse struct {
	Skills map[string]SkillInfo `json:"skills"`
}

// SkillInfo is one entry of SkillConfigListResponse.
type SkillInfo struct {
	Description string `json:"description"`
}
