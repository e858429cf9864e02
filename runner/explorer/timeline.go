package explorer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentenv/agentenv/registry"
)

// One timeline: an agent trajectory and its env's gateway trajectory
// merged. The agent's tool calls are matched, in order, with the gateway's
// tool_call events of the same tool (the gateway saw each call the agent
// made, with its role, real and virtual time and latency); the gateway
// events that match no agent call (trigger firings, the harness's own
// calls) stay at their place between them. Both files are read whole, so
// the merged view caps their size and caches the result; each alone stays
// paged.

// maxTimelineBytes bounds the two trajectories a merged view reads.
const maxTimelineBytes = 64 << 20

// timelinePage merges agentKey and gwKey, then searches and pages the
// result as trajectoryPage does; its format is "timeline".
func (s *Server) timelinePage(ctx context.Context, agentKey, gwKey, q string, offset, limit int) (*TrajectoryPage, error) {
	merged, size, err := s.timeline(ctx, agentKey, gwKey)
	if err != nil {
		return nil, err
	}
	p := &TrajectoryPage{Key: agentKey, Format: "timeline", Bytes: size, Offset: offset, Limit: limit, Query: q, Items: []TrajectoryEntry{}}
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

// timeline is the merged timeline of agentKey and gwKey, from the cache
// when neither object changed, and the two files' total size.
func (s *Server) timeline(ctx context.Context, agentKey, gwKey string) ([]TrajectoryEntry, int64, error) {
	if s.st.Objects == nil {
		return nil, 0, fmt.Errorf("no object store is configured: %w", registry.ErrUnavailable)
	}
	var infos [2]registry.ObjectInfo
	for i, key := range []string{agentKey, gwKey} {
		info, err := s.st.Objects.Stat(ctx, key)
		if err != nil {
			return nil, 0, err
		}
		if info.Size > maxTimelineBytes {
			return nil, 0, fmt.Errorf("%s is %d MB, more than the merged view reads (%d MB): open it alone: %w", key, info.Size>>20, maxTimelineBytes>>20, registry.ErrInvalid)
		}
		infos[i] = info
	}
	size := infos[0].Size + infos[1].Size
	if m := s.timelines.get(agentKey, gwKey, infos); m != nil {
		return m, size, nil
	}
	a, err := s.trajectoryPage(ctx, agentKey, "", 0, 1<<30)
	if err != nil {
		return nil, 0, err
	}
	g, err := s.trajectoryPage(ctx, gwKey, "", 0, 1<<30)
	if err != nil {
		return nil, 0, err
	}
	merged := mergeTimeline(a.Items, g.Items)
	s.timelines.put(agentKey, gwKey, infos, merged)
	return merged, size, nil
}

// timelineCache keeps the last merged timelines: a merged view decodes
// both files whole, which paging through it should not repeat.
type timelineCache struct {
	mu    sync.Mutex
	items []*timelineCached
}

type timelineCached struct {
	agent, gw string
	infos     [2]registry.ObjectInfo
	merged    []TrajectoryEntry
}

const timelineCacheSize = 4

func sameObject(a, b registry.ObjectInfo) bool {
	return a.Size == b.Size && a.LastModified.Equal(b.LastModified)
}

func (c *timelineCache) get(agent, gw string, infos [2]registry.ObjectInfo) []TrajectoryEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.items {
		if e.agent == agent && e.gw == gw && sameObject(e.infos[0], infos[0]) && sameObject(e.infos[1], infos[1]) {
			return e.merged
		}
	}
	return nil
}

func (c *timelineCache) put(agent, gw string, infos [2]registry.ObjectInfo, merged []TrajectoryEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = slices.DeleteFunc(c.items, func(e *timelineCached) bool { return e.agent == agent && e.gw == gw })
	c.items = append(c.items, &timelineCached{agent: agent, gw: gw, infos: infos, merged: merged})
	if len(c.items) > timelineCacheSize {
		c.items = c.items[1:]
	}
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
