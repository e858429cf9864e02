package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// Inbound MCP sessions end on the client's DELETE, which a client that
// crashes or just walks away never sends: each abandoned session kept its
// table entry and mcp-go's per-session state (5,000 of them held 63 MB).
// A session with no request in progress and none for
// Config.SessionIdleTimeout is ended as its DELETE would end it; its next
// request gets 404, the MCP answer that tells a client to initialize again.
// An open listening stream does not keep a session: the official go-sdk
// client holds one for as long as the client object lives, used or not, so
// such a session would otherwise never end. Expiry ends the stream too.

// sessionActivity is what idle expiry knows of one inbound session.
type sessionActivity struct {
	// last is when a request on the session last started or ended (unix
	// nanoseconds); 0 means none since the session was created.
	last atomic.Int64
	// busy counts its requests in progress; a GET listening stream counts
	// only while it opens.
	busy atomic.Int32
}

// beginRequest marks a request on the session named by id (if known) as
// in progress; endRequest, deferred with its result, marks it done.
func (t *sessionTable) beginRequest(id string) *inSession {
	s := t.get(id)
	if s != nil {
		s.activity.busy.Add(1)
		s.activity.last.Store(time.Now().UnixNano())
	}
	return s
}

func (t *sessionTable) endRequest(s *inSession) {
	if s != nil {
		s.activity.last.Store(time.Now().UnixNano())
		s.activity.busy.Add(-1)
	}
}

// idleSince reports whether s has no request in progress and none since
// before cutoff.
func (s *inSession) idleSince(cutoff time.Time) bool {
	if s.activity.busy.Load() > 0 {
		return false
	}
	last := s.activity.last.Load()
	if last == 0 {
		last = s.created.UnixNano()
	}
	return last < cutoff.UnixNano()
}

// startSessionExpiry runs the idle sweep until the gateway closes; a
// non-positive Config.SessionIdleTimeout turns it off.
func (g *Gateway) startSessionExpiry() {
	timeout := g.cfg.SessionIdleTimeout
	if timeout <= 0 {
		return
	}
	// A session lives at most one sweep period past its timeout.
	every := min(max(timeout/4, time.Second), time.Minute)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-g.life.Done():
				return
			case now := <-tick.C:
				g.mcp.expireIdle(now.Add(-timeout))
			}
		}
	}()
}

// expireIdle ends every session idle since before cutoff and returns how
// many it ended.
func (f *mcpFront) expireIdle(cutoff time.Time) int {
	n := 0
	for _, s := range f.sessions.all() {
		if s.idleSince(cutoff) {
			f.endSession(s.key)
			n++
		}
	}
	if n > 0 {
		f.g.log.Info("idle MCP sessions ended", "sessions", n)
	}
	return n
}

// endSession ends a session exactly as the client's DELETE does, through
// mcp-go, so that its state there (registration, per-session stores) goes
// too, and so does the session table's entry (Terminate).
func (f *mcpFront) endSession(key string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", http.NoBody)
	if err != nil {
		return
	}
	req.Header.Set(protocol.HeaderMCPSessionID, key)
	f.http.ServeHTTP(discardResponse{h: http.Header{}}, req)
}

// discardResponse is the ResponseWriter of an internal request whose answer
// nobody reads.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}
