package envclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type lookupIn struct {
	Limit int  `json:"limit"`
	Deep  bool `json:"deep,omitempty"`
}

func start(t *testing.T) *envsdktest.Env {
	var mu sync.Mutex
	var store []json.RawMessage
	s := envsdk.New(&protocol.EnvCard{Name: "kv"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	s.HandleReset(func(context.Context) error { mu.Lock(); store = nil; mu.Unlock(); return nil })
	s.HandleAdd(func(_ context.Context, parts []protocol.Part) error {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range parts {
			if p.Kind == protocol.PartKindData {
				if strings.Contains(string(p.Data), "bad") {
					return errors.New("bad row")
				}
				store = append(store, p.Data)
			}
		}
		return nil
	})
	s.HandleGet(func(context.Context) ([]protocol.Part, error) {
		mu.Lock()
		defer mu.Unlock()
		out := []protocol.Part{}
		for _, d := range store {
			out = append(out, protocol.DataPart(d))
		}
		return out, nil
	})
	envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:example:echo/v1", Name: "echo"},
		func(_ context.Context, req *envsdk.Request, in map[string]any) (map[string]any, error) {
			in["role"] = req.Caller.Role
			return in, nil
		})
	envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:example:lookup/v1", Name: "lookup", Method: "GET"},
		func(_ context.Context, _ *envsdk.Request, in lookupIn) (lookupIn, error) { return in, nil })
	return envsdktest.Start(t, s)
}

func TestDataPlane(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	c := envclient.New(env.BaseURL+"/", nil)
	if err := c.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.AddData(ctx, []protocol.Part{protocol.DataPart(json.RawMessage(`{"k":1}`)), protocol.TextPart("skip")}); err != nil {
		t.Fatal(err)
	}
	parts, err := c.GetData(ctx, nil)
	if err != nil || len(parts) != 1 || string(parts[0].Data) != `{"k":1}` {
		t.Fatalf("get = %+v %v", parts, err)
	}
	// Errors come back typed, with the reference's text.
	err = c.AddData(ctx, nil)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams ||
		err.Error() != `invalid_request ({"detail":"parts: must contain at least one part"})` {
		t.Fatalf("empty add: %v", err)
	}
	err = c.AddData(ctx, []protocol.Part{protocol.DataPart(json.RawMessage(`{"bad":1}`))})
	if !errors.Is(err, &protocol.Error{Code: protocol.CodeServerError}) || err.Error() != `bad row ({"code":"add_failed"})` {
		t.Fatalf("handler error: %v", err)
	}
}

