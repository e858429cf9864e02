package envsdk_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

func TestDataPlaneRoundTrip(t *testing.T) {
	s, _ := itemsServer(t, nil)
	env := envsdktest.Start(t, s)
	steps := []struct{ req, resp string }{
		{`{"jsonrpc":"2.0","id":7,"method":"data/add","params":{"parts":[{"kind":"data","data":{"items":["a"]}}]}}`,
			`{"jsonrpc":"2.0","id":7,"result":{}}`},
		{`{"jsonrpc":"2.0","id":8,"method":"data/add","params":{"parts":[{"kind":"text","text":"ignored"},{"kind":"data","data":{"items":["b"]},"metadata":{"m":1}}]}}`,
			`{"jsonrpc":"2.0","id":8,"result":{}}`},
		{`{"jsonrpc":"2.0","id":"g","method":"data/get"}`,
			`{"jsonrpc":"2.0","id":"g","result":{"parts":[{"kind":"data","data":{"items":["a","b"]}}]}}`},
		{`{"jsonrpc":"2.0","id":9,"method":"data/reset","params":null}`, `{"jsonrpc":"2.0","id":9,"result":{}}`},
		{`{"jsonrpc":"2.0","id":10,"method":"data/get","params":{}}`,
			`{"jsonrpc":"2.0","id":10,"result":{"parts":[{"kind":"data","data":{"items":[]}}]}}`},
	}
	for _, st := range steps {
		got := postRPC(t, env.DataURL, st.req)
		if d := cmp.Diff(mustJSON(t, st.resp), got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", st.req, d)
		}
	}
}

func TestDataPlaneErrors(t *testing.T) {
	s, items := itemsServer(t, &envsdk.Options{MaxBodyBytes: 1024})
	env := envsdktest.Start(t, s)
	big := `{"jsonrpc":"2.0","id":1,"method":"data/add","params":{"parts":[{"kind":"text","text":"` + strings.Repeat("x", 2000) + `"}]}}`
	cases := []struct{ name, req, resp string }{
		{"not JSON", `{"jsonrpc":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"empty body", ``, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"data/reset"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`},
		{"scalar", `42`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"data/reset"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request"}}`},
		{"jsonrpc missing", `{"id":3,"method":"data/reset"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request"}}`},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":3,"method":"data/reset"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request"}}`},
		{"no method", `{"jsonrpc":"2.0","id":4}`, `{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request"}}`},
		{"method not a string", `{"jsonrpc":"2.0","id":4,"method":7}`, `{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request"}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"data/drop"}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"method not found: data/drop"}}`},
		{"parts missing", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts: required"}}}`},
		{"parts empty (probe)", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{"parts":[]}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts: must contain at least one part"}}}`},
		{"parts not a list", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{"parts":{}}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts: must be a list"}}}`},
		{"unknown kind", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{"parts":[{"kind":"image"}]}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts[0].kind: unknown part kind \"image\" (want text, data or file)"}}}`},
		{"data not an object", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{"parts":[{"kind":"data","data":[1]}]}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts[0].data: must be a JSON object"}}}`},
		{"file without bytes or uri", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{"parts":[{"kind":"file","file":{"name":"x"}}]}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts[0].file: needs bytes or uri"}}}`},
		{"bad base64", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":{"parts":[{"kind":"file","file":{"bytes":"!!"}}]}}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"parts[0].file.bytes: illegal base64 data at input byte 0"}}}`},
		{"params as a list (add)", `{"jsonrpc":"2.0","id":6,"method":"data/add","params":[]}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"params: must be a JSON object"}}}`},
		{"params as a list (get)", `{"jsonrpc":"2.0","id":6,"method":"data/get","params":[1]}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"invalid_request","data":{"detail":"params: must be a JSON object"}}}`},
		{"handler error", `{"jsonrpc":"2.0","id":9,"method":"data/add","params":{"parts":[{"kind":"data","data":{"items":["fail"]}}]}}`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32000,"message":"seed file is not valid JSON","data":{"code":"add_failed"}}}`},
		{"oversized body", big, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request","data":{"detail":"body exceeds 1024 bytes"}}}`},
		// Ids are echoed verbatim whatever their type; notifications get an answer.
		{"negative id", `{"jsonrpc":"2.0","id":-3,"method":"data/nope"}`, `{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"method not found: data/nope"}}`},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"data/reset"}`, `{"jsonrpc":"2.0","id":1.5,"result":{}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"data/reset"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"notification", `{"jsonrpc":"2.0","method":"data/reset"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"data/reset"}`, `{"jsonrpc":"2.0","id":{"a":1},"result":{}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := postRPC(t, env.DataURL, c.req)
			if d := cmp.Diff(mustJSON(t, c.resp), got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
	// Bad input never changed the state (the last good call was a reset).
	if len(*items) != 0 {
		t.Fatalf("state changed by bad input: %v", *items)
	}
	resp, err := http.Get(env.DataURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /agentenv = %d, want 405", resp.StatusCode)
	}
}

func TestToolsOnlyAnswersMethodNotFound(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	env := envsdktest.Start(t, s)
	for _, m := range []string{"data/reset", "data/add", "data/get"} {
		got := postRPC(t, env.DataURL, `{"jsonrpc":"2.0","id":1,"method":"`+m+`","params":{"parts":[]}}`)
		want := mustJSON(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: `+m+`"}}`)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", m, d)
		}
	}
}

func TestDataHandlerFailuresAndPanics(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	s.HandleReset(func(context.Context) error { return errors.New("disk full") })
	s.HandleAdd(func(context.Context, []protocol.Part) error { panic("bad seed") })
	s.HandleGet(func(context.Context) ([]protocol.Part, error) { return nil, errors.New("cannot export") })
	env := envsdktest.Start(t, s)
	cases := []struct{ req, resp string }{
		{`{"jsonrpc":"2.0","id":1,"method":"data/reset"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"disk full","data":{"code":"reset_failed"}}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"data/add","params":{"parts":[{"kind":"text","text":"x"}]}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"handler panicked: bad seed","data":{"code":"add_failed"}}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"data/get"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"cannot export","data":{"code":"get_failed"}}}`},
	}
	for _, c := range cases {
		got := postRPC(t, env.DataURL, c.req)
		if d := cmp.Diff(mustJSON(t, c.resp), got); d != "" {
			t.Fatalf("%s (-want +got):\n%s", c.req, d)
		}
	}
}

func TestDataHandlerContextCancelledOnDisconnect(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	s.HandleReset(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})
	env := envsdktest.Start(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.DataURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"data/reset"}`))
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel()
	<-cancelled // the handler saw the client go away
	if err := <-errc; err == nil {
		t.Fatal("request succeeded after cancel")
	}
}
