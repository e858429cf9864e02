package agentsdk

import (
	"context"
	"net/http"
	"sync"

	"github.com/agentenv/agentenv/protocol"
)

// Skill installation (skill-config, inline variant).

// RegisteredSkill is a skill added through skill-config.
type RegisteredSkill struct {
	Name, Description string
	// SkillMD is the SKILL.md text.
	SkillMD string
}

// SkillInstaller is implemented by agents that install skills (write the
// SKILL.md where their runtime reads it). Adds are serialised; an error
// answers an opaque 500 and the skill is not recorded.
type SkillInstaller interface {
	InstallSkill(ctx context.Context, s RegisteredSkill) error
}

type skillRegistry struct {
	addMu sync.Mutex // serialises adds (one install per name)
	mu    sync.Mutex
	list  []RegisteredSkill
}

func (r *skillRegistry) snapshot() []RegisteredSkill {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RegisteredSkill(nil), r.list...)
}

func (r *skillRegistry) has(name string) bool {
	for _, s := range r.snapshot() {
		if s.Name == name {
			return true
		}
	}
	return false
}

func (s *Server) identitySkill(name string) bool {
	for _, sk := range s.card.Skills {
		if sk.Name == name || sk.ID == name {
			return true
		}
	}
	return false
}

func (s *Server) skillConfigExtension() *extension {
	return &extension{
		uri:         protocol.URISkillConfig,
		description: "Install skills (SKILL.md) the agent may use.",
		endpoint:    protocol.AgentSkillConfigPath,
		methods: []*extMethod{
			{
				name: "add", verb: http.MethodPost,
				request:  fields([]string{"name", "description", "skill_md"}, nil),
				response: fields([]string{"name"}, nil),
				handle: func(r *http.Request, body []byte) (any, error) {
					req, err := protocol.DecodeSkillConfigAdd(body)
					if err != nil {
						return nil, badRequest(err)
					}
					s.skills.addMu.Lock()
					defer s.skills.addMu.Unlock()
					if s.identitySkill(req.Name) || s.skills.has(req.Name) {
						return nil, conflict("a skill with this name already exists")
					}
					sk := RegisteredSkill{Name: req.Name, Description: req.Description, SkillMD: req.SkillMD}
					if inst, ok := s.opts.Agent.(SkillInstaller); ok {
						if err := inst.InstallSkill(r.Context(), sk); err != nil {
							return nil, err
						}
					}
					s.skills.mu.Lock()
					s.skills.list = append(s.skills.list, sk)
					s.skills.mu.Unlock()
					return protocol.SkillConfigAddResponse{Name: req.Name}, nil
				},
			},
			{
				name: "list", verb: http.MethodGet,
				response: fields([]string{"skills"}, nil),
				handle: func(r *http.Request, _ []byte) (any, error) {
					if err := bodyless(r.URL.Query()); err != nil {
						return nil, err
					}
					out := protocol.SkillConfigListResponse{Skills: map[string]protocol.SkillInfo{}}
					for _, sk := range s.card.Skills {
						out.Skills[sk.Name] = protocol.SkillInfo{Description: sk.Description}
					}
					for _, sk := range s.skills.snapshot() {
						out.Skills[sk.Name] = protocol.SkillInfo{Description: sk.Description}
					}
					return out, nil
				},
			},
		},
	}
}