func TestCardAndV1(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	c := envclient.New(env.BaseURL, nil)
	card, err := c.GetCard(ctx)
	if err != nil || card.Name != "kv" || card.MCPPath() != "/mcp" {
		t.Fatalf("card %+v %v", card, err)
	}
	if !c.SupportsV1(ctx) {
		t.Fatal("v1 server reported legacy")
	}
	legacy := httptest.NewServer(http.NotFoundHandler())
	defer legacy.Close()
	if envclient.New(legacy.URL, nil).SupportsV1(ctx) {
		t.Fatal("404 reported v1")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if envclient.New("http://"+addr, nil).SupportsV1(ctx) {
		t.Fatal("closed port reported v1")
	}
	if _, err := envclient.New(legacy.URL, nil).GetCard(ctx); err == nil {
		t.Fatal("no error for 404")
	}
}

func TestInvokeExtension(t *testing.T) {
	env := start(t)
	ctx := context.Background()
	c := envclient.New(env.BaseURL, &envclient.Options{Header: http.Header{"Agentenv-Role": {"judge"}}})
	card, err := c.GetCard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.InvokeExtension(ctx, card, "urn:example:echo/v1", map[string]any{"a": 1}, "")
	if err != nil || string(out) != `{"a":1,"role":"judge"}` {
		t.Fatalf("echo %s %v", out, err)
	}
	out, err = c.InvokeExtension(ctx, card, "urn:example:lookup/v1", map[string]any{"limit": 5, "deep": true}, "lookup")
	if err != nil || string(out) != `{"limit":5,"deep":true}` {
		t.Fatalf("lookup %s %v", out, err)
	}
	_, err = c.InvokeExtension(ctx, card, "urn:example:lookup/v1", map[string]any{}, "lookup")
	var he *envclient.HTTPError
	if !errors.As(err, &he) || he.Status != 400 || !strings.Contains(he.Body, "missing parameter: limit") {
		t.Fatalf("missing limit: %v", err)
	}
	_, err = c.InvokeExtension(ctx, card, "urn:example:lookup/v1", nil, "nope")
	if !errors.Is(err, envclient.ErrUnknownMethod) || !strings.Contains(err.Error(), "advertised: lookup") {
		t.Fatalf("unknown method: %v", err)
	}
	_, err = c.InvokeExtension(ctx, card, "urn:nope", nil, "")
	if !errors.Is(err, envclient.ErrUnknownExtension) {
		t.Fatalf("unknown uri: %v", err)
	}
	bare := &protocol.EnvCard{Name: "x", Capabilities: protocol.EnvCapabilities{Extensions: []protocol.Extension{{URI: "urn:bare"}}}}
	if _, err := c.InvokeExtension(ctx, bare, "urn:bare", nil, ""); err == nil || !strings.Contains(err.Error(), "advertised: none") {
		t.Fatalf("no methods: %v", err)
	}
	if m := envclient.FindExtensionMethod(card, "urn:example:lookup/v1", ""); m == nil || m.Method != "GET" || m.Endpoint != "/agentenv/ext/lookup" {
		t.Fatalf("find method %+v", m)
	}
	if p, err := envclient.ExtensionParams(card, "urn:absent"); err != nil || p.Methods != nil {
		t.Fatalf("absent params %+v %v", p, err)
	}
}

func TestDataLoadTimeout(t *testing.T) {
	for n, want := range map[int64]time.Duration{0: 900 * time.Second, 1e9: 2100 * time.Second, 10e9: 3600 * time.Second} {
		if got := envclient.DataLoadTimeout(n); got != want {
			t.Errorf("DataLoadTimeout(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestProbeAdd(t *testing.T) {
	env := start(t)
	ok, err := envclient.New(env.BaseURL, nil).ProbeAdd(context.Background())
	if !ok || err != nil {
		t.Fatalf("registered: %v %v", ok, err)
	}
	bare := envsdk.New(&protocol.EnvCard{Name: "tools"}, &envsdk.Options{Getenv: func(string) string { return "" }})
	benv := envsdktest.Start(t, bare)
	ok, err = envclient.New(benv.BaseURL, nil).ProbeAdd(context.Background())
	if ok || err != nil {
		t.Fatalf("unregistered: %v %v", ok, err)
	}
}

// A data/get whose answer is cut mid-body is sent once more; an answer
// that arrived (here a JSON-RPC error) is not.
func TestGetDataRetriesAnAnswerLostInTransit(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\"")
			buf.Flush()
			conn.Close()
		case 2:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"parts":[{"kind":"data","data":{"n":1}}]}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom","data":{"code":"get_failed"}}}`)
		}
	}))
	defer srv.Close()
	c := envclient.New(srv.URL, nil)
	parts, err := c.GetData(context.Background(), nil)
	if err != nil {
		t.Fatalf("GetData after a cut answer: %v", err)
	}
	if len(parts) != 1 || string(parts[0].Data) != `{"n":1}` || calls.Load() != 2 {
		t.Fatalf("parts %+v after %d calls, want one part after 2", parts, calls.Load())
	}
	if _, err := c.GetData(context.Background(), nil); err == nil || calls.Load() != 3 {
		t.Fatalf("a JSON-RPC error must not be retried: err %v after %d calls", err, calls.Load())
	}
}
