package envclient_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/protocol"
)

func TestIntakeNoClaim(t *testing.T) {
	empty, _ := protocol.Intake{}.Extension()
	if string(empty.Params) != `{}` {
		t.Fatalf("empty declaration = %s", empty.Params)
	}
	for name, exts := range map[string][]protocol.Extension{
		"missing":   nil,
		"no params": {{URI: protocol.URIIntake}},
		"empty":     {empty},
	} {
		in, err := protocol.IntakeOf(&protocol.EnvCard{Name: "x", Capabilities: protocol.EnvCapabilities{Extensions: exts}})
		if in != nil || err != nil {
			t.Errorf("%s: %+v %v", name, in, err)
		}
	}
	if issues := envclient.IntakeFitCheck(nil, json.RawMessage(`{"x":[1]}`), ""); issues != nil {
		t.Fatalf("no declaration: %v", issues)
	}
}

func TestIntakeFitCheck(t *testing.T) {
	ext, _ := protocol.Intake{Add: []protocol.IntakeFormat{
		{Part: "file", Format: "zip-bundle", BundleLayout: "data-json+root/v1"},
		{Part: "data", Format: "json", Load: "replace", Tables: map[string]json.RawMessage{
			"messages": json.RawMessage(`{"type":"object","required":["channel","text"]}`),
			"users":    json.RawMessage(`{"type":"object"}`),
		}},
	}}.Extension()
	card := &protocol.EnvCard{Name: "slack", Capabilities: protocol.EnvCapabilities{Extensions: []protocol.Extension{ext}}}
	b, _ := json.Marshal(card)
	card, _ = protocol.DecodeEnvCard(b) // through the wire
	decl, err := protocol.IntakeOf(card)
	if err != nil || decl == nil {
		t.Fatalf("%+v %v", decl, err)
	}
	cases := []struct {
		data, format string
		want         []string
	}{
		{`{"messages":[{"channel":"g","text":"hi","extra":1}],"users":[],"version":3}`, "", nil},
		{`{"messages":[{"channel":"g"}]}`, "json", []string{`messages[0]: missing required field "text"`}},
		{`{"threads":[{}]}`, "json", []string{`table "threads" is not accepted (declared tables: messages, users)`}},
		{`{}`, "csv", []string{"data/add does not accept part=data format=csv (accepted: [part=file format=zip-bundle, part=data format=json])"}},
	}
	for _, c := range cases {
		if got := envclient.IntakeFitCheck(decl, json.RawMessage(c.data), c.format); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.data, c.format, got, c.want)
		}
	}
	noTables := &protocol.Intake{Add: []protocol.IntakeFormat{{Part: "data", Format: "json"}}}
	if got := envclient.IntakeFitCheck(noTables, json.RawMessage(`{"anything":[{}]}`), "json"); got != nil {
		t.Fatalf("no tables: %v", got)
	}
}
