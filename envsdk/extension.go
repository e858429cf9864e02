package envsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/agentenv/agentenv/protocol"
)

// Extension declares a REST extension: one method served at
// Path (default /agentenv/ext/<Name>) with the verb Method (default POST),
// advertised under URI on the card.
type Extension struct {
	URI         string
	Description string
	// Name is the method name; it is the default route's last segment.
	Name string
	// Path overrides the route.
	Path string
	// Method is the HTTP verb; "" means POST. It is upper-cased.
	Method string
	// Params, when set, replaces the default advertisement entirely.
	Params json.RawMessage
	// Required is the card entry's required flag.
	Required bool
}

// ExtensionHandler handles one REST extension call. A nil Out answers {};
// an error answers 500 extension_failed with its text.
type ExtensionHandler[In, Out any] func(ctx context.Context, req *Request, in In) (Out, error)

type extReg struct {
	ext     Extension
	schema  map[string]any
	serve   func(ctx context.Context, req *Request, in json.RawMessage) (any, error)
	binder  *binder
	verb    string
	path    string
	builtin bool
}

// AddExtension registers a REST extension. The request schema and the
// binding rules come from In (a struct; its fields are the parameters).
// Errors (duplicate URI or path, bad In) are returned by Handler.
func AddExtension[In, Out any](s *Server, e *Extension, h ExtensionHandler[In, Out]) {
	if e == nil || e.URI == "" || e.Name == "" || h == nil {
		s.fail(errors.New("envsdk: AddExtension: extension, URI, Name and handler are required"))
		return
	}
	it := reflect.TypeFor[In]()
	sch, err := objectSchema(it)
	if err != nil {
		s.fail(fmt.Errorf("envsdk: extension %s: %w", e.URI, err))
		return
	}
	reg := &extReg{ext: *e, schema: sch, binder: newBinder(it)}
	reg.verb = strings.ToUpper(e.Method)
	if reg.verb == "" {
		reg.verb = http.MethodPost
	}
	reg.path = e.Path
	if reg.path == "" {
		reg.path = protocol.ExtensionPathPrefix + e.Name
	}
	reg.serve = func(ctx context.Context, req *Request, raw json.RawMessage) (any, error) {
		var in In
		if err := applyDefaults(reflect.ValueOf(&in)); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, &paramError{err.Error()}
		}
		out, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	s.register("extension "+e.URI, func() { s.exts = append(s.exts, reg) })
}

type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

// mountExtensions serves the registered extensions and returns the card's
// extension list (card-declared entries win the advertisement).
func (s *Server) mountExtensions(mux *http.ServeMux) ([]protocol.Extension, []error) {
	var errs []error
	out := append([]protocol.Extension(nil), s.card.Capabilities.Extensions...)
	declared := map[string]bool{}
	for _, e := range out {
		declared[e.URI] = true
	}
	uris, paths := map[string]bool{}, map[string]bool{}
	for _, reg := range s.exts {
		if uris[reg.ext.URI] {
			errs = append(errs, fmt.Errorf("envsdk: duplicate extension URI %q", reg.ext.URI))
			continue
		}
		if paths[reg.path] || reg.path == protocol.DataPlanePath || reg.path == s.opts.MCPPath || reg.path == InterfaceManifestPath ||
			reg.path == protocol.EnvCardPath || reg.path == protocol.ReadyPath {
			errs = append(errs, fmt.Errorf("envsdk: extension %s: duplicate route %q", reg.ext.URI, reg.path))
			continue
		}
		if !strings.HasPrefix(reg.path, "/") || strings.ContainsAny(reg.path, "{} ") {
			errs = append(errs, fmt.Errorf("envsdk: extension %s: bad route %q", reg.ext.URI, reg.path))
			continue
		}
		uris[reg.ext.URI], paths[reg.path] = true, true
		if err := handleSafely(mux, reg.verb+" "+reg.path, s.extensionHandler(reg)); err != nil {
			errs = append(errs, fmt.Errorf("envsdk: extension %s: route %s %s: %w", reg.ext.URI, reg.verb, reg.path, err))
			continue
		}
		if declared[reg.ext.URI] {
			continue
		}
		params := reg.ext.Params
		if len(params) == 0 {
			req, _ := json.Marshal(reg.schema)
			params, _ = json.Marshal(protocol.ExtensionParams{Endpoint: reg.path, Methods: []protocol.ExtensionMethod{
				{Name: reg.ext.Name, Method: reg.verb, Request: req}}})
		}
		required := reg.ext.Required
		out = append(out, protocol.Extension{URI: reg.ext.URI, Description: reg.ext.Description, Params: params, Required: &required})
	}
	if e := s.mountManifests(mux); e != nil && !declared[e.URI] {
		if uris[e.URI] {
			errs = append(errs, fmt.Errorf("envsdk: duplicate extension URI %q", e.URI))
		} else {
			out = append(out, *e)
		}
	}
	if s.getGrant != nil && !declared[protocol.URIDataObjects] {
		out = append(out, protocol.Extension{URI: protocol.URIDataObjects, Description: dataObjectsDescription})
	}
	if len(out) == 0 {
		out = nil
	}
	return out, errs
}

