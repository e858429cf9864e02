package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// repeatReader yields one byte forever.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// procStatusKB reads one "<key>: <n> kB" line of /proc/<pid>/status.
func procStatusKB(t testing.TB, pid int, key string) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", key, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// rawMCP posts JSON-RPC to a gateway's /mcp without an MCP library, so a
// large body can be streamed from a generator and the answer counted, not
// held: the test process never holds the call's bytes.
type rawMCP struct {
	url string
	sid string
	hc  *http.Client
}

func (c *rawMCP) post(t testing.TB, body io.Reader, length int64) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", c.url, err)
	}
	return resp
}

func (c *rawMCP) postString(t testing.TB, body string) (int, []byte) {
	t.Helper()
	resp := c.post(t, strings.NewReader(body), int64(len(body)))
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// initialize opens a session.
func (c *rawMCP) initialize(t testing.TB) {
	t.Helper()
	resp := c.post(t, strings.NewReader(initializeBody), int64(len(initializeBody)))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if st, b := c.postString(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", st, b)
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"m","version":"0"}}}`

// echoBig calls tool with {"msg": n × 'a'} and returns the answer's
// length, checking that it is a result carrying the n bytes.
func (c *rawMCP) echoBig(t testing.TB, tool string, n int64) int64 {
	t.Helper()
	prefix := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"msg":"`
	suffix := `"}}}`
	body := io.MultiReader(strings.NewReader(prefix), io.LimitReader(repeatReader('a'), n), strings.NewReader(suffix))
	resp := c.post(t, body, int64(len(prefix))+n+int64(len(suffix)))
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head, _ := br.Peek(64)
	head = bytes.Clone(head)
	var total, as int64
	buf := make([]byte, 64<<10)
	for {
		k, err := br.Read(buf)
		total += int64(k)
		as += int64(bytes.Count(buf[:k], []byte{'a'}))
		if err != nil {
			break
		}
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(head, []byte(`{"jsonrpc":"2.0","id":7,"result":`)) || as < n {
		t.Fatalf("echo of %d bytes: status %d, %d bytes, %d of them 'a', head %q", n, resp.StatusCode, total, as, head)
	}
	return total
}

// trajectoryBytes is the trajectory's length once every event queued so
// far is written (HEAD /trajectory waits for them).
func trajectoryBytes(t testing.TB, mcpURL string) int64 {
	t.Helper()
	resp, err := http.Head(strings.TrimSuffix(mcpURL, "/mcp") + "/trajectory")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	n, err := strconv.ParseInt(resp.Header.Get("X-Trajectory-Total-Bytes"), 10, 64)
	if err != nil {
		t.Fatalf("HEAD /trajectory: %d %v", resp.StatusCode, err)
	}
	return n
}

// TestLargeCallMemory sends one tools/call with 32 MiB of arguments
// through a gateway process to an echo child process and measures the
// gateway's peak RSS growth. The gateway has to hold the arguments and the
// child's answer at once (the trigger engine and /step see both), so the
// floor is one copy of each; the relay used to make about seven of each
// (a 50 MB call took 650 MB).
func TestLargeCallMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB through three processes")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory swamps the RSS figures")
	}
	size := int64(32 << 20)
	if mib, err := strconv.Atoi(os.Getenv("AGENTENV_BIGCALL_MIB")); err == nil && mib > 0 {
		size = int64(mib) << 20 // for measurements at other sizes
	}
	child := startBenchProcess(t, "child", "")
	gw := startBenchProcess(t, "gateway", child.URL)
	c := &rawMCP{url: gw.URL, hc: &http.Client{}}
	c.initialize(t)
	c.echoBig(t, "items_echo", 4<<10) // warm the pools and the child session
	pid := gw.cmd.Process.Pid
	rss0 := procStatusKB(t, pid, "VmRSS")
	// Reset the peak (VmHWM) to the current RSS.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	traj0 := trajectoryBytes(t, gw.URL)
	answer := c.echoBig(t, "items_echo", size)
	peak := procStatusKB(t, pid, "VmHWM")
	extra := (peak - rss0) << 10
	grown := trajectoryBytes(t, gw.URL) - traj0
	t.Logf("%d MiB arguments, %d MiB answer: gateway RSS %d MiB before, peak %d MiB (+%d MiB = %.2fx the arguments); trajectory +%d KiB",
		size>>20, answer>>20, rss0>>10, peak>>10, extra>>20, float64(extra)/float64(size), grown>>10)
	// One copy of the arguments and one of the answer is the floor; the
	// bound leaves room for the Go heap's growth before a collection.
	if limit := (size + answer) * 3 / 2; extra > limit {
		t.Errorf("the gateway's peak RSS grew by %d MiB for one call of %d MiB (+ %d MiB answer); want < %d MiB",
			extra>>20, size>>20, answer>>20, limit>>20)
	}
}
