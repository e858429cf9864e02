package process

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// The test binary doubles as a plugin: with testPluginEnv set it serves
// the protocol on stdin/stdout instead of running tests, behaving as the
// variable says.
const testPluginEnv = "AGENTENV_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if b := os.Getenv(testPluginEnv); b != "" {
		os.Exit(serveTestPlugin(b))
	}
	os.Exit(m.Run())
}

// testSpec is a Spec that starts this test binary as a plugin behaving as
// behaviour says.
func testSpec(t testing.TB, name, behaviour string) (Spec, *Options) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: name, Command: []string{exe}, Settings: map[string]any{"greeting": "hi"}},
		&Options{Environ: append(os.Environ(), testPluginEnv+"="+behaviour), CancelGrace: 200 * time.Millisecond}
}

type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }

// serveTestPlugin is the test plugin. Behaviours:
//
//	ok       steps echo (metadata), grade (a verification), bad_op, hang,
//	         crash, garbage, slow (honours $/cancelRequest); a sandbox
//	         provider is not offered
//	exit     exits at once
//	badproto answers describe with protocol version 9
//	claims   describes step types roll and deploy_env (a built-in)
func serveTestPlugin(behaviour string) int {
	switch behaviour {
	case "exit":
		fmt.Fprintln(os.Stderr, "cannot start: no licence")
		return 3
	}
	cancels := make(chan jsonrpc2.ID, 16)
	done := make(chan struct{})
	h := jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		switch r.Method {
		case MethodDescribe:
			var p DescribeParams
			_ = json.Unmarshal(*r.Params, &p)
			v := ProtocolVersion
			if behaviour == "badproto" {
				v = "9"
			}
			if behaviour == "claims" {
				return Description{ProtocolVersion: v, Name: "test", Version: "1", Steps: []StepType{{Type: "roll"}, {Type: "deploy_env"}}}, nil
			}
			steps := []StepType{{Type: "echo", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`)}}
			for _, s := range []string{"grade", "bad_op", "hang", "crash", "garbage", "slow"} {
				steps = append(steps, StepType{Type: s})
			}
			steps = append(steps, StepType{Type: "blind", Context: ContextNone}, StepType{Type: "sighted"})
			version := "no settings" // the version proves the settings arrived
			if p.Settings["greeting"] == "hi" && p.Name == "tp" {
				version = "1.2.3"
			}
			return Description{ProtocolVersion: v, Name: "test", Version: version, Steps: steps,
				SandboxProviders: nil}, nil
		case MethodCancel:
			var p CancelParams
			_ = json.Unmarshal(*r.Params, &p)
			cancels <- p.ID
			return nil, nil
		case MethodStepValidate:
			var p ValidateParams
			_ = json.Unmarshal(*r.Params, &p)
			var n int
			_ = json.Unmarshal(p.Fields["n"], &n)
			if n < 0 {
				return ValidateResult{Problems: []Problem{{Field: "n", Message: "must not be negative"}}}, nil
			}
			return ValidateResult{}, nil
		case MethodStepRun:
			var p RunParams
			_ = json.Unmarshal(*r.Params, &p)
			_ = c.Notify(ctx, NotifyLog, LogParams{Token: p.Token, Level: "warn", Message: "running " + p.Type})
			switch p.Type {
			case "echo":
				var n any
				_ = json.Unmarshal(p.Fields["n"], &n)
				return RunResult{Ops: []Op{
					{Op: OpSet, Path: []string{"metadata", p.StepID, "n"}, Value: mustJSON(n)},
					{Op: OpAppend, Path: []string{"metadata", p.StepID, "seen"}, Value: mustJSON(p.Seed["k"])},
				}}, nil
			case "blind", "sighted":
				return RunResult{Ops: []Op{{Op: OpSet, Path: []string{"metadata", p.StepID, "keys"}, Value: mustJSON(len(p.Context))}}}, nil
			case "grade":
				return RunResult{Ops: []Op{{Op: OpSet, Path: []string{"metadata", "verifications", "g1"},
					Value: json.RawMessage(`{"results":[{"id":"r1","result":true}]}`)}}}, nil
			case "bad_op":
				return RunResult{Ops: []Op{
					{Op: OpSet, Path: []string{"metadata", p.StepID, "ok"}, Value: json.RawMessage(`1`)},
					{Op: OpSet, Path: []string{"deployed_envs"}, Value: json.RawMessage(`[]`)},
				}}, nil
			case "hang":
				<-done
			case "crash":
				fmt.Fprintln(os.Stderr, "panic: something broke")
				os.Exit(2)
			case "garbage":
				fmt.Fprintln(os.Stdout, "hello, this is not JSON")
				<-done
			case "slow":
				for id := range cancels {
					if id == r.ID {
						return nil, &jsonrpc2.Error{Code: CodeCancelled, Message: "cancelled"}
					}
				}
			}
			return RunResult{}, nil
		}
		return nil, &jsonrpc2.Error{Code: CodeMethodNotFound, Message: "no method " + r.Method}
	})
	conn := jsonrpc2.NewConn(context.Background(), &lineStream{r: newReader(os.Stdin), w: os.Stdout, closer: func() error { return nil }},
		jsonrpc2.AsyncHandler(h))
	<-conn.DisconnectNotify()
	close(done)
	return 0
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
