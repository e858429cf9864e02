package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// EnvCard describes an environment server. It is served at EnvCardPath with
// every optional field present (as null when unset), which is what the
// reference emits; decoding accepts both null and a missing key.
//
// A nil slice encodes as null and an empty one as []: for
// Capabilities.Operations and ChildrenEnvironments the difference matters
// (see their docs).
type EnvCard struct {
	Name               string `json:"name"`
	ProtocolVersion    string `json:"protocolVersion"`
	URL                string `json:"url"`
	PreferredTransport string `json:"preferredTransport"`
	// AdditionalInterfaces always encodes as a list; nil encodes as [].
	AdditionalInterfaces []Interface     `json:"additionalInterfaces"`
	Capabilities         EnvCapabilities `json:"capabilities"`
	// ChildrenEnvironments is set by gateways; nil (null) on env servers.
	ChildrenEnvironments []EnvCard `json:"children_environments"`
}

// Interface is one additional interface of a card, for example the MCP
// endpoint {"url":"/mcp","transport":"mcp"}.
type Interface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// EnvCapabilities lists what an environment offers. All keys are always
// present in the served JSON.
type EnvCapabilities struct {
	// Extensions is nil (null) when the env declares none.
	Extensions []Extension `json:"extensions"`
	// Tools is an advertisement only; tools are called over MCP.
	Tools []ToolDescriptor `json:"tools"`
	// Operations lists the data-plane methods registered, in the order
	// data/reset, data/add, data/get. Empty means none; nil (null or
	// missing) is a card from before the field existed, for which consumers
	// assume all three (see SupportsOperation).
	Operations []string `json:"operations"`
}

// ToolDescriptor advertises one tool on a card.
type ToolDescriptor struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Extension is one entry of capabilities.extensions. All four keys are
// present when encoded; an empty Description and nil Params or Required
// encode as null.
type Extension struct {
	URI         string          `json:"uri"`
	Description string          `json:"description"`
	Params      json.RawMessage `json:"params"`
	Required    *bool           `json:"required"`
}

type extensionWire struct {
	URI         string          `json:"uri"`
	Description *string         `json:"description"`
	Params      json.RawMessage `json:"params"`
	Required    *bool           `json:"required"`
}

// MarshalJSON emits all four keys, nulls included.
func (e Extension) MarshalJSON() ([]byte, error) {
	w := extensionWire{URI: e.URI, Params: e.Params, Required: e.Required}
	if e.Description != "" {
		w.Description = &e.Description
	}
	if len(w.Params) == 0 {
		w.Params = json.RawMessage("null")
	}
	return json.Marshal(w)
}

// UnmarshalJSON accepts null or missing optional keys.
func (e *Extension) UnmarshalJSON(b []byte) error {
	var w extensionWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Extension{URI: w.URI, Params: w.Params, Required: w.Required}
	if w.Description != nil {
		e.Description = *w.Description
	}
	if string(e.Params) == "null" {
		e.Params = nil
	}
	return nil
}

type envCardWire EnvCard

