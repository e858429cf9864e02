package triggers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentenv/agentenv/gateway/vclock"
)

// FuzzRegister feeds arbitrary bodies to POST /triggers/register: every
// answer is 200 or a 4xx with the {"ok":false,"error":...} envelope, never a
// 5xx or a panic, and an accepted registration leaves an encodable state.
func FuzzRegister(f *testing.F) {
	seeds := []string{
		mirrorCreate,
		`{"triggers":[{"id":"s","when":{"type":"state","check":{"steps":[{"tool":"a","extract":{"path":"x","match":{"n":{"equals":1}},"take":"id"},"bind":"b"},{"tool":"c","args":{"q":"${b}"},"predicate":{"regex":"^1"}}]}},"actions":[{"type":"permission","action":"disable","role":"r","tools":"*"}]}]}`,
		`{"triggers":[{"id":"t","when":{"type":"time","every":{"dist":"exp","mean":"PT2H"},"seed":7,"count":5,"until":"P1D"},"actions":[]}]}`,
		`{"triggers":[{"id":"t","when":{"type":"time","every":"*/5 * * * *","at":"2026-03-01T09:00:00Z"},"actions":[]}]}`,
		`{"triggers":[{"id":"t","when":{"type":"time","after":"x","offset":"PT1.5S"},"actions":[{"type":"tool","tool":"a","args":{"x":["${y?}",1]}}]}]}`,
		`[]`, `null`, `"x"`, `1e999`, `{"triggers":[null]}`, `{"watch_roles":[1]}`, `{"executor":{"a2a_url":"x","role":"y","timeout_seconds":1e400}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	h := newTestHost()
	h.discovered = false
	e := New(h, vclock.New(nil), nil)
	defer e.Close()
	handler := NewHandler(e, &HandlerOptions{MaxBodyBytes: 4 << 10})
	f.Fuzz(func(t *testing.T, body []byte) {
		e.Clear()
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("POST", "/triggers/register", bytes.NewReader(body)))
		var resp struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("status %d, body not JSON: %q", rec.Code, rec.Body.Bytes())
		}
		switch {
		case rec.Code == http.StatusOK:
			if !resp.OK {
				t.Fatalf("200 without ok: %s", rec.Body.Bytes())
			}
			if _, err := json.Marshal(e.State()); err != nil {
				t.Fatalf("state not encodable after %q: %v", body, err)
			}
		case rec.Code >= 400 && rec.Code < 500:
			if resp.OK || resp.Error == "" {
				t.Fatalf("%d without an error message: %s", rec.Code, rec.Body.Bytes())
			}
			// JSON's whitespace only: bytes.TrimSpace would also take \f or
			// \v, which make the body invalid JSON, not a non-object.
			trimmed := bytes.TrimLeft(body, " \t\r\n")
			if len(body) <= 4<<10 && json.Valid(body) && trimmed[0] != '{' && resp.Error != "body must be a JSON object" {
				t.Fatalf("non-object %q got %q", body, resp.Error)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
		}
	})
}
