package agentsdk_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
)

// customAgent mirrors the reference's custom_extensions example: a
// word-count extension and a two-operation notes extension.
type customAgent struct {
	exts  []agentsdk.Extension
	mu    sync.Mutex
	notes []string
}

func (a *customAgent) Run(context.Context, *agentsdk.Task) (*agentsdk.Result, error) {
	return agentsdk.Text("ok"), nil
}

func (a *customAgent) Extensions() []agentsdk.Extension { return a.exts }

func newCustomAgent() *customAgent {
	a := &customAgent{}
	a.exts = []agentsdk.Extension{
		{URI: "urn:example:word-count/v1", Description: "Counts words", Endpoint: "/ext/word-count/v1",
			Params: map[string]any{"max_chars": 1000},
			Methods: []agentsdk.Method{{Name: "count", Request: &agentsdk.Fields{Required: []string{"text"}}, Response: &agentsdk.Fields{Required: []string{"words"}},
				Handle: func(ctx context.Context, in *agentsdk.ExtRequest) (any, error) {
					var b struct{ Text string }
					if err := in.Decode(&b); err != nil {
						return nil, agentsdk.ExtError(400, "text: must be a string")
					}
					if b.Text == "boom" {
						return nil, errors.New("internal s3cret failure")
					}
					if b.Text == "leak" {
						return map[string]any{"words": 1, "debug": "s3cret"}, nil
					}
					return map[string]any{"words": len(strings.Fields(b.Text))}, nil
				}}}},
		{URI: "urn:example:notes/v1", Description: "Notes", Endpoint: "/ext/notes/v1", Methods: []agentsdk.Method{
			{Name: "add", Request: &agentsdk.Fields{Required: []string{"note"}}, Response: &agentsdk.Fields{Required: []string{"count"}},
				Handle: func(ctx context.Context, in *agentsdk.ExtRequest) (any, error) {
					var b struct{ Note string }
					_ = in.Decode(&b)
					a.mu.Lock()
					defer a.mu.Unlock()
					a.notes = append(a.notes, b.Note)
					return map[string]any{"count": len(a.notes)}, nil
				}},
			{Name: "list", Verb: "GET", Response: &agentsdk.Fields{Required: []string{"notes"}},
				Handle: func(ctx context.Context, in *agentsdk.ExtRequest) (any, error) {
					a.mu.Lock()
					defer a.mu.Unlock()
					return map[string]any{"notes": append([]string{}, a.notes...)}, nil
				}},
		}},
	}
	return a
}

func TestCustomExtensions(t *testing.T) {
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "custom"}, &agentsdk.Options{Agent: newCustomAgent(), Logger: quiet()})
	wc := cardExtension(t, a, "urn:example:word-count/v1")
	params := wc["params"].(map[string]any)
	if params["endpoint"] != "/ext/word-count/v1" || params["max_chars"] != float64(1000) {
		t.Fatalf("card = %v", wc)
	}
	if st, body := ext(t, a, "POST", "/ext/word-count/v1", map[string]any{"text": "one two three"}); st != 200 || body != `{"words":3}` {
		t.Fatalf("count: %d %s", st, body)
	}
	for _, c := range []struct {
		body   any
		status int
	}{
		{map[string]any{}, 400},                    // missing required
		{map[string]any{"text": "a", "x": 1}, 400}, // unknown field
		{"[1]", 400},                          // not an object
		{map[string]any{"text": 5}, 400},      // ExtError from the handler
		{map[string]any{"text": "boom"}, 500}, // handler error: opaque
		{map[string]any{"text": "leak"}, 500}, // undeclared response field
	} {
		st, body := ext(t, a, "POST", "/ext/word-count/v1", c.body)
		if st != c.status || strings.Contains(body, "s3cret") {
			t.Errorf("%v: %d %s, want %d", c.body, st, body, c.status)
		}
		if st == 500 && !corrRE.MatchString(body) {
			t.Errorf("500 body = %q", body)
		}
	}
	ext(t, a, "POST", "/ext/notes/v1", map[string]any{"note": "a"})
	if st, body := ext(t, a, "GET", "/ext/notes/v1", nil); st != 200 || body != `{"notes":["a"]}` {
		t.Fatalf("list: %d %s", st, body)
	}
	if st, _ := ext(t, a, "GET", "/ext/notes/v1?x=1", nil); st != 400 {
		t.Fatalf("bodyless list with a field: %d", st)
	}
	if st, _ := ext(t, a, http.MethodDelete, "/ext/notes/v1", nil); st != 405 {
		t.Fatalf("wrong verb: %d", st)
	}
}

func TestCustomExtensionRegistrationErrors(t *testing.T) {
	h := func(context.Context, *agentsdk.ExtRequest) (any, error) { return map[string]any{}, nil }
	m := []agentsdk.Method{{Name: "op", Handle: h}}
	for name, e := range map[string]agentsdk.Extension{
		"reserved uri":      {URI: "urn:agentenv:tools/v1", Endpoint: "/ext/t", Methods: m},
		"shadows health":    {URI: "urn:x:a/v1", Endpoint: "/health", Methods: []agentsdk.Method{{Name: "op", Verb: "GET", Handle: h}}},
		"shadows rpc":       {URI: "urn:x:a/v1", Endpoint: "/a2a", Methods: m},
		"shadows card":      {URI: "urn:x:a/v1", Endpoint: "/.well-known/agent.json", Methods: []agentsdk.Method{{Name: "op", Verb: "GET", Handle: h}}},
		"collides with sdk": {URI: "urn:x:a/v1", Endpoint: "/ext/mcp-config", Methods: m},
		"no methods":        {URI: "urn:x:a/v1", Endpoint: "/ext/a"},
		"no handler":        {URI: "urn:x:a/v1", Endpoint: "/ext/a", Methods: []agentsdk.Method{{Name: "op"}}},
		"pattern in path":   {URI: "urn:x:a/v1", Endpoint: "/ext/{x}", Methods: m},
	} {
		ag := &customAgent{exts: []agentsdk.Extension{e}}
		if _, err := agentsdk.New(&agentsdk.Card{Name: "x"}, &agentsdk.Options{Agent: ag}); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
	twice := &customAgent{exts: []agentsdk.Extension{{URI: "urn:x:a/v1", Endpoint: "/ext/a", Methods: m}, {URI: "urn:x:a/v1", Endpoint: "/ext/b", Methods: m}}}
	if _, err := agentsdk.New(&agentsdk.Card{Name: "x"}, &agentsdk.Options{Agent: twice}); err == nil {
		t.Error("duplicate uri: want error")
	}
	dupRoute := &customAgent{exts: []agentsdk.Extension{{URI: "urn:x:a/v1", Endpoint: "/ext/a", Methods: m}, {URI: "urn:x:b/v1", Endpoint: "/ext/a", Methods: m}}}
	if _, err := agentsdk.New(&agentsdk.Card{Name: "x"}, &agentsdk.Options{Agent: dupRoute}); err == nil {
		t.Error("duplicate route: want error")
	}
}
