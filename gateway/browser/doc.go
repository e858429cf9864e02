// Package browser gives a gateway computer-use tools over a headless
// Chromium: browser_screenshot, browser_click, browser_type, browser_key,
// browser_scroll, browser_navigate and browser_read. It is a
// gateway.ToolSource, so the tools are native gateway tools and pass
// through the same call chain as a child's tools (role rules, trajectory,
// triggers); nothing else in the gateway knows about browsers.
//
// The browser is a separate process (the env's website-browser: Debian's
// chromium with --remote-debugging-port) that the source reaches through
// the DevTools protocol at BROWSER_CDP_URL (http://host:port or a ws://
// DevTools URL). The source opens one tab the first time a tool is called,
// retrying until ConnectTimeout so the browser may start after the gateway,
// and keeps it for the gateway's life; calls are serialised on that tab
// because a page has one mouse and one keyboard.
//
// Screenshots are PNGs of the viewport (1280×800 by default). The agent
// gets them as MCP image content. When the gateway has an object store
// (GATEWAY_OBJECT_STORE_DIR, a registry file object store), each one is
// also stored there under screenshots/<run>/<n>.png and the trajectory
// records a resource_link to the object instead of the bytes; without a
// store the trajectory records the image inline (subject to the
// trajectory's field cap).
//
//	src, err := browser.FromEnv(os.Getenv, cfg.Websites, logger) // nil when BROWSER_CDP_URL is unset
//	g, err := gateway.New(cfg, &gateway.Options{ToolSources: []gateway.ToolSource{src}})
package browser
