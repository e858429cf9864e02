package envsdk_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// getJSON fetches a URL and decodes its JSON body generically, so that a
// null and a missing key stay different.
func getJSON(t *testing.T, url string) (int, http.Header, any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %d %q: %v", url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, resp.Header, v
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON in test: %v\n%s", err, s)
	}
	return v
}

func TestCardSpecExample(t *testing.T) {
	s, _ := itemsServer(t, nil)
	env := envsdktest.Start(t, s)
	status, h, got := getJSON(t, env.CardURL)
	if status != 200 || h.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", status, h.Get("Content-Type"))
	}
	// The reference's example card, verbatim.
	want := mustJSON(t, `{"name":"items","protocolVersion":"1.0","url":"/agentenv","preferredTransport":"JSONRPC",
 "additionalInterfaces":[{"url":"/mcp","transport":"mcp"}],
 "capabilities":{"extensions":null,
   "tools":[{"name":"items_add_item","description":"Add an item to the store.",
     "inputSchema":{"type":"object","properties":{
        "item":{"type":"string","description":"The item to add."},
        "times":{"type":"integer","description":"How many copies to add.","default":1}},
      "required":["item"]}}],
   "operations":["data/reset","data/add","data/get"]},
 "children_environments":null}`)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("card (-want +got):\n%s", d)
	}
}

