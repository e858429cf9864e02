// Package vclock is the gateway's virtual clock.
//
// A Virtual clock is off until armed with a start instant t0 and a rate
// (virtual seconds per real second, 0–86400). While armed,
//
//	now = t0 + (real_now − anchor) × rate
//
// where anchor is the real (monotonic) instant of the arm. Reads never
// mutate, are monotonic and saturate at MaxInstant. Re-arming (a jump or a
// pause with rate 0) re-anchors and bumps the generation; so does Clear.
//
// Real time comes from an injected Clock (Now, After), System by default, so
// tests run the clock inside testing/synctest bubbles, where the time
// package itself is virtualised, without ever sleeping on the wall clock.
//
// Consumers that wait for a virtual instant use SleepUntil, which converts
// the remaining virtual time through the rate and re-plans whenever the clock
// is re-armed or cleared. Consumers that must react to arm/clear (the core
// adds or removes the get_time tool and notifies list_changed; the trigger
// engine re-anchors marks) use Subscribe or Changed.
//
// The HTTP side is Handler, which serves PUT /clock/set-time, POST
// /clock/clear, GET /clock/time and GET /clock/state with the reference's bodies
// and status codes. Wiring in the gateway core:
//
//	clk := vclock.New(nil)
//	h := vclock.NewHandler(clk, &vclock.HandlerOptions{
//		MaxBodyBytes: cfg.MaxBodyBytes,
//		GetTimeURL:   "http://gateway:18765/clock/time",
//		Conflict:     func() bool { return registry.HasBackingTool("get_time") },
//	})
//	h.Register(mux) // or mount h.SetTime, h.Clear, h.Time, h.State yourself
//	unsubscribe := clk.Subscribe(func(s vclock.State) {
//		if s.Armed { addGetTimeTool() } else { removeGetTimeTool() }
//		notifyToolsListChanged()
//	})
//	defer unsubscribe()
//	// get_time tool handler:
//	res, err := vclock.GetTime(clk) // protocol.GetTimeResult or ErrUnavailable
package vclock
