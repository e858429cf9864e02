package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// rawClient posts JSON-RPC requests to one plain-http child over a pool of
// keep-alive HTTP/1.1 connections, entirely in the calling goroutine: the
// request is one write, the response head is parsed by readResponseHead
// from the connection's buffered reader. net/http's Transport hands each request
// to a write goroutine and the answer back from a read goroutine; on the
// gateway's hot path (every proxied tools/call) those hand-offs and the
// request plumbing were a measurable share of the hop's cost. It is only
// used for http:// children when no HTTP client was configured and no
// proxy applies; everything else goes through net/http.
//
// A child may answer as an event stream (the official SDKs do by default).
// The gateway has what it needs once the response event arrived, but the
// connection can carry the next request only after the stream's end, which
// the child writes just after the response, or much later, or never. So
// the rest of the stream is owed: the connection goes back to the pool
// with it, the end is read without waiting whenever it is looked at, and
// only then is the connection used again. Nothing waits on a stream that
// stays open, no goroutine watches it, and a child that ends its streams
// promptly is served over as few connections as one that answers JSON.
type rawClient struct {
	addr   string // host:port to dial
	prefix []byte // "POST <uri> HTTP/1.1\r\nHost: <host>\r\n"
	dialer net.Dialer

	mu     sync.Mutex
	idle   []*rawConn // ready for a request; the most recent last
	owed   []*rawConn // waiting for the end of an answer; the oldest first
	closed bool
}

// rawConn is one pooled connection.
type rawConn struct {
	nc   net.Conn
	src  connReader // what br reads from: nc
	br   *bufio.Reader
	used time.Time // when it went idle
	// owed is the body of the last answer when its end has not been read
	// yet; discarded counts what was thrown away of it after the answer.
	owed      io.Reader
	discarded int
}

const (
	// rawMaxIdle bounds the pool of one child, ready and owed connections
	// together; beyond it the longest-owed connection is dropped first.
	rawMaxIdle     = 256
	rawIdleTimeout = 90 * time.Second // as http.DefaultTransport
	// rawOwedTimeout is how long a stream may stay open after its response
	// before its connection is given up.
	rawOwedTimeout = 10 * time.Second
	// rawMaxOwed bounds what is discarded after a response on its stream.
	rawMaxOwed = 1 << 20
	// rawSettleTries bounds the owed connections one request looks at
	// before it dials (each look is one non-blocking read).
	rawSettleTries = 4
)

