// Package triggers is the gateway's trigger engine: action,
// state and time conditions that fire tool, permission and nl actions, with
// templating, verification, barriers, a bounded event log and engine
// trajectory events.
//
// The engine owns no transport. It calls back into the gateway through
// Host (internal tool calls, tool lookup, role rules, changelog ids,
// trajectory), reads virtual time from a *vclock.Virtual, and sends nl
// instructions to the executor agent through an Executor (A2AExecutor:
// a2a-go message/send, then tasks/get polling, tasks/cancel on timeout).
//
// Time triggers are driven by a goroutine that sleeps until the earliest
// next mark, converted through the clock rate, and is re-planned whenever
// something changes (register, remove, clear, a fire settling, clock arm or
// clear) — not a fixed poll, so a mark fires within milliseconds at any
// rate. `every` accepts an ISO-8601 duration, {"dist":"exp","mean":…} with
// a seed (the reference's Python random stream, bit for bit), or (ours) a
// cron expression ("*/15 9-17 * * MON-FRI", "@hourly"), evaluated on the
// virtual clock with robfig/cron's schedule math only.
//
// Wiring in the gateway core:
//
//	clk := vclock.New(nil)
//	eng := triggers.New(host, clk, nil) // host implements triggers.Host
//	eng.Start()                         // time driver; at shutdown: eng.Close()
//	triggers.NewHandler(eng, &triggers.HandlerOptions{MaxBodyBytes: max}).Register(mux)
//
//	// In the /mcp tools/call middleware and in /step, after the call
//	// completed and its tool_call_result was logged:
//	b := eng.AfterToolCall(ctx, triggers.ToolCall{
//		Role: role, Tool: name, Args: rawArgs, Result: resultJSON, IsError: res.IsError,
//	})
//	b.Wait(ctx) // barrier: nil-safe; writes trigger_barrier_timeout itself
//	return res
//
// Host.CallTool is a trigger internal call: no role rules, no
// triggers, no barrier, no /mcp logging, _meta {"agentenv.io/role": as} only
// when as is non-empty. Host.WriteTrajectory receives trigger_fired,
// internal_tool_call and trigger_barrier_timeout events; the core adds
// event_id, timestamp_utc and virtual_time after event_type
// (TrajectoryEvent.Payload gives the fields as a JSON object, EncodeFields
// the same without braces). Host
// LookupTool and Discovered may be called with the engine's lock held and
// must not call back into the engine; the other methods never are.
package triggers