func TestCardDefaultsAndPartialOps(t *testing.T) {
	cases := []struct {
		name  string
		setup func(s *envsdk.Server)
		ops   string
	}{
		{"tools only", func(s *envsdk.Server) {}, `[]`},
		{"reset only", func(s *envsdk.Server) { s.HandleReset(func(context.Context) error { return nil }) }, `["data/reset"]`},
		{"get and add, fixed order", func(s *envsdk.Server) {
			s.HandleGet(func(context.Context) ([]protocol.Part, error) { return nil, nil })
			s.HandleAdd(func(context.Context, []protocol.Part) error { return nil })
		}, `["data/add","data/get"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := envsdk.New(&protocol.EnvCard{Name: "x", Capabilities: protocol.EnvCapabilities{Operations: []string{"data/get"}}},
				&envsdk.Options{Getenv: noEnv})
			c.setup(s)
			env := envsdktest.Start(t, s)
			_, _, got := getJSON(t, env.CardURL)
			want := mustJSON(t, `{"name":"x","protocolVersion":"1.0","url":"/agentenv","preferredTransport":"JSONRPC",
				"additionalInterfaces":[{"url":"/mcp","transport":"mcp"}],
				"capabilities":{"extensions":null,"tools":null,"operations":`+c.ops+`},"children_environments":null}`)
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("card (-want +got):\n%s", d)
			}
		})
	}
}

func TestResetOnlyRejectsAdd(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	s.HandleReset(func(context.Context) error { return nil })
	env := envsdktest.Start(t, s)
	got := postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":1,"method":"data/add","params":{"parts":[{"kind":"data","data":{}}]}}`)
	want := mustJSON(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: data/add"}}`)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	got = postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":2,"method":"data/reset"}`)
	if d := cmp.Diff(mustJSON(t, `{"jsonrpc":"2.0","id":2,"result":{}}`), got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestMCPInterfaceMerge(t *testing.T) {
	cases := []struct {
		name     string
		declared []protocol.Interface
		opts     envsdk.Options
		want     string
	}{
		{"default", nil, envsdk.Options{}, `[{"url":"/mcp","transport":"mcp"}]`},
		{"custom path", nil, envsdk.Options{MCPPath: "/tools/mcp"}, `[{"url":"/tools/mcp","transport":"mcp"}]`},
		{"declared entry wins", []protocol.Interface{{URL: "/declared", Transport: "mcp"}}, envsdk.Options{}, `[{"url":"/declared","transport":"mcp"}]`},
		{"other transports kept, ours after", []protocol.Interface{{URL: "/sse", Transport: "streamable-http"}, {URL: "/g", Transport: "grpc"}},
			envsdk.Options{}, `[{"url":"/sse","transport":"streamable-http"},{"url":"/g","transport":"grpc"},{"url":"/mcp","transport":"mcp"}]`},
		{"no MCP declares none", nil, envsdk.Options{DisableMCP: true}, `[]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Getenv = noEnv
			s := envsdk.New(&protocol.EnvCard{Name: "x", AdditionalInterfaces: c.declared}, &c.opts)
			env := envsdktest.Start(t, s)
			_, _, card := getJSON(t, env.CardURL)
			got := card.(map[string]any)["additionalInterfaces"]
			if d := cmp.Diff(mustJSON(t, c.want), got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestCustomMCPPathServesMCP(t *testing.T) {
	s, _ := itemsServer(t, &envsdk.Options{MCPPath: "/tools/mcp"})
	env := envsdktest.Start(t, s)
	if !strings.HasSuffix(env.MCPURL, "/tools/mcp") {
		t.Fatalf("MCP URL %s", env.MCPURL)
	}
	if res := env.Call(t, "items_add_item", map[string]any{"item": "a"}); res.IsError {
		t.Fatal(res.Text)
	}
}

type MyInbox struct{}

func TestNameResolution(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		cardName string
		impl     any
		want     string
	}{
		{"ENVIRONMENT_NAME wins", map[string]string{"ENVIRONMENT_NAME": "override", "SERVICE_NAME": "svc"}, "author", nil, "override"},
		{"author name next", map[string]string{"SERVICE_NAME": "svc"}, "author", nil, "author"},
		{"empty ENVIRONMENT_NAME falls through", map[string]string{"ENVIRONMENT_NAME": ""}, "author", nil, "author"},
		{"whitespace kept verbatim", map[string]string{"ENVIRONMENT_NAME": "  "}, "author", nil, "  "},
		{"type name last", map[string]string{"SERVICE_NAME": "svc"}, "", &MyInbox{}, "MyInbox"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := envsdk.New(&protocol.EnvCard{Name: c.cardName}, &envsdk.Options{Impl: c.impl, Getenv: func(k string) string { return c.env[k] }})
			envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_t"}, func(context.Context, *envsdk.Request, struct{}) (string, error) { return "", nil })
			env := envsdktest.Start(t, s)
			_, _, card := getJSON(t, env.CardURL)
			if got := card.(map[string]any)["name"]; got != c.want {
				t.Fatalf("name = %q, want %q", got, c.want)
			}
			// The token in tool names and MCP serverInfo follow the same name.
			res := env.Client.GetServerCapabilities()
			_ = res
			lt, err := env.Client.ListTools(context.Background(), mcpListReq())
			if err != nil {
				t.Fatal(err)
			}
			if len(lt.Tools) != 1 || lt.Tools[0].Name != c.want+"_t" {
				t.Fatalf("tools = %+v", lt.Tools)
			}
		})
	}
}

func TestProcessEnvironmentName(t *testing.T) {
	// Default Getenv reads the real process environment.
	t.Setenv("ENVIRONMENT_NAME", "from-env")
	t.Setenv("MCP_HOST", "127.0.0.2")
	t.Setenv("MCP_PORT", "19999")
	s := envsdk.New(&protocol.EnvCard{Name: "author"}, nil)
	if s.Name() != "from-env" || s.Addr() != "127.0.0.2:19999" {
		t.Fatalf("name %q addr %q", s.Name(), s.Addr())
	}
}

func TestHostPort(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	s := envsdk.New(nil, &envsdk.Options{Getenv: get})
	if got := s.Addr(); got != "0.0.0.0:18765" {
		t.Fatalf("default addr %q", got)
	}
	env["MCP_HOST"], env["MCP_PORT"] = "127.0.0.1", "0"
	s = envsdk.New(nil, &envsdk.Options{Getenv: get})
	if got := s.Addr(); got != "127.0.0.1:0" {
		t.Fatalf("addr %q", got)
	}
	if s.Name() != "env" {
		t.Fatalf("fallback name %q", s.Name())
	}
}

// The default card: all three data handlers, nothing else.
func TestDefaultCardFullDataPlane(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "data"}, &envsdk.Options{Getenv: noEnv})
	s.HandleReset(func(context.Context) error { return nil })
	s.HandleAdd(func(context.Context, []protocol.Part) error { return nil })
	s.HandleGet(func(context.Context) ([]protocol.Part, error) { return nil, nil })
	env := envsdktest.Start(t, s)
	_, _, got := getJSON(t, env.CardURL)
	want := mustJSON(t, `{"name":"data","protocolVersion":"1.0","url":"/agentenv","preferredTransport":"JSONRPC",
		"additionalInterfaces":[{"url":"/mcp","transport":"mcp"}],
		"capabilities":{"extensions":null,"tools":null,"operations":["data/reset","data/add","data/get"]},"children_environments":null}`)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("card (-want +got):\n%s", d)
	}
}
