package process

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
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
//	         crash, garbage, slow (honours $/cancelRequest), blind (asks
//	         for no context), sighted, mirror (writes the context it got
//	         to its metadata), forget (drops its copy of the context); a
//	         sandbox provider is not offered
//	delta    ok, declaring context_deltas: it keeps its copy of the run
//	         context, applying each step/run's delta in arrival order
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
	var copyOf sync.Map // request id -> the received context of that step/run
	var held *testCopy  // delta: the context copy the plugin keeps
	if behaviour == "delta" {
		held = &testCopy{}
	}
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
			steps = append(steps, StepType{Type: "blind", Context: ContextNone}, StepType{Type: "sighted"},
				StepType{Type: "mirror"}, StepType{Type: "forget"})
			version := "no settings" // the version proves the settings arrived
			if p.Settings["greeting"] == "hi" && p.Name == "tp" {
				version = "1.2.3"
			}
			return Description{ProtocolVersion: v, Name: "test", Version: version, Steps: steps,
				SandboxProviders: nil, ContextDeltas: held != nil}, nil
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
			how := "full"
			if held == nil && (p.ContextVersion != 0 || p.ContextDelta != nil) {
				how = "delta fields sent to a plugin that did not ask for them"
			}
			if v, ok := copyOf.LoadAndDelete(r.ID); ok {
				rcv := v.(received)
				if rcv.err != nil {
					return nil, rcv.err
				}
				p.Context, how = rcv.doc, rcv.how
			}
			_ = c.Notify(ctx, NotifyLog, LogParams{Token: p.Token, Level: "warn", Message: "running " + p.Type})
			switch p.Type {
			case "echo":
				var n any
				_ = json.Unmarshal(p.Fields["n"], &n)
				return RunResult{Ops: []Op{
					{Op: OpSet, Path: []string{"metadata", p.StepID, "n"}, Value: mustJSON(n)},
					{Op: OpAppend, Path: []string{"metadata", p.StepID, "seen"}, Value: mustJSON(p.Seed["k"])},
				}}, nil
			case "mirror":
				return RunResult{Ops: []Op{
					{Op: OpSet, Path: []string{"metadata", p.StepID, "saw"}, Value: mustJSON(p.Context)},
					{Op: OpSet, Path: []string{"metadata", p.StepID, "how"}, Value: mustJSON(how)},
				}}, nil
			case "forget":
				held.forget()
				return RunResult{}, nil
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
	var serve jsonrpc2.Handler = jsonrpc2.AsyncHandler(h)
	if held != nil {
		// Deltas are applied in the order requests arrive, before the
		// request is served on its own goroutine; each step/run gets its
		// own copy of the context.
		async := serve
		serve = handlerFunc(func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
			if r.Method == MethodStepRun && r.Params != nil {
				var p RunParams
				if err := json.Unmarshal(*r.Params, &p); err == nil {
					doc, how, err := held.apply(p)
					copyOf.Store(r.ID, received{doc: doc, how: how, err: err})
				}
			}
			async.Handle(ctx, c, r)
		})
	}
	conn := jsonrpc2.NewConn(context.Background(), &lineStream{r: newReader(os.Stdin), w: os.Stdout, closer: func() error { return nil }},
		serve)
	<-conn.DisconnectNotify()
	close(done)
	return 0
}

type handlerFunc func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { f(ctx, c, r) }

// received is the context a step/run of the delta plugin got: the
// document, "full" or "delta", or why the delta could not be applied.
type received struct {
	doc map[string]any
	how string
	err error
}

// testCopy is the run context copy a delta plugin keeps: what
// docs/plugins.md asks a plugin to do, in Go.
type testCopy struct {
	mu      sync.Mutex
	version uint64
	doc     map[string]any // nil: none held
}

func (t *testCopy) forget() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.doc = nil
}

// apply takes in the context of a step/run and returns how it came and,
// for the mirror step (the only one reading it), a copy of the step's
// context; a delta it cannot apply is a resync error.
func (t *testCopy) apply(p RunParams) (map[string]any, string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	how := "full"
	switch {
	case p.ContextDelta != nil:
		d := p.ContextDelta
		if t.doc == nil || d.Base != t.version {
			t.doc = nil
			return nil, "", &jsonrpc2.Error{Code: CodeContextResync, Message: "no copy of the context at that version"}
		}
		for _, op := range d.Ops {
			var v any
			_ = json.Unmarshal(op.Value, &v)
			if err := applyDeltaOp(t.doc, op, v); err != nil {
				t.doc = nil
				return nil, "", &jsonrpc2.Error{Code: CodeContextResync, Message: err.Error()}
			}
		}
		t.version, how = d.Version, "delta"
	case p.ContextVersion != 0:
		t.doc, t.version = p.Context, p.ContextVersion
	default:
		return p.Context, how, nil
	}
	if p.Type != "mirror" {
		return nil, how, nil // only mirror reads it: no copy to make
	}
	var cp map[string]any
	_ = json.Unmarshal(mustJSON(t.doc), &cp)
	return cp, how, nil
}

// applyDeltaOp applies one delta operation to doc.
func applyDeltaOp(doc map[string]any, op Op, v any) error {
	if len(op.Path) == 0 {
		return fmt.Errorf("empty path")
	}
	parent := doc
	for _, k := range op.Path[:len(op.Path)-1] {
		next, ok := parent[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			parent[k] = next
		}
		parent = next
	}
	last := op.Path[len(op.Path)-1]
	switch op.Op {
	case OpSet:
		parent[last] = v
	case OpAppend:
		l, _ := parent[last].([]any)
		parent[last] = append(l, v)
	case OpDelete:
		delete(parent, last)
	default:
		return fmt.Errorf("unknown op %q", op.Op)
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
