package explorer

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

// One timeline: an agent trajectory and its env's gateway trajectory
// merged. The agent's tool calls are matched, in order, with the gateway's
// tool_call events of the same tool (the gateway saw each call the agent
// made, with its role, real and virtual time and latency); the gateway
// events that match no agent call (trigger firings, the harness's own
// calls) stay at their place between them. Both files are read whole, so
// the merged view caps their size; each alone stays paged.

// maxTimelineBytes bounds the two trajectories a merged view reads.
const maxTimelineBytes = 64 << 20

// timelinePage merges agentKey and gwKey, then searches and pages the
// result as trajectoryPage does; its format is "timeline".
func (s *Server) timelinePage(ctx context.Context, agentKey, gwKey, q string, offset, limit int) (*TrajectoryPage, error) {
	all := func(key string) (*TrajectoryPage, error) {
		if s.st.Objects == nil {
			return nil, fmt.Errorf("no object store is configured: %w", registry.ErrUnavailable)
		}
		info, err := s.st.Objects.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if info.Size > maxTimelineBytes {
			return nil, fmt.Errorf("%s is %d MB, more than the merged view reads (%d MB): open it alone: %w", key, info.Size>>20, maxTimelineBytes>>20, registry.ErrInvalid)
		}
		return s.trajectoryPage(ctx, key, "", 0, 1<<30)
	}
	a, err := all(agentKey)
	if err != nil {
		return nil, err
	}
	g, err := all(gwKey)
	if err != nil {
		return nil, err
	}
	merged := mergeTimeline(a.Items, g.Items)
	p := &TrajectoryPage{Key: agentKey, Format: "timeline", Bytes: a.Bytes + g.Bytes, Offset: offset, Limit: limit, Query: q, Items: []TrajectoryEntry{}}
	needle := strings.ToLower(q)
	for _, e := range merged {
		if needle != "" && !strings.Contains(strings.ToLower(e.Tool+"\x00"+e.Args+"\x00"+e.Result+"\x00"+e.Text+"\x00"+e.Kind+"\x00"+string(e.Raw)), needle) {
			continue
		}
		if p.Total >= offset && p.Total < offset+limit {
			p.Items = append(p.Items, e)
		}
		p.Total++
	}
	p.Through = min(offset+limit, p.Total)
	return p, nil
}

// mergeTimeline interleaves agent and gateway entries (both folded: a
// call carries its result). A matched agent call takes the gateway's role,
// times, latency and event id, with Source "agent+gateway".
func mergeTimeline(agent, gw []TrajectoryEntry) []TrajectoryEntry {
	out := make([]TrajectoryEntry, 0, len(agent)+len(gw))
	next := 0 // the first gateway entry not yet placed
	for _, e := range agent {
		e.Source = "agent"
		if e.Tool != "" && e.Kind == "tool_call" {
			for j := next; j < len(gw); j++ {
				if gw[j].Kind != "tool_call" || gw[j].Tool != e.Tool {
					continue
				}
				for _, before := range gw[next:j] {
					before.Source = "gateway"
					out = append(out, before)
				}
				m := gw[j]
				e.Source, e.Role, e.Time, e.VirtualTime, e.LatencyMS, e.EventID = "agent+gateway", m.Role, m.Time, m.VirtualTime, m.LatencyMS, m.EventID
				if e.Result == "" {
					e.Result, e.IsError = m.Result, m.IsError
				}
				next = j + 1
				break
			}
		}
		out = append(out, e)
	}
	for _, rest := range gw[next:] {
		rest.Source = "gateway"
		out = append(out, rest)
	}
	for i := range out {
		out[i].Index = i
	}
	return out
}