// handleSafely registers a pattern, turning ServeMux's panic on a
// conflicting pattern into an error.
func handleSafely(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

func (s *Server) extensionHandler(reg *extReg) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args map[string]any
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			args = queryArgs(r.URL.Query())
		} else {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					writeJSON(w, http.StatusRequestEntityTooLarge, protocol.NewExtensionError(protocol.ExtCodeInvalidParams, "body too large"))
					return
				}
				writeJSON(w, http.StatusBadRequest, protocol.NewExtensionError(protocol.ExtCodeInvalidParams, "read body: "+err.Error()))
				return
			}
			if len(bytes.TrimSpace(body)) > 0 {
				dec := json.NewDecoder(bytes.NewReader(body))
				dec.UseNumber()
				if err := dec.Decode(&args); err != nil || args == nil || dec.More() {
					writeJSON(w, http.StatusBadRequest, protocol.NewExtensionError(protocol.ExtCodeInvalidParams, "body must be a JSON object"))
					return
				}
			}
		}
		bound, err := reg.binder.bind(args)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, protocol.NewExtensionError(protocol.ExtCodeInvalidParams, err.Error()))
			return
		}
		tc := ToolContext{
			Caller:    resolveCaller(nil, r.Header, r.Header.Get(protocol.HeaderMCPSessionID)),
			Tool:      reg.ext.Name,
			Arguments: bound,
			CallID:    newCallID(),
			Transport: TransportREST,
		}
		ctx := WithToolContext(s.withServer(r.Context()), tc)
		out, err := safeExt(ctx, reg, &Request{ToolContext: tc, Header: r.Header}, bound)
		if err != nil {
			var pe *paramError
			if errors.As(err, &pe) {
				writeJSON(w, http.StatusBadRequest, protocol.NewExtensionError(protocol.ExtCodeInvalidParams, pe.msg))
				return
			}
			writeJSON(w, http.StatusInternalServerError, protocol.NewExtensionError(protocol.ExtCodeExtensionFailed, err.Error()))
			return
		}
		b, err := json.Marshal(out)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, protocol.NewExtensionError(protocol.ExtCodeExtensionFailed, "encode response: "+err.Error()))
			return
		}
		if string(b) == "null" {
			b = []byte("{}")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

func safeExt(ctx context.Context, reg *extReg, req *Request, in json.RawMessage) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("extension %s panicked: %v", reg.ext.Name, p)
		}
	}()
	return reg.serve(ctx, req, in)
}

// queryArgs keeps repeated keys as lists, single keys as strings.
func queryArgs(q url.Values) map[string]any {
	out := make(map[string]any, len(q))
	for k, v := range q {
		if len(v) == 1 {
			out[k] = v[0]
			continue
		}
		l := make([]any, len(v))
		for i, s := range v {
			l[i] = s
		}
		out[k] = l
	}
	return out
}
