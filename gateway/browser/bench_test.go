package browser_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/gateway/browser"
	"github.com/agentenv/agentenv/registry/fsobject"
)

// BenchmarkScreenshot is the browser_screenshot latency an agent sees:
// one MCP tools/call through the gateway (role rules, trajectory) to
// headless Chromium, a 1280×800 PNG, stored in a file object store. It
// reports the p50 and p95 of the calls in ms (docs/benchmarks.md).
//
//	go test ./gateway/browser -run '^$' -bench Screenshot -benchtime 100x
func BenchmarkScreenshot(b *testing.B) {
	cr := startChromium(b)
	site := website(b)
	e := newEnv(b, cr.DevToolsURL, site.URL)
	cs := e.agent(b, "assistant")
	call(b, cs, "browser_navigate", map[string]any{"url": site.URL + "/"})
	call(b, cs, "browser_screenshot", nil) // warm: the first capture sets up the compositor
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "browser_screenshot"})
		if err != nil || res.IsError {
			b.Fatalf("screenshot: %v %+v", err, res)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.95), "p95-ms")
}

// BenchmarkScreenshotDirect is the same capture without the gateway and
// MCP: the tool's handler called in process (capture, PNG, store put), to
// split the latency between Chromium and the hop.
//
//	go test ./gateway/browser -run '^$' -bench ScreenshotDirect -benchtime 100x
func BenchmarkScreenshotDirect(b *testing.B) {
	cr := startChromium(b)
	site := website(b)
	objects, err := fsobject.New(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	src, err := browser.New(cr.DevToolsURL, &browser.Options{Objects: objects, Websites: map[string]string{"inbox": site.URL}})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	tools := src.Tools()
	ctx := context.Background()
	if _, err := tools[5].Call(ctx, &gateway.ToolCall{Tool: "browser_navigate", Arguments: []byte(`{"website":"inbox"}`)}); err != nil {
		b.Fatal(err)
	}
	shot := tools[0].CallRecorded
	if _, err := shot(ctx, &gateway.ToolCall{Tool: "browser_screenshot"}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := shot(ctx, &gateway.ToolCall{Tool: "browser_screenshot"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.95), "p95-ms")
}
