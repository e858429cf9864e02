package envsdk_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func mcpListReq() mcp.ListToolsRequest { return mcp.ListToolsRequest{} }

// postRPC posts a raw body to the data plane, checks the transport rules
// (HTTP 200, application/json) and returns the decoded response.
func postRPC(t testing.TB, url, body string) any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("POST %s: status %d, type %q, body %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("response is not JSON: %q", b)
	}
	return v
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
