package gateway

import (
	"context"
	"encoding/json"
)

const listWebsiteURLsDescriptor = `{"name":"list_website_urls","description":"List available website URLs that can be browsed.","inputSchema":{"type":"object","properties":{}}}`

// registerWebsiteTool adds list_website_urls: it returns the
// website URL values (internal URLs), in configuration order.
func (g *Gateway) registerWebsiteTool() {
	urls := make([]string, 0, len(g.cfg.Websites))
	for _, u := range g.cfg.Websites {
		urls = append(urls, u.URL)
	}
	_, _ = g.reg.setNative("list_website_urls", &NativeTool{
		Descriptor: json.RawMessage(listWebsiteURLsDescriptor),
		Call: func(context.Context, *ToolCall) (json.RawMessage, error) {
			return textResult(urls)
		},
	})
}
