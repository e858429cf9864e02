package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

type event map[string]json.RawMessage

func readEvents(t *testing.T, body []byte) ([]event, [][]string) {
	t.Helper()
	var evs []event
	var keys [][]string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("torn or invalid line %q: %v", line, err)
		}
		fs, _ := orderedFields(line)
		var ks []string
		for _, f := range fs {
			ks = append(ks, f.key)
		}
		evs = append(evs, e)
		keys = append(keys, ks)
	}
	return evs, keys
}

func str(r json.RawMessage) string {
	var s string
	json.Unmarshal(r, &s)
	return s
}

func TestTrajectoryEvents(t *testing.T) {
	c := startChild(t, "mail", nil)
	web := startChild(t, "web", nil)
	path := filepath.Join(t.TempDir(), "deep", "dir", "trajectory.jsonl")
	tg := startGateway(t, &Config{Servers: serversOf(c), Websites: []Upstream{{"w", web.Base}}, TrajectoryFile: path}, nil)

	// Empty file: 200, empty body, header 0.
	st, body, hdr := tg.do(t, "GET", "/trajectory", nil, "")
	if st != 200 || len(body) != 0 || hdr.Get(protocol.HeaderTrajectoryTotalBytes) != "0" || hdr.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("empty trajectory = %d %q %v", st, body, hdr)
	}
	a := tg.mcpClient(t, "")
	a.call(t, "mail_echo", map[string]any{"folder": "inbox"})
	tg.post(t, "/step", nil, `{"action":"call_tool","tool_name":"mail_echo","arguments":{}}`)
	a.call(t, "list_website_urls", nil)
	a.call(t, "unknown_tool", nil) // never reached a tool: not logged

	st, body, hdr = tg.do(t, "GET", "/trajectory?offset=3&x=y", nil, "")
	if st != 200 || hdr.Get(protocol.HeaderTrajectoryTotalBytes) != strconv.Itoa(len(body)) {
		t.Fatalf("header %s vs body %d", hdr.Get(protocol.HeaderTrajectoryTotalBytes), len(body))
	}
	evs, keys := readEvents(t, body)
	if len(evs) != 6 {
		t.Fatalf("%d events:\n%s", len(evs), body)
	}
	for i, e := range evs {
		if str(e["event_id"]) != "event_"+strconv.Itoa(i+1) {
			t.Fatalf("event %d id %s", i, e["event_id"])
		}
		if keys[i][0] != "event_type" || keys[i][1] != "event_id" || keys[i][2] != "timestamp_utc" {
			t.Fatalf("base field order %v", keys[i])
		}
		if _, ok := e["virtual_time"]; ok {
			t.Fatal("virtual_time present while the clock is unarmed")
		}
		ts := str(e["timestamp_utc"])
		if !strings.HasSuffix(ts, "+00:00") {
			t.Fatalf("timestamp %s", ts)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.999999-07:00", ts); err != nil {
			t.Fatalf("timestamp %s: %v", ts, err)
		}
	}
	if str(evs[0]["event_type"]) != "tool_call" || string(evs[0]["tool_call"]) != `{"function_name":"mail_echo","arguments":{"folder":"inbox"}}` ||
		strings.Join(keys[0], ",") != "event_type,event_id,timestamp_utc,tool_call" {
		t.Fatalf("tool_call event %v %v", evs[0], keys[0])
	}
	if str(evs[1]["event_type"]) != "tool_call_result" || str(evs[1]["tool_call_event_id"]) != "event_1" ||
		string(evs[1]["changelog_id"]) != "null" || !bytes.Contains(evs[1]["tool_call_result"], []byte(`"content"`)) {
		t.Fatalf("tool_call_result event %v", evs[1])
	}
	if str(evs[2]["source"]) != "step_api" || str(evs[3]["source"]) != "step_api" {
		t.Fatalf("step events %v %v", evs[2], evs[3])
	}
	if _, ok := evs[5]["changelog_id"]; ok || str(evs[4]["event_type"]) != "tool_call" {
		t.Fatalf("native tool events %v %v", evs[4], evs[5])
	}

	// Restart: ids continue from the file's last event.
	tg.Close()
	g2, err := New(&Config{TrajectoryFile: path}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	id := g2.EmitTrajectory("trigger_fired", json.RawMessage(`{"source":"trigger_engine","trigger_id":"x","event_id":"forged"}`))
	g2.Close()
	if id != "event_7" {
		t.Fatalf("id after restart %s", id)
	}
	raw, _ := os.ReadFile(path)
	evs, keys = readEvents(t, raw)
	if last := evs[len(evs)-1]; str(last["event_id"]) != "event_7" || strings.Join(keys[len(keys)-1], ",") != "event_type,event_id,timestamp_utc,source,trigger_id" {
		t.Fatalf("engine event %v", keys[len(keys)-1])
	}
}

func TestTrajectoryServesCompleteLinesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	// A torn last line (a crash mid-write) is never served.
	os.WriteFile(path, []byte(`{"event_type":"x","event_id":"event_41"}`+"\n"+`{"event_type":"y","ev`), 0o644)
	tg := startGateway(t, &Config{TrajectoryFile: path}, nil)
	st, body, hdr := tg.do(t, "GET", "/trajectory", nil, "")
	if st != 200 || string(body) != `{"event_type":"x","event_id":"event_41"}`+"\n" || hdr.Get(protocol.HeaderTrajectoryTotalBytes) != strconv.Itoa(len(body)) {
		t.Fatalf("= %d %q %v", st, body, hdr)
	}
	if id := tg.EmitTrajectory("x", nil); id != "event_42" {
		t.Fatalf("next id %s", id)
	}
	os.Remove(path)
	st, body, _ = tg.do(t, "GET", "/trajectory", nil, "")
	if st != 404 || !strings.HasPrefix(mustJSONMap(t, body)["error"].(string), "trajectory file unavailable: ") {
		t.Fatalf("missing file = %d %s", st, body)
	}
}

func TestTimestampFormats(t *testing.T) {
	ts := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	if got := string(appendTimestamp(nil, ts)); got != "2026-03-01T10:00:00.123456+00:00" {
		t.Fatal(got)
	}
	if got := string(appendTimestamp(nil, ts.Truncate(time.Second))); got != "2026-03-01T10:00:00+00:00" {
		t.Fatal(got)
	}
	if got := string(appendTimestamp(nil, time.Date(2026, 3, 1, 10, 0, 0, 7089000, time.FixedZone("x", 3600)))); got != "2026-03-01T09:00:00.007089+00:00" {
		t.Fatal(got)
	}
	if got := formatVirtual(ts.Truncate(time.Second).Add(500 * time.Millisecond)); got != "2026-03-01T10:00:00.500000Z" {
		t.Fatal(got)
	}
}

// TestTrajectoryWriterBatchesAndFlushEndsTheLinger pins the writer's
// linger on the bubble's fake clock: events emitted within it go to the
// file in one write, and a reader's flush does not wait for its end.
func TestTrajectoryWriterBatchesAndFlushEndsTheLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		tr := openTrajectory(path, quiet, nil)
		defer tr.close()
		size := func() int64 {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return st.Size()
		}
		tr.emit("a")
		synctest.Wait() // the writer lingers
		tr.emit("b")
		if n := size(); n != 0 {
			t.Fatalf("%d bytes written before the linger ended", n)
		}
		time.Sleep(trajectoryLinger) // fake time
		synctest.Wait()
		raw, _ := os.ReadFile(path)
		if evs, _ := readEvents(t, raw); len(evs) != 2 {
			t.Fatalf("%d events after the linger, want 2 in one batch", len(evs))
		}

		tr.emit("c")
		synctest.Wait()
		start := time.Now()
		tr.flush(context.Background())
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("flush waited %s of fake time for the linger", waited)
		}
		raw, _ = os.ReadFile(path)
		if evs, _ := readEvents(t, raw); len(evs) != 3 {
			t.Fatalf("%d events after flush, want 3", len(evs))
		}
	})
}
