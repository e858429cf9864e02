package explorer_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/explorer"
)

// A gateway trajectory whose browser_screenshot result links a stored
// screenshot shows the image: the API lists it and /object serves it,
// only for screenshots of this store.
func TestTrajectoryScreenshots(t *testing.T) {
	f := newFixture(t, nil)
	const png = "\x89PNG\r\n\x1a\nfake"
	shot := "screenshots/0123456789abcdef/0001.png"
	f.object(shot, png)
	f.object("secrets/key.png", png)
	uri := f.objs.URL(shot)
	traj := "env_trajectories/office-0001/office.jsonl"
	f.object(traj, `{"event_type":"tool_call","event_id":"event_1","timestamp_utc":"2026-03-02T09:00:01.000000+00:00","role":"assistant","tool_call":{"function_name":"browser_screenshot","arguments":{}}}
{"event_type":"tool_call_result","event_id":"event_2","timestamp_utc":"2026-03-02T09:00:01.120000+00:00","tool_call_event_id":"event_1","tool_call_result":{"content":[{"type":"resource_link","uri":"`+uri+`","name":"`+shot+`","mimeType":"image/png"},{"type":"text","text":"screenshot 1280x800 stored"}],"isError":false}}
`)
	var p explorer.TrajectoryPage
	f.getJSON("/api/v1/trajectory?key="+url.QueryEscape(traj), &p)
	if len(p.Items) != 1 || len(p.Items[0].Images) != 1 || p.Items[0].Images[0] != uri {
		t.Fatalf("trajectory items = %+v", p.Items)
	}
	if code, body, _ := f.get("/trajectory?key=" + url.QueryEscape(traj)); code != 200 || !strings.Contains(body, `<img class="screenshot" src="/object?url=`) {
		t.Fatalf("trajectory page %d does not show the screenshot", code)
	}
	code, body, hdr := f.get("/object?url=" + url.QueryEscape(uri))
	if code != 200 || body != png || hdr.Get("Content-Type") != "image/png" {
		t.Fatalf("GET /object = %d %q %s", code, body, hdr.Get("Content-Type"))
	}
	for path, want := range map[string]int{
		"/object": 400,
		"/object?url=" + url.QueryEscape(f.objs.URL("secrets/key.png")):                    400,
		"/object?url=" + url.QueryEscape(f.objs.URL("screenshots/0123456789abcdef/9.png")): 404,
		"/object?url=" + url.QueryEscape("file:///etc/passwd"):                             400,
	} {
		if code, body, _ := f.get(path); code != want {
			t.Errorf("GET %s = %d %s; want %d", path, code, body, want)
		}
	}
}
