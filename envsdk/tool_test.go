package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type addIn struct {
	Item  string `json:"item" description:"The item to add."`
	Times int    `json:"times" description:"How many copies to add." default:"1"`
}

type addOut struct {
	Count int `json:"count"`
}

func noEnv(string) string { return "" }

// itemsServer is the reference's example env: one tool and the full data plane.
func itemsServer(t testing.TB, opts *envsdk.Options) (*envsdk.Server, *[]string) {
	if opts == nil {
		opts = &envsdk.Options{}
	}
	if opts.Getenv == nil {
		opts.Getenv = noEnv
	}
	var mu sync.Mutex
	items := &[]string{}
	s := envsdk.New(&protocol.EnvCard{Name: "items"}, opts)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_add_item", Description: "Add an item to the store."},
		func(ctx context.Context, req *envsdk.Request, in addIn) (addOut, error) {
			mu.Lock()
			defer mu.Unlock()
			if in.Item == "boom" {
				return addOut{}, errors.New("the store refused boom")
			}
			for range in.Times {
				*items = append(*items, in.Item)
			}
			return addOut{Count: len(*items)}, nil
		})
	s.HandleReset(func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		*items = []string{}
		return nil
	})
	s.HandleAdd(func(_ context.Context, parts []protocol.Part) error {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range parts {
			if p.Kind != protocol.PartKindData {
				continue
			}
			var d struct{ Items []string }
			if err := json.Unmarshal(p.Data, &d); err != nil {
				return err
			}
			if len(d.Items) == 1 && d.Items[0] == "fail" {
				return errors.New("seed file is not valid JSON")
			}
			*items = append(*items, d.Items...)
		}
		return nil
	})
	s.HandleGet(func(context.Context) ([]protocol.Part, error) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(map[string]any{"items": *items})
		return []protocol.Part{protocol.DataPart(b)}, nil
	})
	return s, items
}

func TestToolCallMCPGo(t *testing.T) {
	s, items := itemsServer(t, nil)
	env := envsdktest.Start(t, s)

	res := env.Call(t, "items_add_item", map[string]any{"item": "a", "times": 2})
	if res.IsError || string(res.Structured) != `{"count":2}` {
		t.Fatalf("call = %+v", res)
	}
	// The default applies when the key is absent.
	res = env.Call(t, "items_add_item", map[string]any{"item": "b"})
	if res.IsError || !strings.Contains(res.Text, `"count":3`) {
		t.Fatalf("call with default = %+v", res)
	}
	if got := strings.Join(*items, ","); got != "a,a,b" {
		t.Fatalf("items = %s", got)
	}
	// A handler error is an isError result with its text.
	res = env.Call(t, "items_add_item", map[string]any{"item": "boom"})
	if !res.IsError || res.Text != "the store refused boom" {
		t.Fatalf("handler error = %+v", res)
	}
	// Missing or mistyped arguments: input validation answers isError, in
	// words the model can act on (no Go struct dump such as &{Missing:[item]}).
	res = env.Call(t, "items_add_item", map[string]any{"times": 1})
	if !res.IsError || res.Text != "invalid arguments: arguments: missing property 'item'" {
		t.Fatalf("missing item = %+v", res)
	}
	res = env.Call(t, "items_add_item", map[string]any{"item": 3, "times": "x"})
	if !res.IsError || !strings.Contains(res.Text, "item: got number, want string") || strings.ContainsAny(res.Text, "&{}") {
		t.Fatalf("mistyped arguments = %+v", res)
	}
	// Unknown tool: isError result, not a JSON-RPC error.
	res = env.Call(t, "items_nope", map[string]any{})
	if !res.IsError || res.Text != "Unknown tool: items_nope" {
		t.Fatalf("unknown tool = %+v", res)
	}
}
