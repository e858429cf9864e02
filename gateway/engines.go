package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentenv/agentenv/gateway/triggers"
	"github.com/agentenv/agentenv/gateway/vclock"
)

// This file wires the virtual clock (package vclock) and the trigger engine
// (package triggers) into the core: their routes, the get_time tool while
// the clock is armed, and the trigger hook on every external call.

// mountEngines mounts /clock/* and /triggers/* and follows the clock's
// arm/clear to add or remove get_time.
func (g *Gateway) mountEngines() {
	getTimeURL := g.opts.GetTimeURL
	if getTimeURL == "" {
		getTimeURL = fmt.Sprintf("http://gateway:%d/clock/time", g.cfg.Port)
	}
	vclock.NewHandler(g.clock, &vclock.HandlerOptions{
		MaxBodyBytes: g.cfg.MaxBodyBytes,
		GetTimeURL:   getTimeURL,
		Conflict:     func() bool { return g.reg.backingHas(vclock.GetTimeToolName) },
	}).Register(g.mux)
	triggers.NewHandler(g.engine, &triggers.HandlerOptions{MaxBodyBytes: g.cfg.MaxBodyBytes}).Register(g.mux)
	g.unsub = g.clock.Subscribe(func(s vclock.State) { g.syncGetTime(s.Armed) })
	g.syncGetTime(g.clock.State().Armed)
}

var getTimeDescriptor = func() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"name":        vclock.GetTimeToolName,
		"description": vclock.GetTimeDescription,
		"inputSchema": vclock.GetTimeInputSchema,
		"annotations": vclock.GetTimeAnnotations,
	})
	return b
}()

// syncGetTime registers get_time while the clock is armed and removes the
// native one (never a backing one) when it is cleared; connected agents
// whose view changes get list_changed.
func (g *Gateway) syncGetTime(armed bool) {
	if !armed {
		if e, ok := g.reg.lookup(vclock.GetTimeToolName); ok && !e.native() {
			return
		}
		_ = g.SetNativeTool(vclock.GetTimeToolName, nil)
		return
	}
	err := g.SetNativeTool(vclock.GetTimeToolName, &NativeTool{
		Descriptor: getTimeDescriptor,
		Last:       true,
		Call: func(context.Context, *ToolCall) (json.RawMessage, error) {
			v, err := vclock.GetTime(g.clock)
			if err != nil {
				return nil, err
			}
			return textResult(v)
		},
	})
	if err != nil {
		g.log.Warn("get_time not registered", "err", err)
	}
}

// triggerMiddleware feeds every completed external call to the trigger
// engine (fail-open) and holds the answer until the fires this call
// provoked settle, bounded by their barrier timeouts.
func (g *Gateway) triggerMiddleware(next CallHandler) CallHandler {
	return func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		res, err := next(ctx, call)
		if call.Source == SourceInternal {
			return res, err
		}
		tc := triggers.ToolCall{Role: call.Role, Tool: call.Tool, Args: call.Arguments}
		if err != nil {
			text := err.Error()
			var ce *CallError
			if errors.As(err, &ce) {
				text = ce.mcpText()
			}
			tc.Result, tc.IsError = errorResult(text), true
		} else {
			tc.Result, tc.IsError = res.Raw, res.IsError
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					g.log.Error("trigger engine panicked on a call; ignored", "tool", call.Tool, "panic", r)
				}
			}()
			if b := g.engine.AfterToolCall(ctx, tc); b != nil {
				b.Wait(ctx)
			}
		}()
		return res, err
	}
}

// triggerHost is the core as the trigger engine sees it.
type triggerHost struct{ g *Gateway }

var _ triggers.Host = triggerHost{}

func (h triggerHost) CallTool(ctx context.Context, as, tool string, args json.RawMessage) (json.RawMessage, bool, error) {
	res, err := h.g.CallTool(ctx, tool, args, as)
	if err != nil {
		return nil, false, err
	}
	return res.Raw, res.IsError, nil
}

func (h triggerHost) LookupTool(name string) (triggers.ToolInfo, bool) {
	e, ok := h.g.reg.lookup(name)
	if !ok {
		return triggers.ToolInfo{}, false
	}
	return triggers.ToolInfo{ReadOnly: e.readOnly}, true
}

func (h triggerHost) Discovered() bool { return h.g.reg.discovered() }

func (h triggerHost) ApplyRoleRule(role string, tools []string, all, disable bool) error {
	if role == "" {
		return errors.New("role must be non-empty")
	}
	h.g.SetToolRule(role, tools, all, disable)
	return nil
}

func (h triggerHost) ChangelogID(ctx context.Context) *int64 { return h.g.changelog.Read(ctx) }

func (h triggerHost) WriteTrajectory(ev triggers.TrajectoryEvent) {
	b, err := ev.MarshalJSON()
	if err != nil {
		h.g.log.Error("trigger trajectory event not encodable; dropped", "event_type", ev.Type, "err", err)
		return
	}
	h.g.traj.Emit(ev.Type, b)
}
