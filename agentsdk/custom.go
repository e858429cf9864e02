package agentsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Custom REST extensions: an agent that implements
// ExtensionProvider serves its own /ext/… operations, advertised on the
// card next to the SDK's.

// ExtensionProvider is implemented by agents with custom extensions.
type ExtensionProvider interface {
	Extensions() []Extension
}

// Extension is one custom extension.
type Extension struct {
	// URI must not use the reserved urn:agentenv: namespace.
	URI, Description string
	// Endpoint is the route of the operations (e.g. /ext/word-count/v1).
	Endpoint string
	Methods  []Method
	// Params are extra card params, merged into params.
	Params map[string]any
}

// Method is one operation of an Extension.
type Method struct {
	// Name is the card's operation name; Verb the HTTP verb (default POST);
	// Path overrides Endpoint for this operation.
	Name, Verb, Path string
	// Request lists the body (or, for GET, query) fields; nil means the
	// operation takes none. Unknown fields and missing required ones are
	// answered 400 before Handle runs.
	Request *Fields
	// Response lists the answer's fields; an answer with an undeclared field
	// or without a required one is an opaque 500 (never sent).
	Response *Fields
	// Handle answers the operation with a JSON-encodable value. Return
	// ExtError for a 4xx; any other error is an opaque 500.
	Handle func(ctx context.Context, in *ExtRequest) (any, error)
}

// Fields are the field names of a request or response.
type Fields struct {
	Required, Optional []string
}

// ExtRequest is what a custom operation receives.
type ExtRequest struct {
	// Body is the JSON object body (POST/PUT/…); for GET the query
	// parameters as a JSON object of strings.
	Body   json.RawMessage
	Header http.Header
}

// Decode decodes the body into v.
func (r *ExtRequest) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// ExtError is an expected error of a custom operation: status (4xx) and a
// plain-text message that must not echo input values.
func ExtError(status int, message string) error {
	if status < 400 || status > 499 {
		status = http.StatusBadRequest
	}
	return &httpError{status, message}
}

// customExtensions validates and converts the agent's extensions. Route
// collisions, reserved URIs and duplicates are errors of New.
func (s *Server) customExtensions(rpcPath string) ([]*extension, error) {
	p, ok := s.opts.Agent.(ExtensionProvider)
	if !ok {
		return nil, nil
	}
	type route struct{ verb, path string }
	taken := map[route]string{}
	for _, e := range s.extensions {
		for _, m := range e.methods {
			path := e.endpoint
			if m.path != "" {
				path = m.path
			}
			taken[route{m.verb, path}] = e.uri
		}
	}
	uris := map[string]bool{}
	for _, e := range s.extensions {
		uris[e.uri] = true
	}
	var out []*extension
	for _, ce := range p.Extensions() {
		switch {
		case ce.URI == "":
			return nil, errors.New("extension: URI required")
		case strings.HasPrefix(ce.URI, "urn:agentenv:"):
			return nil, fmt.Errorf("extension %s: urn:agentenv: URIs are reserved", ce.URI)
		case uris[ce.URI]:
			return nil, fmt.Errorf("extension %s: registered twice", ce.URI)
		case len(ce.Methods) == 0:
			return nil, fmt.Errorf("extension %s: no methods", ce.URI)
		}
		uris[ce.URI] = true
		e := &extension{uri: ce.URI, description: ce.Description, endpoint: ce.Endpoint, extra: ce.Params}
		for _, cm := range ce.Methods {
			verb := strings.ToUpper(cm.Verb)
			if verb == "" {
				verb = http.MethodPost
			}
			path := ce.Endpoint
			if cm.Path != "" {
				path = cm.Path
			}
			if err := checkRoute(verb, path, rpcPath); err != nil {
				return nil, fmt.Errorf("extension %s: %s: %w", ce.URI, cm.Name, err)
			}
			for _, v := range []string{verb} {
				if by, dup := taken[route{v, path}]; dup {
					return nil, fmt.Errorf("extension %s: %s %s is already served by %s", ce.URI, v, path, by)
				}
				taken[route{v, path}] = ce.URI
			}
			if cm.Name == "" || cm.Handle == nil {
				return nil, fmt.Errorf("extension %s: every method needs a name and a handler", ce.URI)
			}
			m := &extMethod{name: cm.Name, verb: verb, path: cm.Path}
			if cm.Request != nil {
				m.request = fields(cm.Request.Required, cm.Request.Optional)
			}
			if cm.Response != nil {
				m.response = fields(cm.Response.Required, cm.Response.Optional)
			}
			m.handle = customHandler(cm)
			e.methods = append(e.methods, m)
		}
		out = append(out, e)
	}
	return out, nil
}

func checkRoute(verb, path, rpcPath string) error {
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "{}?# ") {
		return errors.New("path must start with / and hold no pattern, query or fragment")
	}
	get := verb == http.MethodGet || verb == http.MethodHead
	switch {
	case path == "/health" && get,
		(path == rpcPath || path == strings.TrimSuffix(rpcPath, "/")+"/") && verb == http.MethodPost,
		(path == "/.well-known/agent-card.json" || path == "/.well-known/agent.json") && get:
		return fmt.Errorf("%s %s collides with a built-in route", verb, path)
	}
	return nil
}

func customHandler(cm Method) func(r *http.Request, body []byte) (any, error) {
	var allowed []string
	var required []string
	if cm.Request != nil {
		allowed = append(append(allowed, cm.Request.Required...), cm.Request.Optional...)
		required = cm.Request.Required
	}
	return func(r *http.Request, body []byte) (any, error) {
		obj := map[string]json.RawMessage{}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			_ = json.Unmarshal(queryObject(r), &obj)
		} else if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &obj); err != nil || bytes.TrimSpace(body)[0] != '{' {
				return nil, badRequest(errors.New("body must be a JSON object"))
			}
		}
		if cm.Request == nil && len(obj) > 0 {
			return nil, badRequest(errors.New("this operation takes no fields"))
		}
		for _, k := range slices.Sorted(mapsKeys(obj)) {
			if !slices.Contains(allowed, k) {
				return nil, badRequest(fmt.Errorf("unknown field %q", k))
			}
		}
		for _, k := range required {
			if _, ok := obj[k]; !ok {
				return nil, badRequest(fmt.Errorf("%s: required", k))
			}
		}
		raw, _ := json.Marshal(obj)
		return cm.Handle(r.Context(), &ExtRequest{Body: raw, Header: r.Header})
	}
}

func mapsKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// queryObject renders the query parameters as a JSON object of strings
// (the last value of a repeated parameter).
func queryObject(r *http.Request) json.RawMessage {
	obj := map[string]string{}
	for k, v := range r.URL.Query() {
		obj[k] = v[len(v)-1]
	}
	b, _ := json.Marshal(obj)
	return b
}
