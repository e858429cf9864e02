package envsdk_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzDataPlane posts arbitrary bodies to a real data-plane HTTP server and
// checks that every answer is HTTP 200 with one well-formed JSON-RPC
// response carrying a spec error code or a result.
//
//	go test -run '^$' -fuzz FuzzDataPlane -fuzztime 30s ./envsdk/
func FuzzDataPlane(f *testing.F) {
	for _, seed := range []string{
		``, `{`, `[]`, `null`, `"x"`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"data/reset"}`,
		`{"jsonrpc":"2.0","id":"a","method":"data/get","params":{}}`,
		`{"jsonrpc":"2.0","id":-1.5,"method":"data/add","params":{"parts":[{"kind":"data","data":{"items":["a"]}}]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"data/add","params":{"parts":[{"kind":"file","file":{"bytes":"aGk=","name":"x"}}]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"data/add","params":{"parts":[{"kind":"file","file":{"uri":"file:///nope"}}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"data/add","params":{"parts":[{"kind":"text","text":"t","metadata":[]}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"data/add","params":{"parts":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"data/add","params":[]}`,
		`{"jsonrpc":"1.0","id":3,"method":"data/add"}`,
		`{"jsonrpc":"2.0","id":{"x":[1]},"method":"x"}`,
		`{"jsonrpc":"2.0","method":"data/get","params":{"write_namespace":"s3cr3t"}}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"data/reset"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"data/add\",\"params\":{\"parts\":[{\"kind\":\"data\",\"data\":{\"\xff\":1}}]}}",
	} {
		f.Add([]byte(seed))
	}
	s, _ := itemsServer(f, nil)
	h, err := s.Handler()
	if err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()
	allowed := map[float64]bool{-32700: true, -32600: true, -32601: true, -32602: true, -32000: true}

	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := client.Post(srv.URL+"/agentenv", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("transport error (server crashed?): %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d type %q for %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, b)
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("answer is not a JSON object: %q", b)
		}
		if string(r["jsonrpc"]) != `"2.0"` {
			t.Fatalf("jsonrpc = %s", r["jsonrpc"])
		}
		if _, ok := r["id"]; !ok {
			t.Fatalf("no id in %s", b)
		}
		_, hasRes := r["result"]
		e, hasErr := r["error"]
		if hasRes == hasErr {
			t.Fatalf("want exactly one of result and error: %s", b)
		}
		if hasErr {
			var pe struct {
				Code    float64 `json:"code"`
				Message string  `json:"message"`
			}
			if err := json.Unmarshal(e, &pe); err != nil || !allowed[pe.Code] || pe.Message == "" {
				t.Fatalf("bad error object %s", e)
			}
		}
		if bytes.Contains(b, []byte("s3cr3t")) {
			t.Fatalf("answer echoes a secret value: %s", b)
		}
	})
}

// FuzzExtension sends arbitrary bodies and query strings to REST
// extensions: every answer is 200 with JSON, or 400 (413 over the body
// limit) with the reference's invalid_params body; never a 500 or a crash.
//
//	go test -run '^$' -fuzz FuzzExtension -fuzztime 30s ./envsdk/
func FuzzExtension(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"message":"hi"}`, "limit=1"},
		{``, "limit=1&verbose=yes&level=2&tags=a&tags=b&when=2026-03-01"},
		{`[]`, "limit=1.5"},
		{`{"message":null}`, "limit=99999999999999999999"},
		{`{"message":{"a":1}}`, "level=4&limit=-1"},
		{`{"message":"x"} {}`, "when=2026-02-30&limit=1"},
		{"{\"message\":\"\xff\"}", "%zz"},
	} {
		f.Add([]byte(seed[0]), seed[1])
	}
	srv := httptest.NewServer(extHandler(f))
	defer srv.Close()
	c := srv.Client()
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		check := func(resp *http.Response, err error) {
			if err != nil {
				t.Fatalf("transport error: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 && resp.StatusCode != 400 && resp.StatusCode != 413 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if !json.Valid(b) {
				t.Fatalf("not JSON: %q", b)
			}
			if resp.StatusCode != 200 && !bytes.HasPrefix(b, []byte(`{"ok":false,"error":{"code":"invalid_params","message":`)) {
				t.Fatalf("400 body %s", b)
			}
		}
		check(c.Post(srv.URL+"/agentenv/ext/echo", "application/json", bytes.NewReader(body)))
		check(c.Get(srv.URL + "/agentenv/ext/lookup?" + url.PathEscape(query)))
		// Raw queries too, when they form a valid request line (net/http
		// itself answers a plain-text 400 otherwise, before any handler).
		if !strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' }) {
			check(c.Get(srv.URL + "/agentenv/ext/lookup?" + query))
		}
	})
}
