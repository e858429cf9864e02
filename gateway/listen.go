package gateway

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The standing GET stream on /mcp (the "listening" stream an official
// go-sdk client opens for every session) is served here, not by mcp-go.
// mcp-go's GET handler held, per stream, the connection's goroutine and
// net/http's background reader, a notification-forwarding goroutine, a
// 16-slot write channel and the connection's read and write buffers:
// 58 KB of RSS per held session. The only message the gateway ever sends
// on the stream is notifications/tools/list_changed, so a stream here is
// the hijacked connection and one goroutine blocked reading it (to learn
// that the client went away): the notifier writes the event to the socket
// itself. Where the connection cannot be hijacked (HTTP/2, a ResponseWriter
// that hides it) the stream is served in the handler's goroutine instead,
// as before.

// listenWriteTimeout bounds one write on a listening stream: a client that
// reads nothing does not hold up the notification of other sessions for
// longer; its stream is closed.
const listenWriteTimeout = time.Second

// listChangedEvent is the one event the gateway sends on a listening
// stream, as mcp-go wrote it.
var listChangedEvent = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` +
	string(mcp.MethodNotificationToolsListChanged) + `"}` + "\n\n")

// listenStream is one session's standing GET stream.
type listenStream struct {
	mu    sync.Mutex
	ended bool
	// conn is the hijacked connection (a chunked HTTP/1.1 answer written
	// by hand); nil when the stream is served by the handler through w.
	conn net.Conn
	// For a stream served by the handler: events queued for it, a one-slot
	// wake-up and the end signal.
	pending [][]byte
	wake    chan struct{}
	done    chan struct{}
}

// send writes (or queues) one event; it reports false once the stream has
// ended.
func (s *listenStream) send(event []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	if s.conn == nil {
		s.pending = append(s.pending, event)
		select {
		case s.wake <- struct{}{}:
		default:
		}
		return true
	}
	chunk := make([]byte, 0, len(event)+16)
	chunk = strconv.AppendInt(chunk, int64(len(event)), 16)
	chunk = append(chunk, "\r\n"...)
	chunk = append(chunk, event...)
	chunk = append(chunk, "\r\n"...)
	_ = s.conn.SetWriteDeadline(time.Now().Add(listenWriteTimeout))
	if _, err := s.conn.Write(chunk); err != nil {
		s.endLocked(false)
		return false
	}
	return true
}

// end ends the stream: a hijacked stream gets its last chunk (the client
// sees the stream end, not a broken connection) and is closed.
func (s *listenStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(true)
}

func (s *listenStream) endLocked(graceful bool) {
	if s.ended {
		return
	}
	s.ended = true
	if s.conn == nil {
		close(s.done)
		return
	}
	if graceful {
		_ = s.conn.SetWriteDeadline(time.Now().Add(listenWriteTimeout))
		_, _ = s.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = s.conn.Close()
}

// attach makes st the session's listening stream. A session has one: a
// newer GET (a client reconnecting before the server saw the old
// connection go) replaces the older one. A session that missed a
// list_changed while it had no stream is told on the new one.
func (f *mcpFront) attach(sess *inSession, st *listenStream) {
	sess.mu.Lock()
	old := sess.stream
	sess.stream = st
	role, view := sess.role, sess.view
	sess.mu.Unlock()
	if old != nil {
		old.end()
	}
	// A stream that opens after the front closed, or on a session that
	// ended meanwhile (Terminate takes the stream after it forgets the
	// session), would never be ended.
	if f.closing.Load() || f.sessions.get(sess.key) != sess {
		st.end()
		return
	}
	if h := f.viewHash(role); h != view {
		f.notifyOne(sess, h)
	}
}

// detach forgets st as the session's stream once it ended.
func (f *mcpFront) detach(sess *inSession, st *listenStream) {
	sess.mu.Lock()
	if sess.stream == st {
		sess.stream = nil
	}
	sess.mu.Unlock()
}

// listen serves a GET on /mcp for a known session: the standing stream of
// server-to-client messages.
func (f *mcpFront) listen(w http.ResponseWriter, r *http.Request, sess *inSession) {
	// A GET that carries a body would leave it unread on the connection.
	if r.ProtoAtLeast(1, 1) && !r.ProtoAtLeast(2, 0) && (r.ContentLength == 0 || r.Body == http.NoBody) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err == nil {
			f.listenHijacked(conn, rw.Reader.Buffered(), w.Header(), sess)
			return
		}
		if !errors.Is(err, http.ErrNotSupported) {
			return // the connection is gone or was taken
		}
	}
	if !canFlush(w) {
		http.Error(w, "Streaming unsupported", http.StatusMethodNotAllowed)
		return
	}
	st := &listenStream{wake: make(chan struct{}, 1), done: make(chan struct{})}
	streamHeader(w.Header())
	w.WriteHeader(http.StatusOK)
	if http.NewResponseController(w).Flush() != nil {
		return
	}
	f.attach(sess, st)
	defer f.detach(sess, st)
	for {
		select {
		case <-st.wake:
			st.mu.Lock()
			events := st.pending
			st.pending = nil
			st.mu.Unlock()
			for _, e := range events {
				if _, err := w.Write(e); err != nil {
					st.end()
					return
				}
			}
			if http.NewResponseController(w).Flush() != nil {
				st.end()
				return
			}
		case <-r.Context().Done():
			st.end()
			return
		case <-st.done:
			return
		}
	}
}

// listenHijacked answers the GET on the connection taken from net/http and
// leaves one goroutine reading it: the client sends nothing on a listening
// stream, so a read that returns means it closed the connection (or broke
// the protocol) and the stream ends. net/http's goroutine, buffers and
// request state for the connection are released when the handler returns.
func (f *mcpFront) listenHijacked(conn net.Conn, buffered int, h http.Header, sess *inSession) {
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	streamHeader(h)
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Transfer-Encoding", "chunked")
	_ = h.Write(&head)
	head.WriteString("\r\n")
	_ = conn.SetWriteDeadline(time.Now().Add(listenWriteTimeout))
	if _, err := conn.Write(head.Bytes()); err != nil || buffered > 0 {
		// Bytes after the GET would be a pipelined request, which a
		// listening stream never answers.
		_ = conn.Close()
		return
	}
	// The reader is counted before the stream can be seen, and never once
	// endStreams waits (a WaitGroup must not grow while it is waited on).
	f.readersMu.Lock()
	if f.closing.Load() {
		f.readersMu.Unlock()
		_ = conn.Close()
		return
	}
	f.readers.Add(1)
	f.readersMu.Unlock()
	st := &listenStream{conn: conn}
	f.attach(sess, st)
	go func() {
		defer f.readers.Done()
		var b [1]byte
		_, _ = conn.Read(b[:])
		st.mu.Lock()
		st.endLocked(false)
		st.mu.Unlock()
		f.detach(sess, st)
	}()
}

// streamHeader sets the header of a listening stream's answer.
func streamHeader(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
}

// canFlush reports whether w, or a ResponseWriter it wraps, can flush.
func canFlush(w http.ResponseWriter) bool {
	for {
		if _, ok := w.(http.Flusher); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// endStreams ends every session's listening stream and waits for their
// readers (the gateway is closing).
func (f *mcpFront) endStreams() {
	f.readersMu.Lock()
	f.closing.Store(true)
	f.readersMu.Unlock()
	for _, s := range f.sessions.all() {
		s.mu.Lock()
		st := s.stream
		s.mu.Unlock()
		if st != nil {
			st.end()
		}
	}
	f.readers.Wait()
}
