package gateway

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentCallsRulesAndClock runs calls on both boundaries while role
// rules flip, the clock arms and clears (get_time comes and goes) and the
// child's tool list changes: under -race this pins the shared state of the
// registry, the rules, the sessions and the notifier.
func TestConcurrentCallsRulesAndClock(t *testing.T) {
	c := startChild(t, "items", nil)
	tg := startGateway(t, &Config{Servers: serversOf(c)}, nil)
	agents := []*mcpClient{tg.mcpClient(t, "a"), tg.mcpClient(t, "b")}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	fail := make(chan string, 64)
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				out := a.call(t, "items_echo", map[string]any{"n": n})
				if out.IsError && out.text() != fmt.Sprintf("Tool 'items_echo' is disabled for role '%s'", []string{"a", "b"}[i]) {
					fail <- out.text()
				}
				a.toolNames(t)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			st, _ := tg.post(t, "/step", role("b"), `{"action":"call_tool","tool_name":"items_echo","arguments":{}}`)
			if st != 200 && st != 403 {
				fail <- fmt.Sprintf("/step status %d", st)
			}
		}
	}()
	for n := 0; n < 40; n++ {
		verb := []string{"disable", "enable"}[n%2]
		tg.post(t, "/tools/"+verb, nil, `{"role":"*","tools":["items_echo"]}`)
		if n%4 == 0 {
			tg.do(t, "PUT", "/clock/set-time", nil, `{"virtual_time":"2026-03-01T09:00:00Z"}`)
		} else if n%4 == 2 {
			tg.post(t, "/clock/clear", nil, ``)
		}
		if n%10 == 0 {
			c.srv.AddTools(c.echoTool(fmt.Sprintf("items_extra%d", n)))
		}
		tg.get(t, "/state", nil)
	}
	close(stop)
	wg.Wait()
	close(fail)
	for f := range fail {
		t.Errorf("unexpected result: %s", f)
	}
}
