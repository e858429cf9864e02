package agentsdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentenv/agentenv/protocol"
)

// configState is the agent-config state: the agent's config type and
// defaults, and the values set so far (by wire name).
type configState struct {
	typ       reflect.Type // the custom struct type, nil without Configurable
	defaults  map[string]json.RawMessage
	writeOnly map[string]bool
	supported []string
	schema    map[string]any

	mu  sync.Mutex
	set map[string]json.RawMessage
}

// maxTimeoutSeconds bounds timeout_seconds (one week).
const maxTimeoutSeconds = 7 * 24 * 3600

var baseConfigNames = []string{protocol.ConfigName, protocol.ConfigDescription, protocol.ConfigRole, protocol.ConfigTimeoutSeconds}

// newConfigState inspects defaults (a pointer to a struct, or nil). It
// panics on programmer errors: a non-struct, or a field shadowing a base
// name.
func newConfigState(defaults any) *configState {
	c := &configState{
		defaults:  map[string]json.RawMessage{protocol.ConfigTimeoutSeconds: json.RawMessage(fmt.Sprint(protocol.DefaultTimeoutSeconds))},
		writeOnly: map[string]bool{},
		set:       map[string]json.RawMessage{},
	}
	props := map[string]any{
		protocol.ConfigName:           map[string]any{"type": []string{"string", "null"}},
		protocol.ConfigDescription:    map[string]any{"type": []string{"string", "null"}},
		protocol.ConfigRole:           map[string]any{"type": []string{"string", "null"}},
		protocol.ConfigTimeoutSeconds: map[string]any{"type": "integer", "minimum": 1, "maximum": maxTimeoutSeconds},
	}
	supported := slices.Clone(baseConfigNames)
	if defaults != nil {
		v := reflect.ValueOf(defaults)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			panic("agentsdk: ConfigDefaults must return a pointer to a struct")
		}
		c.typ = v.Elem().Type()
		raw, err := json.Marshal(defaults)
		if err != nil {
			panic(fmt.Sprintf("agentsdk: config defaults do not encode: %v", err))
		}
		var dm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &dm); err != nil {
			panic(fmt.Sprintf("agentsdk: config defaults must encode as an object: %v", err))
		}
		s, err := jsonschema.ForType(c.typ, &jsonschema.ForOptions{})
		if err != nil {
			panic(fmt.Sprintf("agentsdk: config schema: %v", err))
		}
		sb, _ := json.Marshal(s)
		var sm map[string]any
		_ = json.Unmarshal(sb, &sm)
		custom, _ := sm["properties"].(map[string]any)
		for i := 0; i < c.typ.NumField(); i++ {
			f := c.typ.Field(i)
			name := wireName(f)
			if name == "" {
				continue
			}
			if slices.Contains(baseConfigNames, name) {
				panic("agentsdk: config field " + name + " shadows a base agent-config field")
			}
			supported = append(supported, name)
			prop, _ := custom[name].(map[string]any)
			if prop == nil {
				prop = map[string]any{}
			}
			delete(prop, "default")
			if strings.Contains(f.Tag.Get("agentenv"), "writeonly") {
				c.writeOnly[name] = true
				prop["writeOnly"] = true
			}
			props[name] = prop
			if d, ok := dm[name]; ok {
				c.defaults[name] = d
			}
		}
	}
	slices.Sort(supported)
	c.supported = supported
	c.schema = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	return c
}

func wireName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// effective returns defaults ∪ set values.
func (c *configState) effective() map[string]json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.defaults)
	maps.Copy(out, c.set)
	return out
}

func (c *configState) stringValue(name string) (string, bool) {
	c.mu.Lock()
	raw, ok := c.set[name]
	c.mu.Unlock()
	var s string
	if !ok || json.Unmarshal(raw, &s) != nil || s == "" {
		return "", false
	}
	return s, true
}

