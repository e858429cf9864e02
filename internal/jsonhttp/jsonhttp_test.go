package jsonhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/internal/jsonhttp"
)

// echo answers with the body it read, or the ReadBody failure.
func echo(limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status, msg := jsonhttp.ReadBody(w, r, limit)
		if status != 0 {
			jsonhttp.Write(w, status, map[string]any{"ok": false, "error": msg})
			return
		}
		jsonhttp.Write(w, http.StatusOK, map[string]string{"got": string(body)})
	})
}

func TestReadBodyAndWrite(t *testing.T) {
	srv := httptest.NewServer(echo(8))
	defer srv.Close()
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"within the limit, not HTML-escaped", "<a&b>", http.StatusOK, `{"got":"<a&b>"}`},
		{"exactly the limit", "12345678", http.StatusOK, `{"got":"12345678"}`},
		{"over the limit", "123456789", http.StatusRequestEntityTooLarge, `{"error":"request body too large","ok":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(got) != tc.want {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, got, tc.status, tc.want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestWriteUnencodable(t *testing.T) {
	rec := httptest.NewRecorder()
	jsonhttp.Write(rec, http.StatusOK, map[string]any{"f": func() {}})
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"ok":false,"error":"encoding failed"}` {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}