// MarshalJSON emits the card with nulls included and additionalInterfaces
// always as a list.
func (c EnvCard) MarshalJSON() ([]byte, error) {
	w := envCardWire(c)
	if w.AdditionalInterfaces == nil {
		w.AdditionalInterfaces = []Interface{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON accepts a card with missing or null optional fields. As
// in the reference's card model, a missing (or null or empty)
// protocolVersion, url or preferredTransport takes its default, so that a
// card read and served again (a gateway's children) stays well formed.
func (c *EnvCard) UnmarshalJSON(b []byte) error {
	var w envCardWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = EnvCard(w)
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = EnvProtocolVersion
	}
	if c.URL == "" {
		c.URL = DataPlanePath
	}
	if c.PreferredTransport == "" {
		c.PreferredTransport = TransportJSONRPC
	}
	return nil
}

// DecodeEnvCard parses and validates a served card.
func DecodeEnvCard(b []byte) (*EnvCard, error) {
	var c EnvCard
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("env card: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks what a consumer cannot do without.
func (c *EnvCard) Validate() error {
	if c.Name == "" {
		return errors.New("env card: name: required")
	}
	for i, e := range c.Capabilities.Extensions {
		if e.URI == "" {
			return fmt.Errorf("env card: capabilities.extensions[%d].uri: required", i)
		}
	}
	return nil
}

// DataPlaneURL returns the card's data-plane path, DataPlanePath when unset.
func (c *EnvCard) DataPlaneURL() string {
	if c.URL == "" {
		return DataPlanePath
	}
	return c.URL
}

// MCPPath returns the url of the first additional interface with transport
// "mcp" and a non-empty url, else DefaultMCPPath.
func (c *EnvCard) MCPPath() string {
	for _, i := range c.AdditionalInterfaces {
		if i.Transport == TransportMCP && i.URL != "" {
			return i.URL
		}
	}
	return DefaultMCPPath
}

// SupportsOperation reports whether the data-plane method is registered.
// A card without an operations list predates the field and supports all.
func (c *EnvCard) SupportsOperation(method string) bool {
	if c.Capabilities.Operations == nil {
		return true
	}
	for _, op := range c.Capabilities.Operations {
		if op == method {
			return true
		}
	}
	return false
}

// FindExtension returns the top-level extension with the URI (children are
// never searched), or nil.
func (c *EnvCard) FindExtension(uri string) *Extension {
	for i := range c.Capabilities.Extensions {
		if c.Capabilities.Extensions[i].URI == uri {
			return &c.Capabilities.Extensions[i]
		}
	}
	return nil
}

// FindTool returns the advertised tool with the name, or nil.
func (c *EnvCard) FindTool(name string) *ToolDescriptor {
	for i := range c.Capabilities.Tools {
		if c.Capabilities.Tools[i].Name == name {
			return &c.Capabilities.Tools[i]
		}
	}
	return nil
}

// FindChild returns the child environment card with the name, or nil.
func (c *EnvCard) FindChild(name string) *EnvCard {
	for i := range c.ChildrenEnvironments {
		if c.ChildrenEnvironments[i].Name == name {
			return &c.ChildrenEnvironments[i]
		}
	}
	return nil
}

// ExtensionParams is the A2A-style params object of a REST extension:
// {"endpoint": "...", "methods": {"name": {"method", "endpoint"?, "request"?}}}.
// Methods keep the order of the JSON object, because callers that name no
// method use the first one listed.
type ExtensionParams struct {
	Endpoint string
	Methods  []ExtensionMethod
	// Extra holds any other params keys verbatim.
	Extra map[string]json.RawMessage
}

// ExtensionMethod is one method of an extension.
type ExtensionMethod struct {
	Name string
	// Method is the HTTP verb as declared; empty means POST.
	Method string
	// Endpoint overrides the extension-level endpoint when set.
	Endpoint string
	// Request is the request schema (a JSON Schema on env cards).
	Request json.RawMessage
}

// Verb returns the upper-cased HTTP verb, POST when unset.
func (m ExtensionMethod) Verb() string {
	if m.Method == "" {
		return "POST"
	}
	return strings.ToUpper(m.Method)
}

type methodWire struct {
	Method   string          `json:"method,omitempty"`
	Endpoint string          `json:"endpoint,omitempty"`
	Request  json.RawMessage `json:"request,omitempty"`
}

// MarshalJSON writes endpoint, methods in order, then the extra keys.
func (p ExtensionParams) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	field := func(k string, v []byte) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	if p.Endpoint != "" {
		v, _ := json.Marshal(p.Endpoint)
		field("endpoint", v)
	}
	if p.Methods != nil {
		var mb strings.Builder
		mb.WriteByte('{')
		for i, m := range p.Methods {
			if i > 0 {
				mb.WriteByte(',')
			}
			k, _ := json.Marshal(m.Name)
			mb.Write(k)
			mb.WriteByte(':')
			v, err := json.Marshal(methodWire{Method: m.Method, Endpoint: m.Endpoint, Request: m.Request})
			if err != nil {
				return nil, fmt.Errorf("method %q: %w", m.Name, err)
			}
			mb.Write(v)
		}
		mb.WriteByte('}')
		field("methods", []byte(mb.String()))
	}
	for _, k := range sortedKeys(p.Extra) {
		field(k, p.Extra[k])
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// UnmarshalJSON reads params, keeping the order of methods.
func (p *ExtensionParams) UnmarshalJSON(b []byte) error {
	*p = ExtensionParams{}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		return nil
	}
	if v, ok := raw["endpoint"]; ok {
		if string(v) != "null" {
			if err := json.Unmarshal(v, &p.Endpoint); err != nil {
				return fmt.Errorf("endpoint: %w", err)
			}
		}
		delete(raw, "endpoint")
	}
	if v, ok := raw["methods"]; ok && isNull(v) {
		delete(raw, "methods") // null methods: none declared
	} else if ok {
		methods, err := decodeOrderedObject(v)
		if err != nil {
			return fmt.Errorf("methods: %w", err)
		}
		p.Methods = []ExtensionMethod{}
		for _, kv := range methods {
			var w methodWire
			if string(kv.value) != "null" {
				if err := json.Unmarshal(kv.value, &w); err != nil {
					return fmt.Errorf("methods.%s: %w", kv.key, err)
				}
			}
			p.Methods = append(p.Methods, ExtensionMethod{Name: kv.key, Method: w.Method, Endpoint: w.Endpoint, Request: w.Request})
		}
		delete(raw, "methods")
	}
	if len(raw) > 0 {
		p.Extra = raw
	}
	return nil
}

// MethodParams decodes the extension's params as REST-extension params.
// Absent params decode as the zero value.
func (e *Extension) MethodParams() (ExtensionParams, error) {
	var p ExtensionParams
	if len(e.Params) == 0 || string(e.Params) == "null" {
		return p, nil
	}
	if err := json.Unmarshal(e.Params, &p); err != nil {
		return p, fmt.Errorf("extension %s params: %w", e.URI, err)
	}
	return p, nil
}

// FindMethod returns the named method with its effective endpoint (its
// own, else the extension's) and upper-cased verb, or nil when unknown. An
// empty name selects the first listed method.
func (p ExtensionParams) FindMethod(name string) *ExtensionMethod {
	for _, m := range p.Methods {
		if name == "" || m.Name == name {
			out := m
			if out.Endpoint == "" {
				out.Endpoint = p.Endpoint
			}
			out.Method = out.Verb()
			return &out
		}
	}
	return nil
}

// MethodNames lists the advertised method names in order.
func (p ExtensionParams) MethodNames() []string {
	names := make([]string, len(p.Methods))
	for i, m := range p.Methods {
		names[i] = m.Name
	}
	return names
}
