package triggers

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// testHost is a real Host implementation for tests: tools are Go functions,
// role rules and trajectory events are recorded.
type testHost struct {
	mu         sync.Mutex
	tools      map[string]toolFunc
	readOnly   map[string]bool
	discovered bool
	calls      []hostCall
	rules      []string
	traj       []TrajectoryEvent
	changelog  int64
	callNotify chan hostCall
}

type toolFunc func(ctx context.Context, as string, args map[string]any) (text string, isError bool, err error)

type hostCall struct {
	As   string
	Tool string
	Args map[string]any
	At   time.Time
}

func newTestHost() *testHost {
	return &testHost{tools: map[string]toolFunc{}, readOnly: map[string]bool{}, discovered: true}
}

func (h *testHost) tool(name string, fn toolFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tools[name] = fn
}

func (h *testHost) text(name, text string) {
	h.tool(name, func(context.Context, string, map[string]any) (string, bool, error) { return text, false, nil })
}

func (h *testHost) CallTool(ctx context.Context, as, tool string, args json.RawMessage) (json.RawMessage, bool, error) {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, false, fmt.Errorf("args not an object: %w", err)
	}
	c := hostCall{As: as, Tool: tool, Args: m, At: time.Now()}
	h.mu.Lock()
	fn := h.tools[tool]
	h.calls = append(h.calls, c)
	h.changelog++
	notify := h.callNotify
	h.mu.Unlock()
	if notify != nil {
		notify <- c
	}
	if fn == nil {
		return nil, false, fmt.Errorf("unknown tool '%s'", tool)
	}
	text, isErr, err := fn(ctx, as, m)
	if err != nil {
		return nil, false, err
	}
	res, _ := json.Marshal(map[string]any{"content": []map[string]any{{"type": "text", "text": text}}, "isError": isErr})
	return res, isErr, nil
}

func (h *testHost) LookupTool(name string) (ToolInfo, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.tools[name]
	return ToolInfo{ReadOnly: h.readOnly[name]}, ok
}

func (h *testHost) Discovered() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.discovered
}

func (h *testHost) ApplyRoleRule(role string, tools []string, all, disable bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if all {
		tools = []string{"ALL"}
	}
	h.rules = append(h.rules, fmt.Sprintf("%s %v %v", role, tools, disable))
	return nil
}

func (h *testHost) ChangelogID(ctx context.Context) *int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.changelog
	return &v
}

func (h *testHost) WriteTrajectory(ev TrajectoryEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.traj = append(h.traj, ev)
}

func (h *testHost) callsTo(tool string) []hostCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hostCall
	for _, c := range h.calls {
		if c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

func (h *testHost) trajectory(typ string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.traj {
		if ev.Type == typ {
			b, _ := ev.MarshalJSON()
			out = append(out, string(b))
		}
	}
	return out
}

var _ Host = (*testHost)(nil)

func (h *testHost) numCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}