// newRawClient returns a client for target, or nil when the fast path does
// not apply (https, a configured proxy, an unparsable URL).
func newRawClient(target string) *rawClient {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	prefix := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: Go-http-client/1.1\r\n"
	return &rawClient{addr: addr, prefix: []byte(prefix), dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
}

// get returns a live idle connection, one whose owed answer has ended
// since, or a new one.
func (rc *rawClient) get(ctx context.Context) (c *rawConn, reused bool, err error) {
	now := time.Now()
	var waiting []*rawConn // owed connections looked at, still owed
	defer func() {
		if len(waiting) > 0 {
			rc.requeue(waiting)
		}
	}()
	for {
		rc.mu.Lock()
		if rc.closed {
			rc.mu.Unlock()
			return nil, false, errChildClosed
		}
		c = nil
		if n := len(rc.idle); n > 0 {
			c = rc.idle[n-1]
			rc.idle[n-1] = nil
			rc.idle = rc.idle[:n-1]
		} else if len(rc.owed) > 0 && len(waiting) < rawSettleTries {
			c = rc.owed[0]
			rc.owed[0] = nil
			rc.owed = rc.owed[1:]
		}
		rc.mu.Unlock()
		if c == nil {
			break
		}
		if c.owed != nil {
			if now.Sub(c.used) >= rawOwedTimeout {
				c.nc.Close()
				continue
			}
			done, err := c.settle(false)
			if err != nil {
				c.nc.Close()
				continue
			}
			if !done {
				waiting = append(waiting, c)
				continue
			}
		}
		if now.Sub(c.used) < rawIdleTimeout && c.br.Buffered() == 0 && c.alive() {
			return c, true, nil
		}
		c.nc.Close()
	}
	c, err = rc.dial(ctx)
	return c, false, err
}

func (rc *rawClient) dial(ctx context.Context) (*rawConn, error) {
	nc, err := rc.dialer.DialContext(ctx, "tcp", rc.addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, src: connReader{nc: nc}}
	if sc, ok := nc.(syscall.Conn); ok {
		c.src.raw, _ = sc.SyscallConn()
	}
	c.br = bufio.NewReaderSize(&c.src, 8<<10)
	return c, nil
}

// connReader reads a connection, or, while nowait is set, only what has
// arrived: errWouldBlock instead of waiting (and always on a connection
// that is not a socket); while bufferedOnly is set, errWouldBlock at once,
// so a reader above it takes only what it has buffered.
type connReader struct {
	nc           net.Conn
	raw          syscall.RawConn
	nowait       bool
	bufferedOnly bool
}

func (r *connReader) Read(p []byte) (int, error) {
	if !r.nowait {
		return r.nc.Read(p)
	}
	if r.raw == nil || len(p) == 0 || r.bufferedOnly {
		return 0, errWouldBlock
	}
	var n int
	var err error
	if cerr := r.raw.Read(func(fd uintptr) bool {
		// Go's sockets are non-blocking: a read with nothing to return
		// fails with EAGAIN instead of waiting.
		n, err = syscall.Read(int(fd), p)
		return true // never wait for readiness
	}); cerr != nil {
		return 0, cerr
	}
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
		return 0, errWouldBlock
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// errOwedTooLong is a stream that kept sending after its response.
var errOwedTooLong = errors.New("event stream kept sending after its response")

// settle reads what has arrived of the owed answer, without waiting;
// done when the answer ended and the connection can carry a request.
// With buffered, it takes only what the connection's reader already
// holds and makes no system call.
func (c *rawConn) settle(buffered bool) (done bool, err error) {
	c.src.nowait, c.src.bufferedOnly = true, buffered
	defer func() { c.src.nowait, c.src.bufferedOnly = false, false }()
	var scratch [512]byte
	for {
		n, err := c.owed.Read(scratch[:])
		c.discarded += n
		switch {
		case err == io.EOF:
			c.owed, c.discarded = nil, 0
			return true, nil
		case err == errWouldBlock:
			return false, nil
		case err != nil:
			return false, err
		case c.discarded > rawMaxOwed:
			return false, errOwedTooLong
		}
	}
}

// alive peeks at an idle connection without blocking: a peer that closed
// it (a restarted child) shows as EOF, so the request is not written into
// a dead connection. Unexpected bytes also disqualify it. It uses the
// connection's cached syscall.RawConn: asking net.Conn for a new one per
// call allocated on the hot path.
func (c *rawConn) alive() bool {
	raw := c.src.raw
	if raw == nil {
		return true // not a socket
	}
	ok := false
	var b [1]byte
	cerr := raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait
	})
	return cerr == nil && ok
}

// put returns a connection after its answer was taken: ready when the
// answer's end was read, owed otherwise.
func (rc *rawClient) put(c *rawConn) {
	if c.owed != nil {
		// Only what already arrived with the answer: a child (the
		// official SDKs) ends its stream just after the response, so a
		// read now mostly finds nothing yet and costs a system call per
		// call; the next get reads the end when it has come.
		if _, err := c.settle(true); err != nil {
			c.nc.Close()
			return
		}
	}
	c.used = time.Now()
	var drop []*rawConn
	rc.mu.Lock()
	switch {
	case rc.closed:
		drop = append(drop, c)
	case c.owed == nil:
		rc.idle = append(rc.idle, c)
	default:
		rc.owed = append(rc.owed, c)
	}
	// Streams held open past rawOwedTimeout, then the longest-owed beyond
	// the bound, then (the pool full of ready ones) the newcomer.
	for len(rc.owed) > 0 && c.used.Sub(rc.owed[0].used) >= rawOwedTimeout {
		drop = append(drop, rc.owed[0])
		rc.owed = rc.owed[1:]
	}
	for len(rc.idle)+len(rc.owed) > rawMaxIdle {
		if len(rc.owed) > 0 {
			drop = append(drop, rc.owed[0])
			rc.owed = rc.owed[1:]
		} else {
			drop = append(drop, rc.idle[0])
			rc.idle = rc.idle[1:]
		}
	}
	rc.mu.Unlock()
	for _, d := range drop {
		d.nc.Close()
	}
}

