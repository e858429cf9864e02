package agentsdk

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Handler errors and undeclared response fields are opaque 500s.
func TestExtensionResponseValidationAndHandlerErrors(t *testing.T) {
	s, err := New(&Card{Name: "x"}, &Options{Agent: Handler(nil)})
	if err != nil {
		t.Fatal(err)
	}
	s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &extension{uri: "urn:example:t/v1", endpoint: "/ext/t", methods: []*extMethod{
		{name: "extra", verb: http.MethodPost, response: fields([]string{"ok"}, nil),
			handle: func(*http.Request, []byte) (any, error) { return map[string]any{"ok": 1, "secret": "s3cret"}, nil }},
		{name: "missing", verb: http.MethodGet, response: fields([]string{"ok"}, nil),
			handle: func(*http.Request, []byte) (any, error) { return map[string]any{}, nil }},
		{name: "panics", verb: http.MethodPut,
			handle: func(*http.Request, []byte) (any, error) { panic("s3cret") }},
	}}
	mux := http.NewServeMux()
	s.mount(mux, e)
	for _, verb := range []string{"POST", "GET", "PUT"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(verb, "/ext/t", strings.NewReader("{}")))
		if rec.Code != 500 || strings.Contains(rec.Body.String(), "s3cret") || !strings.Contains(rec.Body.String(), "Correlation ID: ") {
			t.Errorf("%s: %d %s", verb, rec.Code, rec.Body.String())
		}
	}
}
