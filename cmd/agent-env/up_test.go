package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
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
