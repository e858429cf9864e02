package gateway

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// freeLoopbackAddr returns a loopback address with a port nothing listens on.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// readyState is /readyz's status and the named server's state.
func readyState(t *testing.T, tg *testGateway, server string) (int, string) {
	t.Helper()
	st, body := tg.get(t, "/readyz", nil)
	var r struct {
		Servers map[string]string `json:"servers"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/readyz: %v: %s", err, body)
	}
	return st, r.Servers[server]
}

// /readyz follows a backing server process after startup: 503 once it is
// killed or hung (stopped), 200 again once it answers, and calls work again.
func TestReadyzFollowsChildProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills server processes")
	}
	addr := freeLoopbackAddr(t)
	child := startBenchProcess(t, "child", "", "AGENTENV_BENCH_ADDR="+addr)
	tg := startGateway(t, &Config{Servers: []Server{{Name: "items", URL: child.URL}}}, nil)
	a := tg.mcpClient(t, "")
	if got := a.call(t, "items_echo", map[string]any{"msg": "one"}); got.IsError {
		t.Fatalf("call: %s", got.text())
	}
	becomes := func(what string, status int) {
		t.Helper()
		var state string
		waitFor(t, what, func() bool {
			var st int
			st, state = readyState(t, tg, "items")
			return st == status
		})
		if ok := status == http.StatusOK; ok != (state == "ready") || !ok && !strings.HasPrefix(state, "error: ") {
			t.Fatalf("%s: server state %q", what, state)
		}
	}

	// Killed: connections are refused.
	if err := child.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.cmd.Wait()
	becomes("/readyz 503 after the child was killed", http.StatusServiceUnavailable)
	child = startBenchProcess(t, "child", "", "AGENTENV_BENCH_ADDR="+addr)
	becomes("/readyz 200 after the child restarted", http.StatusOK)
	// The restarted child lost the gateway's session: the call that finds
	// out is retried once on a new one.
	if got := a.call(t, "items_echo", map[string]any{"msg": "two"}); got.IsError || !strings.Contains(got.text(), "two") {
		t.Fatalf("call after the restart: %s", got.text())
	}

	// Hung: the kernel still accepts connections, nothing answers.
	pid := child.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = syscall.Kill(pid, syscall.SIGCONT) // or it never exits
		}
	})
	becomes("/readyz 503 while the child is stopped", http.StatusServiceUnavailable)
	_ = syscall.Kill(pid, syscall.SIGCONT)
	resumed = true
	becomes("/readyz 200 after the child resumed", http.StatusOK)
	if got := a.call(t, "items_echo", map[string]any{"msg": "three"}); got.IsError {
		t.Fatalf("call after the child resumed: %s", got.text())
	}
}
