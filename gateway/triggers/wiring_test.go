package triggers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/gateway/vclock"
)

// TestWiredOverHTTP mounts the clock and trigger routes on one mux, as the
// gateway core does, and drives a time trigger with the real clock: arm at
// rate 86400 over PUT /clock/set-time, register over POST
// /triggers/register, and read GET /triggers/state until it fired.
func TestWiredOverHTTP(t *testing.T) {
	h := newTestHost()
	h.text("tick", "ok")
	clk := vclock.New(nil)
	eng := New(h, clk, nil)
	eng.Start()
	defer eng.Close()
	mux := http.NewServeMux()
	vclock.NewHandler(clk, nil).Register(mux)
	NewHandler(eng, nil).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := &fixture{host: h, clock: clk, eng: eng, srv: srv}

	req, _ := http.NewRequest("PUT", srv.URL+"/clock/set-time", strings.NewReader(`{"virtual_time":"2026-03-01T09:00:00Z","virtual_seconds_per_real_second":86400}`))
	resp, err := srv.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set-time: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, m := f.post(t, "/triggers/register", `{"triggers":[`+timeTrigger("soon", `"at":"PT1H"`)+`]}`); code != 200 {
		t.Fatalf("%d %v", code, m)
	}
	waitFor(t, "the time trigger to fire", func() bool {
		st := f.state(t)
		return len(st.Triggers) == 1 && st.Triggers[0].Status == "fired"
	})
	st := f.state(t)
	if st.Triggers[0].FireCount != 1 || st.Triggers[0].NextMark != nil {
		t.Fatalf("%+v", st.Triggers[0])
	}
	for _, ev := range eventsOf(eng, "") {
		if ev["virtual_time"] == nil {
			t.Fatalf("event without virtual_time while armed: %v", ev)
		}
	}
	if c := h.callsTo("tick"); len(c) != 1 {
		t.Fatalf("calls %v", c)
	}
}
