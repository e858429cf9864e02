package promptagent

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/internal/a2aclient"
)

// An agent that never appends to its trajectory is a documented, quiet
// default: the turn has no trajectory and nothing is logged at warning
// level. An agent that appends gets its events back; a failing agent is
// warned about.
func TestAgentTrajectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(h agentsdk.Handler) (*a2aclient.Client, string) {
		a := agentsdktest.Start(t, &agentsdk.Card{Name: "a"}, &agentsdk.Options{Agent: h, Logger: quiet})
		task, err := a.Client.Prompt(ctx, "c", "hi")
		if err != nil || task.Status.State != "completed" {
			t.Fatalf("prompt: %+v %v", task, err)
		}
		return a2aclient.New(a.URL, nil), task.ID
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))

	ac, id := run(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		return agentsdk.Text("done"), nil
	})
	if got := agentTrajectory(ctx, log, ac, id); got != nil || logs.Len() != 0 {
		t.Errorf("silent agent: trajectory %s, logs %q", got, logs.String())
	}

	ac, id = run(func(ctx context.Context, tk *agentsdk.Task) (*agentsdk.Result, error) {
		if err := tk.Trajectory.Append(map[string]any{"type": "thought"}); err != nil {
			return nil, err
		}
		return agentsdk.Text("done"), nil
	})
	if got := agentTrajectory(ctx, log, ac, id); !strings.Contains(string(got), `"thought"`) || logs.Len() != 0 {
		t.Errorf("appending agent: trajectory %s, logs %q", got, logs.String())
	}

	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer broken.Close()
	if got := agentTrajectory(ctx, log, a2aclient.New(broken.URL, nil), "t1"); got != nil || !strings.Contains(logs.String(), "no agent trajectory") {
		t.Errorf("failing agent: trajectory %s, logs %q", got, logs.String())
	}
}
