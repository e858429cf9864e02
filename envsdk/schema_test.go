package envsdk_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// UUID stands for any UUID type (github.com/google/uuid.UUID and the like):
// a type named UUID that marshals as text.
type UUID [16]byte

func (u UUID) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(u[:])), nil }

func (u *UUID) UnmarshalText(b []byte) error {
	s := strings.ReplaceAll(string(b), "-", "")
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != 16 {
		return errors.New("bad uuid")
	}
	copy(u[:], raw)
	return nil
}

type Inner struct {
	X int `json:"x"`
}

type Embedded struct {
	FromEmbedded string `json:"from_embedded" description:"Flattened like encoding/json."`
}

type allTypes struct {
	Embedded
	S       string            `json:"s"`
	I       int               `json:"i"`
	I8      int8              `json:"i8"`
	I64     int64             `json:"i64"`
	U       uint              `json:"u"`
	U32     uint32            `json:"u32"`
	F32     float32           `json:"f32"`
	F64     float64           `json:"f64"`
	B       bool              `json:"b"`
	Strs    []string          `json:"strs"`
	Arr     [2]int            `json:"arr"`
	Anys    []any             `json:"anys"`
	Bytes   []byte            `json:"bytes"`
	M       map[string]int    `json:"m"`
	St      Inner             `json:"st"`
	T       time.Time         `json:"t"`
	D       envsdk.Date       `json:"d"`
	TOD     envsdk.TimeOfDay  `json:"tod"`
	ID      UUID              `json:"id"`
	Dec     envsdk.Decimal    `json:"dec"`
	EnumS   string            `json:"enum_s" enum:"low,high"`
	EnumI   int               `json:"enum_i" enum:"1,2,3"`
	Ptr     *int              `json:"ptr"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	Omit    string            `json:"omit,omitempty"`
	Zero    int               `json:"zero,omitzero"`
	Def     int               `json:"def" default:"5" description:"With a default."`
	DefB    bool              `json:"def_b" default:"true"`
	DefF    float64           `json:"def_f" default:"0.5"`
	DefS    string            `json:"def_s" default:"hi"`
	DefL    []string          `json:"def_l" default:"[\"a\"]"`
	NoTag   string            // named like the field
	Skipped string            `json:"-"`
	private string            //nolint:unused // unexported: not a property
	Nested  map[string][]bool `json:"nested"`
}

const allTypesSchema = `{"type":"object","properties":{
 "s":{"type":"string"},
 "i":{"type":"integer"},"i8":{"type":"integer"},"i64":{"type":"integer"},"u":{"type":"integer"},"u32":{"type":"integer"},
 "f32":{"type":"number"},"f64":{"type":"number"},
 "b":{"type":"boolean"},
 "strs":{"type":"array","items":{"type":"string"}},
 "arr":{"type":"array","items":{"type":"integer"}},
 "anys":{"type":"array"},
 "bytes":{"type":"string","contentEncoding":"base64"},
 "m":{"type":"object"},
 "st":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},
 "t":{"type":"string","format":"date-time"},
 "d":{"type":"string","format":"date"},
 "tod":{"type":"string","format":"time"},
 "id":{"type":"string","format":"uuid"},
 "dec":{"type":"string"},
 "enum_s":{"type":"string","enum":["low","high"]},
 "enum_i":{"type":"integer","enum":[1,2,3]},
 "ptr":{"type":"integer"},
 "any":{},
 "raw":{},
 "omit":{"type":"string"},
 "zero":{"type":"integer"},
 "def":{"type":"integer","default":5,"description":"With a default."},
 "def_b":{"type":"boolean","default":true},
 "def_f":{"type":"number","default":0.5},
 "def_s":{"type":"string","default":"hi"},
 "def_l":{"type":"array","items":{"type":"string"},"default":["a"]},
 "NoTag":{"type":"string"},
 "nested":{"type":"object"},
 "from_embedded":{"type":"string","description":"Flattened like encoding/json."}},
 "required":["s","i","i8","i64","u","u32","f32","f64","b","strs","arr","anys","bytes","m","st","t","d","tod","id","dec",
   "enum_s","enum_i","any","raw","NoTag","nested","from_embedded"]}`

func TestSchemaDerivationEveryType(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "schema"}, &envsdk.Options{Getenv: noEnv})
	var got allTypes
	envsdk.AddTool(s, &envsdk.Tool{Name: "all"}, func(_ context.Context, _ *envsdk.Request, in allTypes) (string, error) {
		got = in
		return "ok", nil
	})
	env := envsdktest.Start(t, s)
	want := mustJSON(t, allTypesSchema)

	_, _, card := getJSON(t, env.CardURL)
	cardSchema := card.(map[string]any)["capabilities"].(map[string]any)["tools"].([]any)[0].(map[string]any)["inputSchema"]
	if d := cmp.Diff(want, cardSchema); d != "" {
		t.Fatalf("card schema (-want +got):\n%s", d)
	}
	// tools/list, read raw (the typed client drops keywords), agrees.
	resp, err := env.Client.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: "2.0", ID: mcp.NewRequestId(int64(99)), Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []struct {
			InputSchema any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil || len(list.Tools) != 1 {
		t.Fatalf("tools/list: %v %s", err, resp.Result)
	}
	if d := cmp.Diff(want, list.Tools[0].InputSchema); d != "" {
		t.Fatalf("tools/list schema (-want +got):\n%s", d)
	}

	// A call with every required field decodes into the struct, defaults applied.
	args := map[string]any{"s": "x", "i": 1, "i8": 2, "i64": 9007199254740993, "u": 4, "u32": 5, "f32": 1.5, "f64": 2.5, "b": true,
		"strs": []string{"a"}, "arr": []int{1, 2}, "anys": []any{1, "a"}, "bytes": "aGk=", "m": map[string]int{"k": 1},
		"st": map[string]int{"x": 7}, "t": "2026-03-01T09:00:00Z", "d": "2026-03-01", "tod": "09:30:00",
		"id": "0123456789abcdef0123456789abcdef", "dec": "1.10", "enum_s": "low", "enum_i": 2, "any": nil, "raw": map[string]any{"r": 1},
		"NoTag": "n", "nested": map[string][]bool{"k": {true}}, "from_embedded": "e"}
	if res := env.Call(t, "all", args); res.IsError {
		t.Fatalf("call: %s", res.Text)
	}
	if got.I64 != 9007199254740993 || got.Def != 5 || !got.DefB || got.DefS != "hi" || got.DefL[0] != "a" || got.St.X != 7 ||
		string(got.Bytes) != "hi" || got.FromEmbedded != "e" || got.T.Hour() != 9 || string(got.Raw) != `{"r":1}` {
		t.Fatalf("decoded = %+v", got)
	}
	// The enum is enforced by input validation.
	args["enum_s"] = "medium"
	if res := env.Call(t, "all", args); !res.IsError {
		t.Fatal("enum violation accepted")
	}
}

type recursive struct {
	Name     string       `json:"name"`
	Children []*recursive `json:"children,omitempty"`
}

type outShape struct {
	Total int `json:"total"`
}

func TestSchemaRecursiveAndOutput(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	envsdk.AddTool(s, &envsdk.Tool{Name: "tree"}, func(_ context.Context, _ *envsdk.Request, in recursive) (outShape, error) {
		return outShape{Total: 1 + len(in.Children)}, nil
	})
	envsdk.AddTool(s, &envsdk.Tool{Name: "mapin"}, func(_ context.Context, _ *envsdk.Request, in map[string]any) (map[string]any, error) {
		return in, nil
	})
	env := envsdktest.Start(t, s)
	lt, err := env.Client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcp.Tool{}
	for _, tl := range lt.Tools {
		byName[tl.Name] = tl
	}
	if byName["tree"].OutputSchema.Type != "object" || byName["tree"].OutputSchema.Required[0] != "total" {
		t.Fatalf("output schema = %+v", byName["tree"].OutputSchema)
	}
	res := env.Call(t, "tree", map[string]any{"name": "r", "children": []any{map[string]any{"name": "c"}}})
	if res.IsError || string(res.Structured) != `{"total":2}` {
		t.Fatalf("tree = %+v", res)
	}
	res = env.Call(t, "mapin", map[string]any{"k": "v"})
	if res.IsError || res.Text != `{"k":"v"}` || res.Structured != nil {
		t.Fatalf("mapin = %+v", res)
	}
}

func TestConstructionErrors(t *testing.T) {
	noop := func(context.Context, *envsdk.Request, struct{}) (string, error) { return "", nil }
	cases := []struct {
		name  string
		setup func(s *envsdk.Server)
		want  []string
	}{
		{"duplicate tool", func(s *envsdk.Server) {
			envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_a"}, noop)
			envsdk.AddTool(s, &envsdk.Tool{Name: "env_a"}, noop)
		}, []string{`duplicate tool name "env_a"`}},
		{"legacy service token", func(s *envsdk.Server) { envsdk.AddTool(s, &envsdk.Tool{Name: "{service}_a"}, noop) },
			[]string{"{service}", "use {environment_name}"}},
		{"unknown token", func(s *envsdk.Server) { envsdk.AddTool(s, &envsdk.Tool{Name: "{env}_a"}, noop) },
			[]string{`"{env}_a"`, "unknown token {env}"}},
		{"stray brace", func(s *envsdk.Server) { envsdk.AddTool(s, &envsdk.Tool{Name: "a}"}, noop) }, []string{`"a}"`}},
		{"scalar input", func(s *envsdk.Server) {
			envsdk.AddTool(s, &envsdk.Tool{Name: "n"}, func(context.Context, *envsdk.Request, int) (string, error) { return "", nil })
		}, []string{"tool n: input", "struct or map"}},
		{"duplicate extension URI", func(s *envsdk.Server) {
			envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:x", Name: "a"}, noopExt)
			envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:x", Name: "b"}, noopExt)
		}, []string{`duplicate extension URI "urn:x"`}},
		{"duplicate extension path", func(s *envsdk.Server) {
			envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:x", Name: "a"}, noopExt)
			envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:y", Name: "a"}, noopExt)
		}, []string{`urn:y: duplicate route "/agentenv/ext/a"`}},
		{"extension on the data plane path", func(s *envsdk.Server) {
			envsdk.AddExtension(s, &envsdk.Extension{URI: "urn:x", Name: "a", Path: "/agentenv"}, noopExt)
		}, []string{`duplicate route "/agentenv"`}},
		{"bad body limit", nil, []string{"AGENTENV_MAX_BODY_BYTES"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) string {
				if c.setup == nil && k == "AGENTENV_MAX_BODY_BYTES" {
					return "lots"
				}
				return ""
			}
			s := envsdk.New(&protocol.EnvCard{Name: "env"}, &envsdk.Options{Getenv: getenv})
			if c.setup != nil {
				c.setup(s)
			}
			_, err := s.Handler()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			if err2 := s.Run(context.Background()); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("Run error %v", err2)
			}
		})
	}
}

func noopExt(context.Context, *envsdk.Request, struct{}) (any, error) { return nil, nil }

func TestRegistrationAfterBuildIsAnError(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "x"}, &envsdk.Options{Getenv: noEnv})
	if _, err := s.Handler(); err != nil {
		t.Fatal(err)
	}
	s.HandleReset(func(context.Context) error { return nil })
	if _, err := s.Handler(); err == nil || !strings.Contains(err.Error(), "data/reset registered after") {
		t.Fatalf("err = %v", err)
	}
}

func TestCardDeclaredToolWins(t *testing.T) {
	declared := protocol.ToolDescriptor{Name: "{environment_name}_add_item", Description: "Declared description.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`)}
	s := envsdk.New(&protocol.EnvCard{Name: "items", Capabilities: protocol.EnvCapabilities{Tools: []protocol.ToolDescriptor{declared}}},
		&envsdk.Options{Getenv: noEnv})
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_add_item", Description: "Derived."},
		func(_ context.Context, _ *envsdk.Request, in addIn) (string, error) { return in.Item, nil })
	env := envsdktest.Start(t, s)
	card, _ := s.Card()
	if len(card.Capabilities.Tools) != 1 || card.Capabilities.Tools[0].Description != "Declared description." ||
		card.Capabilities.Tools[0].Name != "items_add_item" {
		t.Fatalf("card tools = %+v", card.Capabilities.Tools)
	}
	lt, err := env.Client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Description != "Declared description." {
		t.Fatalf("tools/list = %+v %v", lt, err)
	}
	if _, ok := lt.Tools[0].InputSchema.Properties["times"]; ok {
		t.Fatalf("tools/list used the derived schema: %+v", lt.Tools[0].InputSchema)
	}
}

