package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// After startup, /readyz must notice a backing server that stopped
// answering (killed, or hung) instead of reporting ready while every call
// to it fails, and notice when it is back. It stays cheap: what /readyz
// reports comes from the latest news of each server, a call that reached
// it or a readiness probe (answers, the probe of the startup wait), and a
// probe runs only when /readyz asks and the news is older than
// livenessEvery, one at a time per server, within livenessTimeout. /readyz
// waits at most livenessWait for the probes it started (a refused
// connection is known at once); a probe still running then reports on a
// later /readyz.
const (
	livenessEvery   = time.Second
	livenessTimeout = 2 * time.Second
	livenessWait    = 250 * time.Millisecond
)

// liveness is the latest news of one backing server.
type liveness struct {
	// answeredAt is when a call last got an answer (unix nanoseconds);
	// every call sets it, so it takes no lock.
	answeredAt atomic.Int64

	mu       sync.Mutex
	down     string // why the last probe failed; "" when it passed
	probedAt int64  // when the last probe ended
	lostAt   int64  // when a call last failed to get through
	probing  chan struct{}
}

// answered records a call the server answered.
func (l *liveness) answered() { l.answeredAt.Store(time.Now().UnixNano()) }

// lost records a call that did not get through: the next /readyz probes.
func (l *liveness) lost() {
	l.mu.Lock()
	l.lostAt = time.Now().UnixNano()
	l.mu.Unlock()
}

// reason is why the server is down, or ""; a call answered after the
// last probe clears it. l.mu is held.
func (l *liveness) reason() string {
	if l.answeredAt.Load() > l.probedAt {
		return ""
	}
	return l.down
}

// probe starts a readiness probe of c unless one runs or the news is
// fresh; it returns a channel closed when the running probe ends, or nil.
func (g *Gateway) probe(c *child) <-chan struct{} {
	l := &c.liveness
	l.mu.Lock()
	defer l.mu.Unlock()
	news := max(l.probedAt, l.answeredAt.Load())
	if l.probing != nil || (l.lostAt <= news && time.Now().UnixNano()-news < int64(livenessEvery)) {
		return l.probing
	}
	done := make(chan struct{})
	l.probing = done
	// The probe outlives the /readyz that started it, not the gateway.
	go func() {
		ctx, cancel := context.WithTimeout(g.life, livenessTimeout)
		ok := g.answers(ctx, c.server, livenessTimeout)
		cancel()
		l.mu.Lock()
		l.down = ""
		if !ok {
			l.down = "not answering its readiness probe (" + c.server.URL + ")"
		}
		l.probedAt, l.probing = time.Now().UnixNano(), nil
		l.mu.Unlock()
		close(done)
	}()
	return done
}

// unresponsive returns, by server name, why each backing server that
// stopped answering is down, after waiting a little for fresh probes.
func (g *Gateway) unresponsive(ctx context.Context) map[string]string {
	var running []<-chan struct{}
	for _, c := range g.children {
		if done := g.probe(c); done != nil {
			running = append(running, done)
		}
	}
	if len(running) > 0 {
		wait, cancel := context.WithTimeout(ctx, livenessWait)
		for _, done := range running {
			select {
			case <-done:
			case <-wait.Done():
			}
		}
		cancel()
	}
	out := map[string]string{}
	for _, c := range g.children {
		c.liveness.mu.Lock()
		if why := c.liveness.reason(); why != "" {
			out[c.server.Name] = why
		}
		c.liveness.mu.Unlock()
	}
	return out
}
