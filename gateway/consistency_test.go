package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// countingChangelog is a changelog store whose id moves with every write
// the test child makes, so attribution can be checked exactly.
type countingChangelog struct{ id atomic.Int64 }

func (c *countingChangelog) Read(context.Context) *int64 {
	v := c.id.Load()
	return &v
}

func TestConsistentModeSerialisesCalls(t *testing.T) {
	var inFlight, maxInFlight atomic.Int64
	cl := &countingChangelog{}
	c := startChild(t, "db", &childOpts{tools: []server.ServerTool{{
		Tool: mcp.NewToolWithRawSchema("db_write", "Write.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := inFlight.Add(1)
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
			id := cl.id.Add(1)
			inFlight.Add(-1)
			return mcp.NewToolResultText(itoa(int(id))), nil
		}}}})
	opts := testOptions()
	opts.Changelog = cl
	tg := startGateway(t, &Config{Servers: serversOf(c), Mode: ModeConsistent}, opts)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body := tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"db_write"}`)
			var r struct {
				Content []struct{ Text string } `json:"content"`
				ID      *int64                  `json:"changelog_id"`
			}
			json.Unmarshal(body, &r)
			// Under the lock, the id read after the call is the call's own write.
			if st != 200 || r.ID == nil || itoa(int(*r.ID)) != r.Content[0].Text {
				errs <- string(body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("changelog not attributed to its call: %s", e)
	}
	if maxInFlight.Load() != 1 {
		t.Fatalf("consistent mode let %d calls run at once", maxInFlight.Load())
	}
}

func TestChangelogBracketsEachCall(t *testing.T) {
	cl := &countingChangelog{}
	cl.id.Store(41)
	c := startChild(t, "db", &childOpts{tools: []server.ServerTool{{
		Tool: mcp.NewToolWithRawSchema("db_write", "Write.", json.RawMessage(`{"type":"object"}`)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cl.id.Add(1)
			return mcp.NewToolResultText("ok"), nil
		}}}})
	opts := testOptions()
	opts.Changelog = cl
	tg := startGateway(t, &Config{Servers: serversOf(c)}, opts)
	st, body := tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"db_write"}`)
	if st != 200 || !strings.HasSuffix(string(body), `"changelog_id":42,"changelog_id_before":41}`+"\n") {
		t.Fatalf("/step = %d %s", st, body)
	}
	_, state := tg.get(t, "/state", nil)
	if !strings.Contains(string(state), `"changelog_id":42`) {
		t.Fatalf("/state %s", state)
	}
	_, traj, _ := tg.do(t, "GET", "/trajectory", nil, "")
	if !strings.Contains(string(traj), `"changelog_id":42`) {
		t.Fatalf("trajectory %s", traj)
	}
}

// TestUnreachableServiceDB: a database that is down never fails startup or
// a call; changelog ids are null and the password never reaches the logs.
func TestUnreachableServiceDB(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(b)
	}), nil))
	c := startChild(t, "db", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c), ServiceDBURL: "postgres://agent:s3cr3t-pw@127.0.0.1:1/env?connect_timeout=1"}, opts)
	st, body := tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"db_echo"}`)
	if st != 200 || !strings.Contains(string(body), `"changelog_id":null`) {
		t.Fatalf("/step with the database down = %d %s", st, body)
	}
	_, state := tg.get(t, "/state", nil)
	if !strings.Contains(string(state), `"changelog_id":null`) {
		t.Fatalf("/state %s", state)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "changelog") && !strings.Contains(logs.String(), "service database") {
		t.Fatalf("the database path did not run:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "s3cr3t-pw") {
		t.Fatalf("database password logged:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
