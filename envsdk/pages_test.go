package envsdk_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
)

// TestPagesServeBesideMCP: pages answer under their prefix on the
// server's port while MCP still serves, and are not on the card.
func TestPagesServeBesideMCP(t *testing.T) {
	s := envsdk.New(nil, &envsdk.Options{Impl: "pages", Logger: discardLogger()})
	envsdk.AddTool(s, &envsdk.Tool{Name: "echo"}, func(_ context.Context, _ *envsdk.Request, in echoIn) (echoIn, error) { return in, nil })
	s.HandlePages("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "page "+r.URL.Path)
	}))
	env := envsdktest.Start(t, s)
	resp, err := http.Get(env.BaseURL + "/console/tables?x=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "page /console/tables" {
		t.Fatalf("page: %d %q", resp.StatusCode, body)
	}
	if res := env.Call(t, "echo", map[string]any{"message": "hi"}); res.IsError {
		t.Fatalf("echo beside pages: %+v", res)
	}
	card, err := s.Card()
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := json.Marshal(card); strings.Contains(string(c), "console") {
		t.Fatalf("pages advertised on the card: %s", c)
	}
}

func TestPagesBadPrefix(t *testing.T) {
	h := http.NotFoundHandler()
	for _, prefix := range []string{"console/", "/console", "/", "/agentenv/", "/a//b/", "/.well-known/"} {
		s := envsdk.New(nil, &envsdk.Options{Impl: "pages", Logger: discardLogger()})
		s.HandlePages(prefix, h)
		if _, err := s.Handler(); err == nil || !strings.Contains(err.Error(), prefix) {
			t.Errorf("prefix %q: err = %v, want one naming it", prefix, err)
		}
	}
}