// jsonTagged carries descriptions the way other schema libraries write
// them: jsonschema-go's whole-tag description, the key=value form, and the
// description tag winning over both.
type jsonTagged struct {
	Text  string `json:"text" jsonschema:"the note to keep, verbatim"`
	Kind  string `json:"kind" jsonschema:"description=Kind of note,enum=a|b"`
	Flags string `json:"flags" jsonschema:"required,minLength=1"`
	Both  string `json:"both" description:"From description." jsonschema:"from jsonschema"`
}

// The jsonschema tag gives a parameter its description, so a tool struct
// written for jsonschema-go passes the tool schema release gate.
func TestSchemaJSONSchemaTag(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "tags"}, &envsdk.Options{Getenv: noEnv})
	envsdk.AddTool(s, &envsdk.Tool{Name: "tagged"}, func(context.Context, *envsdk.Request, jsonTagged) (string, error) { return "ok", nil })
	env := envsdktest.Start(t, s)
	_, _, card := getJSON(t, env.CardURL)
	props := card.(map[string]any)["capabilities"].(map[string]any)["tools"].([]any)[0].(map[string]any)["inputSchema"].(map[string]any)["properties"].(map[string]any)
	for name, want := range map[string]any{"text": "the note to keep, verbatim", "kind": "Kind of note", "flags": nil, "both": "From description."} {
		if got := props[name].(map[string]any)["description"]; got != want {
			t.Errorf("%s: description %v, want %v", name, got, want)
		}
	}
}
