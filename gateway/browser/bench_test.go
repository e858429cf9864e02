package browser_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
