package envsdk_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

const validGrant = `{"root_path":"runs/r1","expires_at":"2030-01-01T00:00:00Z","max_objects":3,"max_object_bytes":1000,
 "max_total_bytes":3000,"write":{"kind":"http-post-policy","url":"https://bucket.example/upload",
 "fields":{"policy":"SECRET-POLICY","x-amz-signature":"SECRET-SIG"},"path_field":"key","file_field":"file"}}`

func TestDataObjectsGrant(t *testing.T) {
	var calls atomic.Int64
	var got atomic.Pointer[envsdk.WriteNamespaceGrant]
	s := envsdk.New(&protocol.EnvCard{Name: "g"}, &envsdk.Options{Getenv: noEnv})
	s.HandleGetWithGrant(func(_ context.Context, g *envsdk.WriteNamespaceGrant) ([]protocol.Part, error) {
		calls.Add(1)
		got.Store(g)
		return nil, nil
	})
	env := envsdktest.Start(t, s)
	_, _, card := getJSON(t, env.CardURL)
	want := mustJSON(t, `[{"uri":"urn:agentenv:data-objects/v1","description":"data/get takes a write_namespace grant and may upload its export under it.","params":null,"required":null}]`)
	if d := cmp.Diff(want, card.(map[string]any)["capabilities"].(map[string]any)["extensions"]); d != "" {
		t.Fatalf("card (-want +got):\n%s", d)
	}

	r := postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":1,"method":"data/get","params":{"write_namespace":`+validGrant+`}}`)
	if d := cmp.Diff(mustJSON(t, `{"jsonrpc":"2.0","id":1,"result":{"parts":[]}}`), r); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if g := got.Load(); g == nil || g.RootPath != "runs/r1" || g.MaxObjects != 3 || g.Write.Fields["policy"] != "SECRET-POLICY" {
		t.Fatalf("grant = %+v", g)
	}
	postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":2,"method":"data/get"}`)
	if got.Load() != nil || calls.Load() != 2 {
		t.Fatal("no grant should reach the handler as nil")
	}

	bad := []struct{ grant, detail string }{
		{strings.Replace(validGrant, `"runs/r1"`, `"../etc"`, 1), "write_namespace.root_path"},
		{strings.Replace(validGrant, `"https://bucket`, `"http://bucket`, 1), "write_namespace.write.url"},
		{strings.Replace(validGrant, `"2030-01-01T00:00:00Z"`, `"2030-01-01T00:00:00+02:00"`, 1), "write_namespace.expires_at"},
		{strings.Replace(validGrant, `"2030-01-01T00:00:00Z"`, `"2030-01-01T00:00:00"`, 1), "write_namespace.expires_at"},
		{strings.Replace(validGrant, `"max_objects":3`, `"max_objects":0`, 1), "write_namespace.max_objects"},
		{strings.Replace(validGrant, `"max_objects":3`, `"max_objects":"3"`, 1), "write_namespace.max_objects"},
		{strings.Replace(validGrant, `"max_objects":3`, `"max_objects":3.5`, 1), "write_namespace.max_objects"},
		{strings.Replace(validGrant, `"kind":"http-post-policy"`, `"kind":"http-put"`, 1), "write_namespace.write.kind"},
		{strings.Replace(validGrant, `"root_path"`, `"extra":"SECRET-X","root_path"`, 1), "write_namespace.extra (unknown field)"},
		{`"SECRET-STRING"`, "write_namespace: must be a JSON object"},
	}
	for _, b := range bad {
		r := postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":3,"method":"data/get","params":{"write_namespace":`+b.grant+`}}`)
		e := r.(map[string]any)["error"].(map[string]any)
		detail := e["data"].(map[string]any)["detail"].(string)
		if e["code"].(float64) != -32602 || !strings.Contains(detail, b.detail) || strings.Contains(detail, "SECRET") {
			t.Errorf("%s: %v", b.detail, e)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("handler called for invalid grants: %d", calls.Load())
	}
}

func TestPlainGetIgnoresGrant(t *testing.T) {
	s, _ := itemsServer(t, nil)
	env := envsdktest.Start(t, s)
	card, _ := s.Card()
	if card.FindExtension(protocol.URIDataObjects) != nil {
		t.Fatal("data-objects advertised without a grant handler")
	}
	r := postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":1,"method":"data/get","params":{"write_namespace":"whatever"}}`)
	if _, ok := r.(map[string]any)["result"]; !ok {
		t.Fatalf("grant not ignored: %v", r)
	}
}