// apply validates update on top of defaults ∪ set and commits it, all or
// nothing. Errors name fields only.
func (c *configState) apply(update map[string]json.RawMessage) error {
	for _, k := range slices.Sorted(maps.Keys(update)) {
		if !slices.Contains(c.supported, k) {
			return fmt.Errorf("unknown field %q", k)
		}
		v := bytes.TrimSpace(update[k])
		switch k {
		case protocol.ConfigName, protocol.ConfigDescription:
			var s string
			if json.Unmarshal(v, &s) != nil || v[0] != '"' || strings.TrimSpace(s) == "" {
				return fmt.Errorf("%s: must be a non-empty string", k)
			}
		case protocol.ConfigRole:
			var s *string
			if json.Unmarshal(v, &s) != nil || (s == nil && string(v) != "null") {
				return fmt.Errorf("%s: must be a string or null", k)
			}
		case protocol.ConfigTimeoutSeconds:
			n, err := strictPositiveInt(v)
			if err != nil || n > maxTimeoutSeconds {
				return fmt.Errorf("%s: must be an integer from 1 to %d", k, maxTimeoutSeconds)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	merged := maps.Clone(c.set)
	maps.Copy(merged, update)
	if c.typ != nil {
		custom := map[string]json.RawMessage{}
		for k, v := range c.defaults {
			if !slices.Contains(baseConfigNames, k) {
				custom[k] = v
			}
		}
		for k, v := range merged {
			if !slices.Contains(baseConfigNames, k) {
				custom[k] = v
			}
		}
		b, _ := json.Marshal(custom)
		dst := reflect.New(c.typ)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(dst.Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("%s: must be of type %s", te.Field, te.Type)
			}
			return errors.New("invalid config value")
		}
		if v, ok := dst.Interface().(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("invalid config: %w", err)
			}
		}
	}
	for k, v := range update {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(merged, k)
		}
	}
	c.set = merged
	return nil
}

func strictPositiveInt(v []byte) (int, error) {
	var n int
	if len(v) == 0 || v[0] < '0' || v[0] > '9' || json.Unmarshal(v, &n) != nil || n < 1 {
		return 0, errors.New("not a positive integer")
	}
	return n, nil
}

// readback returns the explicitly set values, secrets redacted.
func (c *configState) readback() map[string]json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]json.RawMessage{}
	for k, v := range c.set {
		if c.writeOnly[k] {
			v = json.RawMessage(`"` + protocol.RedactedValue + `"`)
		}
		out[k] = v
	}
	return out
}

func (s *Server) agentConfigExtension() *extension {
	methods := []*extMethod{{
		name: "set", verb: http.MethodPost,
		request:  map[string]any{"supported": s.config.supported, "schema": s.config.schema},
		response: fields([]string{"status"}, nil),
		handle: func(_ *http.Request, body []byte) (any, error) {
			update, err := protocol.DecodeAgentConfigSet(body)
			if err != nil {
				return nil, badRequest(err)
			}
			if err := s.config.apply(update); err != nil {
				return nil, badRequest(err)
			}
			return protocol.StatusResponse{Status: protocol.StatusUpdated}, nil
		},
	}}
	get := &extMethod{
		name: "get", verb: http.MethodGet,
		response: fields([]string{"config"}, nil),
		handle: func(r *http.Request, _ []byte) (any, error) {
			if s.opts.DisableConfigReadback {
				return nil, &httpError{http.StatusMethodNotAllowed, "agent-config readback is disabled"}
			}
			if err := bodyless(r.URL.Query()); err != nil {
				return nil, err
			}
			return protocol.AgentConfigGetResponse{Config: s.config.readback()}, nil
		},
	}
	if !s.opts.DisableConfigReadback {
		methods = append(methods, get)
	}
	e := &extension{
		uri:         protocol.URIAgentConfig,
		description: "Typed agent configuration (model, prompts, role, secrets are write-only).",
		endpoint:    protocol.AgentConfigPath,
		methods:     methods,
	}
	if s.opts.DisableConfigReadback {
		// Served (405) but not advertised.
		e.hidden = append(e.hidden, get)
	}
	return e
}
