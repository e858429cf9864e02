package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/protocol"
)

type faults struct {
	Tool string  `json:"tool"`
	Rate float64 `json:"rate,omitempty" default:"1"`
}

// A setting is advertised on the card like any extension, a call through
// the card replaces its value (defaults filling the rest), a refused value
// leaves it unchanged, and Reset restores the initial one.
func TestSetting(t *testing.T) {
	s := envsdk.New(&protocol.EnvCard{Name: "cfg"}, &envsdk.Options{Getenv: noEnv})
	set := envsdk.AddSetting(s, &envsdk.Extension{URI: "urn:example:set-faults/v1", Name: "set_faults", Description: "Make a tool fail."},
		faults{Rate: 0}, &envsdk.SettingOptions[faults]{Check: func(_ context.Context, f faults) error {
			if f.Rate < 0 || f.Rate > 1 {
				return errors.New("rate must be between 0 and 1")
			}
			return nil
		}})
	env := envsdktest.Start(t, s)
	ctx := context.Background()
	c := envclient.New(env.BaseURL, nil)
	card, err := c.GetCard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := envclient.FindExtensionMethod(card, "urn:example:set-faults/v1", ""); m == nil || m.Endpoint != "/agentenv/ext/set_faults" || m.Method != "POST" {
		t.Fatalf("card advertises %+v", m)
	}
	if got := set.Get(); got != (faults{}) {
		t.Fatalf("initial = %+v", got)
	}
	res, err := c.InvokeExtension(ctx, card, "urn:example:set-faults/v1", map[string]any{"tool": "email_send_message"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var echoed faults
	if err := json.Unmarshal(res, &echoed); err != nil || echoed != (faults{Tool: "email_send_message", Rate: 1}) {
		t.Fatalf("answer %s", res)
	}
	if got := set.Get(); got != echoed {
		t.Fatalf("Get = %+v, want %+v", got, echoed)
	}
	_, err = c.InvokeExtension(ctx, card, "urn:example:set-faults/v1", map[string]any{"tool": "x", "rate": 2}, "")
	var he *envclient.HTTPError
	if !errors.As(err, &he) || he.Status != 500 {
		t.Fatalf("refused value: %v", err)
	}
	if got := set.Get(); got != echoed {
		t.Fatalf("a refused value took effect: %+v", got)
	}
	set.Reset()
	if got := set.Get(); got != (faults{}) {
		t.Fatalf("after Reset = %+v", got)
	}
}
