package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentenv/agentenv/protocol"
)

// Configure sends the agent-config fields of want that card advertises in
// set.request.supported, and nothing when none are. Fields the agent does
// not list are dropped rather than sent: an agent may refuse a field it
// does not know, and the runner's steps set many an agent may not take.
// want is not changed.
func (c *Client) Configure(ctx context.Context, card json.RawMessage, want map[string]any) error {
	supported := Supported(card)
	send := make(map[string]any, len(want))
	for k, v := range want {
		if slices.Contains(supported, k) {
			send[k] = v
		}
	}
	if len(send) == 0 {
		return nil
	}
	_, err := c.ExtOK(ctx, http.MethodPost, protocol.AgentConfigPath, send)
	return err
}

// ErrNoTrajectory is Trajectory's error when the agent answers 404: it
// keeps no trajectory for the task, which is its documented choice.
var ErrNoTrajectory = errors.New("the agent kept no trajectory for this task")

// Trajectory fetches the agent's trajectory of one task through the
// trajectory extension.
func (c *Client) Trajectory(ctx context.Context, taskID string) (json.RawMessage, error) {
	st, body, err := c.Ext(ctx, http.MethodPost, protocol.AgentTrajectoryPath, map[string]any{"task_id": taskID})
	switch {
	case err != nil:
		return nil, err
	case st == http.StatusNotFound:
		return nil, ErrNoTrajectory
	case st != http.StatusOK:
		return nil, &HTTPError{Method: http.MethodPost, URL: c.base + protocol.AgentTrajectoryPath, Status: st, Body: truncate(string(body), 300)}
	}
	var tr struct {
		Trajectory json.RawMessage `json:"trajectory"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.Trajectory == nil {
		return nil, fmt.Errorf("the trajectory answer holds no trajectory")
	}
	return tr.Trajectory, nil
}
