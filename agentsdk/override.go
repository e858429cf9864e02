package agentsdk

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
)

// Overriding the SDK's own operations: all or
// nothing per extension, and an override may call the default.

// OperationOverrider is implemented by agents that replace SDK-owned
// operations. The map is keyed by extension URI, then operation name
// (as on the card); an extension's operations must be overridden all
// together.
type OperationOverrider interface {
	OverrideOperations() map[string]map[string]Override
}

// Override replaces one operation. in.Body is the request body (for GET,
// the query parameters as a JSON object of strings); next runs the SDK's
// default with the same request and body (or a changed one).
type Override func(ctx context.Context, in *ExtRequest, next func(context.Context, *ExtRequest) (any, error)) (any, error)

func (s *Server) applyOverrides() error {
	p, ok := s.opts.Agent.(OperationOverrider)
	if !ok {
		return nil
	}
	overrides := p.OverrideOperations()
	uris := make([]string, 0, len(overrides))
	for u := range overrides {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	for _, uri := range uris {
		ops := overrides[uri]
		i := slices.IndexFunc(s.extensions, func(e *extension) bool { return e.uri == uri })
		if i < 0 {
			return fmt.Errorf("override %s: not an active SDK extension", uri)
		}
		e := s.extensions[i]
		all := append(slices.Clone(e.methods), e.hidden...)
		for name := range ops {
			if !slices.ContainsFunc(all, func(m *extMethod) bool { return m.name == name }) {
				return fmt.Errorf("override %s: no operation %q", uri, name)
			}
		}
		for _, m := range all {
			o := ops[m.name]
			if o == nil {
				return fmt.Errorf("override %s: overriding is all or nothing; %q is missing", uri, m.name)
			}
			def := m.handle
			m.handle = func(r *http.Request, body []byte) (any, error) {
				in := &ExtRequest{Body: body, Header: r.Header}
				if r.Method == http.MethodGet || r.Method == http.MethodHead {
					in.Body = queryObject(r)
				}
				next := func(ctx context.Context, in2 *ExtRequest) (any, error) {
					b := in2.Body
					if r.Method == http.MethodGet || r.Method == http.MethodHead {
						b = nil
					}
					return def(r.WithContext(ctx), b)
				}
				return o(r.Context(), in, next)
			}
		}
	}
	return nil
}
