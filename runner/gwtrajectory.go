package runner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// KeyEnvTrajectories is the metadata key under which a run records the
// gateway trajectories it stored: one entry per deployed env (keyed by its
// env id), with object_url, object_key, bytes and instance_id, or error.
const KeyEnvTrajectories = "env_trajectories"

// envTrajectoryTimeout bounds the copy of one gateway trajectory.
const envTrajectoryTimeout = 60 * time.Second

// storeEnvTrajectories copies the trajectory of each deployed env's gateway
// (GET /trajectory: every tool call with its role, arguments, result and
// latency, the triggers fired, real and virtual time) to the object store,
// at env_trajectories/<task instance id>/<env id>.jsonl, before the run's
// record is finished and its envs are torn down, so the explorer shows it
// next to the agent's. A gateway that cannot be read is recorded as an
// error entry; it never fails the run. The route needs no control token.
// It reports whether it recorded anything.
func storeEnvTrajectories(ctx context.Context, rc *RunContext, instanceID string) bool {
	s := rc.Services()
	if s == nil || s.Objects == nil {
		return false
	}
	objs := s.Objects
	stored := false
	ctx = context.WithoutCancel(ctx)
	// Env ids are unique in a run (AddEnvEntry refuses a second one).
	for _, e := range rc.Envs() {
		if e.GatewayURL == "" {
			continue
		}
		key := "env_trajectories/" + instanceID + "/" + e.EnvID + ".jsonl"
		entry := map[string]any{"env_id": e.EnvID, "instance_id": e.InstanceID}
		n, err := copyTrajectory(ctx, rc, e.GatewayURL, key)
		if err != nil {
			entry["error"] = err.Error()
			rc.Logger().Warn("gateway trajectory not stored", "env_id", e.EnvID, "error", err)
		} else {
			entry["object_key"], entry["object_url"], entry["bytes"] = key, objs.URL(key), n
		}
		rc.SetMetadataEntry(KeyEnvTrajectories, e.EnvID, entry)
		stored = true
	}
	return stored
}

func copyTrajectory(ctx context.Context, rc *RunContext, gatewayURL, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, envTrajectoryTimeout)
	defer cancel()
	u := strings.TrimRight(gatewayURL, "/") + "/trajectory"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", u, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: HTTP %d", u, res.StatusCode)
	}
	info, err := rc.Services().Objects.Put(ctx, key, res.Body, nil)
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", key, err)
	}
	return info.Size, nil
}
