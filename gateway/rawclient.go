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
type rawClient struct {
	addr   string // host:port to dial
	prefix []byte // "POST <uri> HTTP/1.1\r\nHost: <host>\r\n"
	dialer net.Dialer

	mu     sync.Mutex
	idle   []*rawConn
	closed bool
}

// rawConn is one pooled connection.
type rawConn struct {
	nc   net.Conn
	br   *bufio.Reader
	used time.Time // when it went idle
}

const (
	rawMaxIdle     = 256
	rawIdleTimeout = 90 * time.Second // as http.DefaultTransport
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

// get returns a live idle connection or dials a new one.
func (rc *rawClient) get(ctx context.Context) (c *rawConn, reused bool, err error) {
	now := time.Now()
	for {
		rc.mu.Lock()
		if rc.closed {
			rc.mu.Unlock()
			return nil, false, errChildClosed
		}
		n := len(rc.idle)
		if n == 0 {
			rc.mu.Unlock()
			break
		}
		c := rc.idle[n-1]
		rc.idle[n-1] = nil
		rc.idle = rc.idle[:n-1]
		rc.mu.Unlock()
		if now.Sub(c.used) < rawIdleTimeout && c.br.Buffered() == 0 && alive(c.nc) {
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
	return &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 8<<10)}, nil
}

// alive peeks at an idle connection without blocking: a peer that closed
// it (a restarted child) shows as EOF, so the request is not written into
// a dead connection. Unexpected bytes also disqualify it.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	cerr := raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait
	})
	return cerr == nil && ok
}

// put returns a connection whose response was read completely.
func (rc *rawClient) put(c *rawConn) {
	c.used = time.Now()
	rc.mu.Lock()
	if rc.closed || len(rc.idle) >= rawMaxIdle {
		rc.mu.Unlock()
		c.nc.Close()
		return
	}
	rc.idle = append(rc.idle, c)
	rc.mu.Unlock()
}

// close drops every idle connection and refuses new ones.
func (rc *rawClient) close() {
	rc.mu.Lock()
	idle := rc.idle
	rc.idle = nil
	rc.closed = true
	rc.mu.Unlock()
	for _, c := range idle {
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

// finish releases the connection: back to the pool when the body was read
// to its end and the connection may be kept, closed otherwise.
func (ex *rawExchange) finish(complete bool) {
	fired := !ex.stop()
	reuse := complete && !fired && !ex.resp.close
	if reuse {
		// The body must be fully consumed for the next response to parse.
		var b [1]byte
		if n, err := ex.resp.body.Read(b[:]); n != 0 || err != io.EOF {
			reuse = false
		}
	}
	if reuse {
		ex.rc.put(ex.conn)
		return
	}
	ex.conn.nc.Close()
}
