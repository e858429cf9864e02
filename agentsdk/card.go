package agentsdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentenv/agentenv/protocol"
)

// Card is the agent's identity, published on the agent card. Capabilities
// are not set here: they derive from the Agent (Streamer) and from the
// extensions the SDK serves.
type Card struct {
	// Name is required.
	Name string
	// Description and Version default to "" and "0.1.0".
	Description string
	Version     string
	// URL is the JSON-RPC endpoint. Empty means the relative "/a2a" (what
	// the reference publishes; clients resolve it against the base). A
	// relative url must start with "/" and have no query or fragment; an
	// absolute http(s) url is published verbatim and its path is mounted.
	URL string
	// Skills are published as A2A skills (tags default to none).
	Skills []Skill
	// InputModes and OutputModes default to ["text"].
	InputModes, OutputModes []string
}

// Skill is one identity skill of the card.
type Skill struct {
	ID, Name, Description string
	Tags, Examples        []string
}

// rpcPath validates c.URL and returns the path to mount JSON-RPC on.
func (c *Card) rpcPath() (string, error) {
	if c.URL == "" {
		return protocol.A2APath, nil
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", fmt.Errorf("card url: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.Contains(c.URL, "#") {
		return "", errors.New("card url: must have no query or fragment")
	}
	if u.IsAbs() {
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", errors.New("card url: an absolute url must be http(s) with a host")
		}
		if u.Path == "" || u.Path == "/" {
			return "", errors.New("card url: must have a path other than /")
		}
		return u.Path, nil
	}
	if !strings.HasPrefix(c.URL, "/") || u.Host != "" || c.URL == "/" {
		return "", errors.New("card url: a relative url must start with / and name a path")
	}
	return u.Path, nil
}

func (c *Card) validate() error {
	if strings.TrimSpace(c.Name) == "" {
		return errors.New("card name: required")
	}
	path, err := c.rpcPath()
	if err != nil {
		return err
	}
	switch path {
	case protocol.HealthPath, protocol.AgentCardPath, protocol.LegacyAgentCardPath:
		return fmt.Errorf("card url: path %s collides with a built-in route", path)
	}
	if strings.HasPrefix(path, "/ext/") {
		return errors.New("card url: path collides with the extension routes")
	}
	return nil
}

// render builds the live card JSON. name and description may be overridden
// by agent-config; extensions are the rendered extension entries.
func (s *Server) renderCard() ([]byte, error) {
	c := s.card
	name, desc := c.Name, c.Description
	if v, ok := s.config.stringValue(protocol.ConfigName); ok {
		name = v
	}
	if v, ok := s.config.stringValue(protocol.ConfigDescription); ok {
		desc = v
	}
	card := a2a.AgentCard{
		Name: name, Description: desc, Version: c.Version, URL: c.URL,
		ProtocolVersion:    protocol.A2AProtocolVersion,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		DefaultInputModes:  c.InputModes, DefaultOutputModes: c.OutputModes,
		Skills: []a2a.AgentSkill{},
	}
	if card.URL == "" {
		card.URL = protocol.A2APath
	}
	for _, sk := range c.Skills {
		tags := sk.Tags
		if tags == nil {
			tags = []string{}
		}
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: sk.ID, Name: sk.Name, Description: sk.Description, Tags: tags, Examples: sk.Examples})
	}
	for _, sk := range s.skills.snapshot() {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: "skill-" + sk.Name, Name: sk.Name, Description: sk.Description, Tags: []string{"skill"}})
	}
	raw, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	// a2a-go omits false capabilities; the reference publishes them.
	exts := []any{}
	for _, e := range s.extensions {
		exts = append(exts, e.render())
	}
	m["capabilities"] = map[string]any{
		"streaming": s.streaming, "pushNotifications": false, "stateTransitionHistory": false,
		"extensions": exts,
	}
	return json.Marshal(m)
}
