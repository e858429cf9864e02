package envsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

type clockState struct {
	mu  sync.Mutex
	url string
}

type syncTimeIn struct {
	EnvGetTimeURL string `json:"env_get_time_url"`
}

type syncTimeOut struct {
	EnvGetTimeURL      string  `json:"env_get_time_url"`
	GatewayVirtualTime *string `json:"gateway_virtual_time"`
}

// EnableClock opts in to urn:agentenv:clock/v1: it serves
// POST /agentenv/ext/sync_time, advertises it, and makes Now follow the
// gateway's virtual clock once synced.
func (s *Server) EnableClock() {
	s.mu.Lock()
	on := s.clockOn
	s.clockOn = true
	s.mu.Unlock()
	if on {
		return
	}
	AddExtension(s, &Extension{
		URI:         protocol.URIClock,
		Description: "Sync virtual time from the gateway.",
		Name:        "sync_time",
	}, func(ctx context.Context, _ *Request, in syncTimeIn) (syncTimeOut, error) {
		u, err := url.Parse(in.EnvGetTimeURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return syncTimeOut{}, &paramError{"env_get_time_url: must be an absolute http(s) URL"}
		}
		s.clock.mu.Lock()
		s.clock.url = in.EnvGetTimeURL
		s.clock.mu.Unlock()
		out := syncTimeOut{EnvGetTimeURL: in.EnvGetTimeURL}
		// The gateway clock may not be armed yet: the sync still holds.
		if t, err := s.fetchTime(ctx, in.EnvGetTimeURL); err == nil {
			v := t.UTC().Format(time.RFC3339Nano)
			out.GatewayVirtualTime = &v
		}
		return out, nil
	})
}

// Now returns the env's "now": wall-clock UTC until the gateway syncs a
// clock URL, then the gateway's virtual time (an error when the gateway
// cannot answer; it is never silently replaced by wall time). Outside a
// server's handlers it is wall-clock UTC.
func Now(ctx context.Context) (time.Time, error) {
	s := serverFrom(ctx)
	if s == nil {
		return time.Now().UTC(), nil
	}
	s.clock.mu.Lock()
	u := s.clock.url
	s.clock.mu.Unlock()
	if u == "" {
		return time.Now().UTC(), nil
	}
	return s.fetchTime(ctx, u)
}

func (s *Server) fetchTime(ctx context.Context, u string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("envsdk: clock: %w", err)
	}
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("envsdk: clock: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("envsdk: clock: %s answered %d: %s", u, resp.StatusCode, body)
	}
	var out struct {
		VirtualTime string `json:"virtual_time"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return time.Time{}, fmt.Errorf("envsdk: clock: bad answer: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, out.VirtualTime)
	if err != nil {
		return time.Time{}, fmt.Errorf("envsdk: clock: virtual_time: %w", err)
	}
	return t.UTC(), nil
}