// requeue puts owed connections that are still waiting back in the order
// they were owed.
func (rc *rawClient) requeue(waiting []*rawConn) {
	rc.mu.Lock()
	if rc.closed {
		rc.mu.Unlock()
		for _, c := range waiting {
			c.nc.Close()
		}
		return
	}
	rc.owed = append(waiting, rc.owed...)
	rc.mu.Unlock()
}

// close drops every pooled connection and refuses new ones.
func (rc *rawClient) close() {
	rc.mu.Lock()
	pooled := append(rc.idle, rc.owed...)
	rc.idle, rc.owed = nil, nil
	rc.closed = true
	rc.mu.Unlock()
	for _, c := range pooled {
		c.nc.Close()
	}
}

// reqBufPool recycles request buffers (a request is one write; nothing
// keeps the bytes afterwards).
var reqBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// rawExchange is one request on a rawConn, as child.send sees it.
type rawExchange struct {
	rc   *rawClient
	conn *rawConn
	stop func() bool // stops the cancellation hook
	resp *childResponse
}

// do writes the request (headers is the generation's prebuilt header
// block, ending in "\r\n" per line, without Content-Length) and reads the
// response head. wrote reports whether the request was written in full.
// A body of one piece is written with the head in one write; a body in
// pieces (a large call) is written from them as they are (writev).
func (rc *rawClient) do(ctx context.Context, headers []byte, body net.Buffers) (ex *rawExchange, wrote bool, err error) {
	c, reused, err := rc.get(ctx)
	if err != nil {
		return nil, false, err
	}
	bp := reqBufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 {
			reqBufPool.Put(bp)
		}
	}()
	buf := (*bp)[:0]
	buf = append(buf, rc.prefix...)
	buf = append(buf, headers...)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, bodyLen(body), 10)
	buf = append(buf, "\r\n\r\n"...)
	if len(body) == 1 {
		buf = append(buf, body[0]...)
	}
	*bp = buf
	var stop func() bool
	fail := func(err error) (*rawExchange, bool, error) {
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, wrote, err
	}
	for {
		// A cancelled or timed-out call interrupts blocking I/O at once.
		nc := c.nc
		stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
		var err error
		if len(body) == 1 {
			_, err = c.nc.Write(buf)
		} else {
			out := make(net.Buffers, 0, len(body)+1)
			out = append(append(out, buf), body...)
			_, err = out.WriteTo(c.nc)
		}
		if err == nil {
			break
		}
		if !reused || ctx.Err() != nil {
			return fail(err)
		}
		// As net/http's Transport: a request that could not be written on
		// a reused connection goes once more on a new one.
		stop()
		c.nc.Close()
		if c, err = rc.dial(ctx); err != nil {
			return nil, false, err
		}
		reused = false
	}
	wrote = true
	resp, err := readResponseHead(c.br)
	// Informational answers (103 Early Hints, …) precede the real one;
	// net/http's Transport skips them too.
	for i := 0; err == nil && resp.status >= 100 && resp.status < 200 && resp.status != http.StatusSwitchingProtocols; i++ {
		if i == 5 {
			err = errors.New("too many informational responses")
			break
		}
		resp, err = readResponseHead(c.br)
	}
	if err != nil {
		return fail(err)
	}
	return &rawExchange{rc: rc, conn: c, stop: stop, resp: resp}, true, nil
}

// finish releases the connection after the answer was taken from it:
// back to the pool (owing the rest of the answer if it was not read to
// its end) unless the call was interrupted or the child ends the
// connection.
func (ex *rawExchange) finish() {
	fired := !ex.stop()
	c := ex.conn
	if fired || ex.resp.close {
		c.nc.Close()
		return
	}
	c.owed, c.discarded = ex.resp.body, 0
	ex.rc.put(c)
}
