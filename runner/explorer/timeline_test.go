package explorer_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner/explorer"
)

// The agent's trajectory and its env's gateway trajectory on one
// timeline: each agent call the gateway saw carries the gateway's role,
// times and latency; gateway events no agent call matches stay in place.
func TestTrajectoryTimeline(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	var p explorer.TrajectoryPage
	f.getJSON("/api/v1/trajectory?key="+q(agentTraj)+"&gw="+q(gwTraj), &p)
	if p.Format != "timeline" || p.Total != 4 {
		t.Fatalf("timeline: format %s, %d entries; want timeline, 4: %+v", p.Format, p.Total, p.Items)
	}
	var got []string
	for _, e := range p.Items {
		got = append(got, e.Source+":"+e.Kind+":"+e.Tool)
	}
	want := "agent+gateway:tool_call:email_search agent:tool_call:email_send_message agent:final: gateway:trigger_fired:"
	if strings.Join(got, " ") != want {
		t.Errorf("timeline = %v; want %s", got, want)
	}
	first := p.Items[0]
	if first.Role != "assistant" || first.VirtualTime != "2026-03-02T09:00:00Z" || first.LatencyMS == nil || *first.LatencyMS != 250 {
		t.Errorf("matched call = %+v; want the gateway's role, virtual time and 250 ms", first)
	}
	f.getJSON("/api/v1/trajectory?key="+q(agentTraj)+"&gw="+q(gwTraj)+"&q=boss", &p)
	if p.Total != 1 || p.Items[0].Kind != "trigger_fired" {
		t.Errorf("search boss = %+v", p.Items)
	}
	if code, body, _ := f.get("/api/v1/trajectory?key=" + q(agentTraj) + "&gw=nope.jsonl"); code != 404 {
		t.Errorf("missing gateway trajectory = %d %s", code, body)
	}
	// The run page links both, and the stored error of another env.
	_, page, _ := f.get("/run?id=" + q(doneID))
	for _, want := range []string{`class="timeline-link"`, `class="gw-trajectory-link"`, "not stored: GET http://127.0.0.1:1/trajectory: connection refused"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %s", want)
		}
	}
}

// A run page indexes the trajectories it lists in the background, so
// opening one does not index it inside that request.
func TestRunPageIndexesTrajectories(t *testing.T) {
	f := newFixture(t, nil)
	f.seed()
	if f.h.Indexed(agentTraj) || f.h.Indexed(gwTraj) {
		t.Fatal("indexed before any page listed them")
	}
	if code, _, _ := f.get("/run?id=" + q(doneID)); code != 200 {
		t.Fatal(code)
	}
	f.h.WaitPrefetch()
	if !f.h.Indexed(agentTraj) || !f.h.Indexed(gwTraj) {
		t.Errorf("after the run page: agent indexed %v, gateway indexed %v; want both", f.h.Indexed(agentTraj), f.h.Indexed(gwTraj))
	}
}
