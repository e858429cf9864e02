package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMalformedConfigExitsNonZero(t *testing.T) {
	t.Setenv("INTERNAL_MCP_SERVERS", "a,a")
	t.Setenv("GATEWAY_TRAJECTORY_FILE", filepath.Join(t.TempDir(), "t.jsonl"))
	if code := run(); code != exitConfig {
		t.Fatalf("exit code %d; want %d", code, exitConfig)
	}
}

// TestDockerImage builds images/gateway FROM scratch, runs it with no
// servers and checks /healthz, then stops it with SIGTERM and removes the
// container and the image. It needs a Docker engine and is skipped with
// -short.
func TestDockerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("no docker socket")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	tag := "agentenv-gateway:test-" + strings.ToLower(time.Now().UTC().Format("150405.000000000"))
	tag = strings.ReplaceAll(tag, ".", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	docker := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "docker", args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	build := exec.CommandContext(ctx, "../../images/gateway/build.sh", tag)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	cid := docker("run", "-d", "-p", "127.0.0.1::18765", tag)
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", cid).Run() })
	addr := docker("port", cid, "18765")
	addr = strings.Split(addr, "\n")[0]
	url := "http://" + addr + "/healthz"
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), `"ok"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz from the container: %v\n%s", err, docker("logs", cid))
		}
		<-tick.C
	}
	docker("kill", "-s", "TERM", cid)
	if code := docker("wait", cid); code != "0" {
		t.Fatalf("exit code after SIGTERM %s", code)
	}
}
