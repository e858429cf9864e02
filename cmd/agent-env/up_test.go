package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/runner/envdeploy/envdeploytest"
)

// A non-loopback address needs a token; a bad one is named.
func TestUpRefusesOpenAddressWithoutToken(t *testing.T) {
	c := newCLI(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		code, _, errs := c.run("up", "--addr", addr, "--no-gateway")
		if code == 0 || !strings.Contains(errs, "--token") {
			t.Errorf("up --addr %s = %d %q; want an error asking for --token", addr, code, errs)
		}
	}
	if code, _, errs := c.run("up", "--addr", "nonsense", "--no-gateway"); code == 0 || !strings.Contains(errs, "--addr") {
		t.Errorf("up --addr nonsense = %d %q", code, errs)
	}
}

func TestUpLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "127.8.8.8:1": true,
		"0.0.0.0:1": false, ":1": false, "10.0.0.1:1": false, "[::]:1": false} {
		if got, err := loopback(addr); err != nil || got != want {
			t.Errorf("loopback(%s) = %v, %v; want %v", addr, got, err, want)
		}
	}
}

// On all interfaces with a token (from the environment), every request
// needs it.
func TestUpTokenOnAllInterfaces(t *testing.T) {
	c := newCLI(t)
	t.Setenv(explorerTokenEnv, "tok-from-env-123")
	link := upServer(t, c, "--addr", "0.0.0.0:0")
	_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(strings.Split(link, "?")[0], "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(link, "/?token=tok-from-env-123") {
		t.Errorf("printed link %q lacks the token", link)
	}
	get := func(auth string) int {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/api/v1/runs", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(""); code != 401 {
		t.Errorf("no token = %d; want 401", code)
	}
	if code := get("Bearer wrong"); code != 401 {
		t.Errorf("wrong token = %d; want 401", code)
	}
	if code := get("Bearer tok-from-env-123"); code != 200 {
		t.Errorf("right token = %d; want 200", code)
	}
}

// With an empty .agentenv/config.toml and a fresh store, `up` registers the
// default gateway env (envs/default) in the background while it serves, as
// the reference does; a second `up` finds it and registers nothing.
func TestUpRegistersDefaultGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway image: skipped in -short")
	}
	// As an installed agent-env finds it: agentenv-gateway on PATH (the
	// test's working folder is outside the source tree).
	bins := envdeploytest.Build(t)
	t.Setenv("PATH", filepath.Dir(bins.Gateway)+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := newCLI(t)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, ".agentenv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, ".agentenv", "config.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	up := func() (out, errb *syncBuffer, stop func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		out, errb = newSyncBuffer(), newSyncBuffer()
		done := make(chan int, 1)
		go func() { done <- execute(ctx, []string{"up", "--addr", "127.0.0.1:0"}, c.deps(out, errb)) }()
		return out, errb, func() int { cancel(); return <-done }
	}
	out, errb, stop := up()
	deadline := time.NewTimer(8 * time.Minute)
	defer deadline.Stop()
	for !strings.Contains(out.String(), "Registered the default gateway env") {
		failed := strings.Contains(errb.String(), "not registered")
		if !failed {
			select {
			case <-out.wrote:
			case <-errb.wrote:
			case <-deadline.C:
				failed = true
			}
		}
		if failed {
			stop()
			t.Fatalf("up did not register the default gateway:\n%s\n%s", out.String(), errb.String())
		}
	}
	if !strings.Contains(out.String(), "Explorer on http://127.0.0.1:") || !strings.Contains(out.String(), "Registering the default gateway env (envs/default) in the background...") {
		t.Errorf("up output:\n%s", out.String())
	}
	if code := stop(); code != 0 {
		t.Fatalf("up exited %d: %s", code, errb.String())
	}
	if code, got, errs := c.run("env", "get", "default"); code != 0 || !strings.Contains(got, "default") {
		t.Errorf("env get default after up = %d %s %s", code, got, errs)
	}
	out, errb, stop = up()
	out.waitFor(t, "Explorer on ")
	if code := stop(); code != 0 || strings.Contains(out.String(), "Registering") {
		t.Errorf("second up = %d, registered again:\n%s\n%s", code, out.String(), errb.String())
	}
}
