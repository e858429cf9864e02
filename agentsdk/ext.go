package agentsdk

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
)

// extension is one REST extension served under /ext/… and advertised on
// the card.
type extension struct {
	uri, description, endpoint string
	methods                    []*extMethod
	// hidden methods are served but not advertised.
	hidden []*extMethod
	// extra card params, merged into params.
	extra map[string]any
}

// extMethod is one operation of an extension.
type extMethod struct {
	name, verb string
	// path overrides the extension endpoint for this method.
	path string
	// request and response are the card's field lists ({"required",
	// "optional"} or a oneOf form); nil omits them.
	request, response map[string]any
	// handle answers the operation. body is the JSON body (POST) or nil;
	// query holds the GET parameters. An *httpError answers its status
	// with a plain-text message; any other error is an opaque 500.
	handle func(r *http.Request, body []byte) (any, error)
}

func (e *extension) render() map[string]any {
	methods := map[string]any{}
	for _, m := range e.methods {
		entry := map[string]any{"method": m.verb}
		if m.path != "" && m.path != e.endpoint {
			entry["endpoint"] = m.path
		}
		if m.request != nil {
			entry["request"] = m.request
		}
		if m.response != nil {
			entry["response"] = m.response
		}
		methods[m.name] = entry
	}
	params := map[string]any{}
	for k, v := range e.extra {
		params[k] = v
	}
	if e.endpoint != "" {
		params["endpoint"] = e.endpoint
	}
	params["methods"] = methods
	return map[string]any{"uri": e.uri, "description": e.description, "params": params}
}

func fields(required, optional []string) map[string]any {
	m := map[string]any{"required": nonNil(required)}
	if optional != nil {
		m["optional"] = optional
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// httpError is an expected extension error: status and a plain-text
// message that names fields, never values.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(err error) error { return &httpError{http.StatusBadRequest, err.Error()} }

func conflict(msg string) error { return &httpError{http.StatusConflict, msg} }

func notFound(msg string) error { return &httpError{http.StatusNotFound, msg} }

const maxExtBody = 8 << 20

// mount registers every method of e on mux.
func (s *Server) mount(mux *http.ServeMux, e *extension) {
	for _, m := range append(slices.Clone(e.methods), e.hidden...) {
		path := e.endpoint
		if m.path != "" {
			path = m.path
		}
		mux.HandleFunc(m.verb+" "+path, func(w http.ResponseWriter, r *http.Request) {
			var body []byte
			if m.verb != http.MethodGet {
				b, err := io.ReadAll(io.LimitReader(r.Body, maxExtBody+1))
				if err != nil {
					writeText(w, http.StatusBadRequest, "body could not be read")
					return
				}
				if len(b) > maxExtBody {
					writeText(w, http.StatusRequestEntityTooLarge, "body is too large")
					return
				}
				body = b
			}
			resp, err := s.safeHandle(m, r, body)
			if err != nil {
				var he *httpError
				if errors.As(err, &he) {
					writeText(w, he.status, he.msg)
					return
				}
				s.writeOpaque(w, err, slog.String("extension", e.uri), slog.String("operation", m.name))
				return
			}
			if err := checkResponse(m.response, resp); err != nil {
				s.writeOpaque(w, err, slog.String("extension", e.uri), slog.String("operation", m.name))
				return
			}
			writeJSON(w, http.StatusOK, resp)
		})
	}
}

func (s *Server) safeHandle(m *extMethod, r *http.Request, body []byte) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError{p}
		}
	}()
	return m.handle(r, body)
}

// writeOpaque logs err with a fresh correlation id and answers the
// opaque 500 carrying only that id.
func (s *Server) writeOpaque(w http.ResponseWriter, err error, attrs ...any) {
	id := correlationID()
	s.log.Error("extension handler failed", append(attrs, slog.String("correlation_id", id), slog.Any("error", err))...)
	writeText(w, http.StatusInternalServerError, "An unexpected framework error occurred. Correlation ID: "+id)
}

func correlationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

// bodyless refuses query parameters on an operation that takes none.
func bodyless(q url.Values) error {
	for k := range q {
		return badRequest(errors.New("unexpected field " + k))
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "An unexpected framework error occurred. Correlation ID: "+correlationID())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// checkResponse enforces the declared response fields: an
// undeclared or missing required field is a framework error (500), never
// a leak of whatever the handler produced.
func checkResponse(decl map[string]any, resp any) error {
	if decl == nil {
		return nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return errors.New("response is not a JSON object")
	}
	req, _ := decl["required"].([]string)
	opt, _ := decl["optional"].([]string)
	for _, k := range req {
		if _, ok := m[k]; !ok {
			return errors.New("response misses required field " + k)
		}
	}
	for k := range m {
		if !slices.Contains(req, k) && !slices.Contains(opt, k) {
			return errors.New("response has undeclared field " + k)
		}
	}
	return nil
}
