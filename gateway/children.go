package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/internal/jsonscan"
	"github.com/agentenv/agentenv/protocol"
)

// child owns the process-wide MCP client session ("generation") to one
// backing server. Sessions are not tied to inbound agent sessions; they are
// opened lazily by one owner and replaced when they die.
type child struct {
	server Server
	index  int
	log    *slog.Logger
	httpc  *http.Client
	// raw is the fast request path (rawclient.go); nil means net/http.
	raw     *rawClient
	version string
	// attempts and retryDelay bound one open (reference: 10 attempts, 1 s apart).
	attempts   int
	retryDelay time.Duration
	// onNotify is called for every notification of the child (list_changed).
	onNotify func(c *child, method string)
	// onReopen is called after a generation replaced a dead one.
	onReopen func(c *child)
	// life bounds opens (the gateway's lifetime).
	life context.Context

	mu      sync.Mutex
	gen     *generation
	opening chan struct{} // non-nil while one caller opens
	openErr error
	opened  int // generations opened so far
	closed  bool

	nextID atomic.Int64
	// liveness is what /readyz knows of the server (liveness.go).
	liveness liveness
}

// generation is one open MCP client session.
type generation struct {
	c      *client.Client
	seq    int
	cancel context.CancelFunc
	// session and protocol are what the fast request path sends.
	session  string
	protocol string
	headers  http.Header
	// rawHeaders is the same header block for the raw client; nil when a
	// value would not be a valid header (net/http then refuses the call).
	rawHeaders []byte
}

// headerSafe reports whether v can be written verbatim as a header value.
func headerSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// errChildClosed is returned after Close.
var errChildClosed = errors.New("gateway is shutting down")

// session returns the current generation, opening one if needed. One open
// runs at a time, detached from any caller (so one agent giving up never
// fails the open for the others), and every caller waits for it within its
// own context. A failed open leaves nothing behind; the next use retries.
func (c *child) session(ctx context.Context) (*generation, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errChildClosed
	}
	if g := c.gen; g != nil {
		c.mu.Unlock()
		return g, nil
	}
	wait := c.opening
	if wait == nil {
		wait = make(chan struct{})
		c.opening = wait
		go c.runOpen(wait)
	}
	c.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != nil {
		return c.gen, nil
	}
	if c.closed {
		return nil, errChildClosed
	}
	if c.openErr != nil {
		return nil, c.openErr
	}
	return nil, fmt.Errorf("open %s: no session", c.server.Name)
}

// runOpen performs one open and publishes its outcome.
func (c *child) runOpen(done chan struct{}) {
	g, err := c.open(c.life)
	c.mu.Lock()
	c.opening = nil
	c.openErr = err
	reopened := false
	if err == nil {
		if c.closed {
			c.mu.Unlock()
			g.close()
			close(done)
			return
		}
		c.opened++
		g.seq = c.opened
		reopened = c.opened > 1
		c.gen = g
	}
	c.mu.Unlock()
	close(done)
	if reopened && c.onReopen != nil {
		c.onReopen(c)
	}
}

// open connects and initializes, retrying within the attempt budget.
func (c *child) open(ctx context.Context) (*generation, error) {
	var last error
	for i := 0; i < c.attempts; i++ {
		if i > 0 {
			select {
			case <-time.After(c.retryDelay):
			case <-ctx.Done():
				return nil, fmt.Errorf("open %s: %w (last error: %v)", c.server.Name, ctx.Err(), last)
			}
		}
		g, err := c.openOnce(ctx)
		if err == nil {
			return g, nil
		}
		last = err
		c.log.Debug("child open failed", "server", c.server.Name, "attempt", i+1, "err", err)
	}
	return nil, fmt.Errorf("open %s (%s): %w", c.server.Name, c.server.URL, last)
}

func (c *child) openOnce(ctx context.Context) (*generation, error) {
	tr, err := transport.NewStreamableHTTP(c.server.URL,
		transport.WithHTTPBasicClient(c.httpc),
		transport.WithContinuousListening(),
		transport.WithHTTPLogger(c.log),
	)
	if err != nil {
		return nil, err
	}
	// The client lives beyond the caller's request: its listening stream
	// runs until the generation is retired.
	life, cancel := context.WithCancel(context.Background())
	cl := client.NewClient(tr)
	if err := cl.Start(life); err != nil {
		cancel()
		return nil, err
	}
	g := &generation{c: cl, cancel: cancel}
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if c.onNotify != nil {
			c.onNotify(c, n.Method)
		}
	})
	ictx, icancel := context.WithTimeout(ctx, 10*time.Second)
	defer icancel()
	ir, err := cl.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo:      mcp.Implementation{Name: "agentenv-gateway", Version: c.version},
	}})
	if err != nil {
		g.close()
		return nil, err
	}
	g.session = tr.GetSessionId()
	g.protocol = ir.ProtocolVersion
	g.headers = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	if g.session != "" {
		g.headers[protocol.HeaderMCPSessionID] = []string{g.session}
	}
	if g.protocol != "" {
		g.headers["Mcp-Protocol-Version"] = []string{g.protocol}
	}
	if headerSafe(g.session) && headerSafe(g.protocol) {
		h := "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
		if g.session != "" {
			h += protocol.HeaderMCPSessionID + ": " + g.session + "\r\n"
		}
		if g.protocol != "" {
			h += "Mcp-Protocol-Version: " + g.protocol + "\r\n"
		}
		g.rawHeaders = []byte(h)
	}
	return g, nil
}

// close ends the session, waiting at most 3 s.
func (g *generation) close() {
	done := make(chan struct{})
	go func() {
		_ = g.c.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
	g.cancel()
}

// retire drops g if it is still current; concurrent deaths reset once.
func (c *child) retire(g *generation) bool {
	c.mu.Lock()
	if c.gen != g {
		c.mu.Unlock()
		return false
	}
	c.gen = nil
	c.mu.Unlock()
	go g.close()
	return true
}

// Close ends the current generation and refuses new ones.
func (c *child) Close() {
	c.mu.Lock()
	c.closed = true
	g := c.gen
	c.gen = nil
	c.mu.Unlock()
	if g != nil {
		g.close()
	}
	if c.raw != nil {
		c.raw.close()
	}
}

// rpcError is a JSON-RPC error answered by a child.
type rpcError struct {
	Code    int
	Message string
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// deliveryError wraps a transport failure with whether the request may have
// reached the child.
type deliveryError struct {
	err     error
	reached bool
}

func (e *deliveryError) Error() string { return e.err.Error() }
func (e *deliveryError) Unwrap() error { return e.err }

// request sends one raw JSON-RPC request and returns the raw result,
// applying the dead-session rule: a request that never
// reached the child (refused connection, 404 on the session) retires the
// generation and is retried once on a new one; a connection lost after the
// request was written retires the generation and is not retried. params is
// the params value in pieces, sent one after the other (callParams), so a
// large argument object is written from the caller's bytes, never copied.
func (c *child) request(ctx context.Context, method string, params ...[]byte) (json.RawMessage, error) {
	for attempt := 0; ; attempt++ {
		g, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		res, err := c.send(ctx, g, method, params)
		if err == nil {
			c.liveness.answered()
			return res, nil
		}
		var de *deliveryError
		if !errors.As(err, &de) || ctx.Err() != nil {
			return nil, err // child answered, or our own deadline: keep the generation
		}
		c.liveness.lost()
		c.retire(g)
		if de.reached || attempt > 0 {
			return nil, err
		}
		c.log.Info("child session lost before the request reached it; retrying once", "server", c.server.Name, "method", method, "err", err)
	}
}

// send posts one JSON-RPC request on the generation's session and returns
// the raw result. It is a lean streamable-HTTP request path (one POST,
// application/json or text/event-stream answer) instead of the mcp-go
// transport's, because it runs on every proxied call; the mcp-go client
// still owns the session: initialize and the listening stream.
func (c *child) send(ctx context.Context, g *generation, method string, params [][]byte) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	n := 0
	for _, p := range params {
		n += len(p)
	}
	head := make([]byte, 0, 64+min(n, maxFlatBody))
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = strconv.AppendInt(head, id, 10)
	head = append(head, `,"method":`...)
	head = appendJSONString(head, method)
	if n > 0 {
		head = append(head, `,"params":`...)
	}
	// A small request is one buffer (one write on the hot path); a large
	// one goes out as the caller's pieces.
	var body net.Buffers
	if n <= maxFlatBody {
		for _, p := range params {
			head = append(head, p...)
		}
		body = net.Buffers{append(head, '}')}
	} else {
		body = make(net.Buffers, 0, len(params)+2)
		body = append(append(append(body, head), params...), closeBrace)
	}
	if c.raw != nil && g.rawHeaders != nil {
		return c.sendRaw(ctx, g, id, body)
	}

	var wrote atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	})
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, c.server.URL, http.NoBody)
	if err != nil {
		return nil, err
	}
	if len(body) == 1 {
		flat := body[0]
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(flat)), nil }
	} else {
		pieces := slices.Clone(body)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(readerOf(pieces)), nil }
	}
	req.Body, _ = req.GetBody()
	req.ContentLength = bodyLen(body)
	req.Header = g.headers // read-only, shared by every request of the generation
	resp, err := c.httpc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, g, id, err, wrote.Load())
	}
	defer resp.Body.Close()
	return c.readAnswer(ctx, g, id, fromHTTP(resp))
}

// sendRaw is send on the raw client (rawclient.go); the outcomes and
// errors are the same as on net/http's.
func (c *child) sendRaw(ctx context.Context, g *generation, id int64, body net.Buffers) (json.RawMessage, error) {
	ex, wrote, err := c.raw.do(ctx, g.rawHeaders, body)
	if err != nil {
		if errors.Is(err, errChildClosed) {
			return nil, err
		}
		return nil, c.transportError(ctx, g, id, &url.Error{Op: "Post", URL: c.server.URL, Err: err}, wrote)
	}
	// readAnswer reads a JSON answer to its end and an event stream up
	// to the response; finish takes care of the rest of a stream.
	defer ex.finish()
	return c.readAnswer(ctx, g, id, ex.resp)
}

// transportError classifies a failed round trip: our own
// cancellation is returned as is (the child is told when the agent
// cancelled), anything else is a delivery error saying whether the request
// was written.
func (c *child) transportError(ctx context.Context, g *generation, id int64, err error, wrote bool) error {
	if ctx.Err() != nil {
		if wrote && errors.Is(context.Cause(ctx), errCancelledByClient) {
			go c.relayCancel(g, id)
		}
		return err
	}
	return &deliveryError{err: err, reached: wrote}
}

// readAnswer reads the child's answer to request id: JSON, or an event
// stream up to the response.
func (c *child) readAnswer(ctx context.Context, g *generation, id int64, resp *childResponse) (json.RawMessage, error) {
	if resp.status == http.StatusNotFound {
		// The child no longer knows the session: the call never ran.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.body, 64<<10))
		return nil, &deliveryError{err: fmt.Errorf("session terminated (404) on %s", c.server.Name), reached: false}
	}
	wantID := strconv.FormatInt(id, 10)
	if resp.isEventStream() {
		res, err := c.readSSE(ctx, resp.body, wantID)
		if err != nil && errors.Is(context.Cause(ctx), errCancelledByClient) {
			go c.relayCancel(g, id)
		}
		return res, err
	}
	// A small answer is read into a pooled buffer and its result copied
	// out; a large one is held once and the result aliases it.
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	size, hint := resp.length, min(resp.hint, maxChildResponse)
	if size > maxChildResponse {
		size = -1 // the limit below cuts it
	}
	raw, inBuf, err := readBody(buf, io.LimitReader(resp.body, maxChildResponse), size, hint)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			bodyPool.Put(buf)
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), errCancelledByClient) {
				go c.relayCancel(g, id)
			}
			return nil, err
		}
		return nil, &deliveryError{err: err, reached: true}
	}
	if res, err, ok := decodeResponse(raw, wantID); ok {
		if inBuf {
			res = bytes.Clone(res)
		}
		return res, err
	}
	return nil, fmt.Errorf("%s answered HTTP %d: %s", c.server.Name, resp.status, truncate(string(raw), 300))
}

// relayCancel tells the child that the agent cancelled request id
// (notifications/cancelled), on the same session, best effort.
func (c *child) relayCancel(g *generation, id int64) {
	ctx, cancel := context.WithTimeout(c.life, 5*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.FormatInt(id, 10) + `,"reason":"cancelled by the client"}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.server.URL, strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header = g.headers.Clone()
	resp, err := c.httpc.Do(req)
	if err != nil {
		c.log.Debug("cancellation not relayed", "err", err)
		return
	}
	resp.Body.Close()
}

// progressKey carries a *progressRelay in the context of a child call.
type progressKey struct{}

// progressRelay forwards a child's notifications/progress for one call to
// the agent that asked for progress, under the agent's own token.
type progressRelay struct {
	childToken json.RawMessage // the token the gateway sent the child
	agentToken json.RawMessage // the token the agent sent the gateway
	send       func(notification []byte)
}

// relay rewrites the token of a progress notification and forwards it;
// progress for other tokens is ignored.
func (p *progressRelay) relay(msg []byte) {
	var n struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Params == nil || !bytes.Equal(bytes.TrimSpace(n.Params["progressToken"]), p.childToken) {
		return
	}
	n.Params["progressToken"] = p.agentToken
	params := marshalNoEscape(n.Params)
	p.send([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":` + string(params) + `}`))
}

// maxChildResponse bounds one child answer.
const maxChildResponse = 256 << 20

// decodeResponse reads a JSON-RPC response with the wanted id; ok is false
// when raw is not such a response.
func decodeResponse(raw []byte, wantID string) (json.RawMessage, error, bool) {
	// One pass over the answer (jsonscan); only an error object, which is
	// rare, goes through encoding/json.
	var id, result, rpcErr []byte
	if jsonscan.Object(raw, func(key, value []byte) error {
		switch string(key) {
		case "id":
			id = value
		case "result":
			result = value
		case "error":
			rpcErr = value
		}
		return nil
	}) != nil || string(id) != wantID {
		return nil, nil, false
	}
	if len(rpcErr) > 0 && jsonscan.KindOf(rpcErr) != jsonscan.KindNull {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(rpcErr, &e) != nil {
			return nil, nil, false
		}
		return nil, &rpcError{Code: e.Code, Message: e.Message}, true
	}
	if len(result) == 0 {
		return nil, fmt.Errorf("response without result"), true
	}
	// The result aliases raw: a caller that reuses raw copies it.
	return result, nil, true
}

// linePool recycles the line buffers of readSSE: most answers fit one.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// readSSE reads an event-stream answer until the response with wantID.
// Notifications on the stream are handed to onNotify; server requests
// (sampling, elicitation) are not relayed.
func (c *child) readSSE(ctx context.Context, r io.Reader, wantID string) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	lines := linePool.Get().(*[]byte)
	defer linePool.Put(lines) // a line longer than it grows a buffer of its own
	sc.Buffer(*lines, maxChildResponse)
	// data collects an event's data lines; a large result keeps aliasing
	// it, a small one is copied and data goes back to bodyPool.
	data := bodyPool.Get().(*bytes.Buffer)
	data.Reset()
	kept := false
	defer func() {
		if !kept && data.Cap() <= maxPooledBody {
			bodyPool.Put(data)
		}
	}()
	flush := func() (json.RawMessage, error, bool) {
		if data.Len() == 0 {
			return nil, nil, false
		}
		msg := data.Bytes()
		defer data.Reset()
		if res, err, ok := decodeResponse(msg, wantID); ok {
			if len(res) <= maxPooledBody {
				res = bytes.Clone(res)
			} else {
				kept = true
			}
			return res, err, true
		}
		var n struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if json.Unmarshal(msg, &n) == nil && n.Method != "" && len(n.ID) == 0 {
			if n.Method == string(mcp.MethodNotificationProgress) {
				if p, ok := ctx.Value(progressKey{}).(*progressRelay); ok {
					p.relay(msg)
				}
			} else if c.onNotify != nil {
				c.onNotify(c, n.Method)
			}
		}
		return nil, nil, false
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if res, err, ok := flush(); ok {
				return res, err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
	if res, err, ok := flush(); ok {
		return res, err
	}
	err := sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &deliveryError{err: fmt.Errorf("event stream from %s ended before the response: %w", c.server.Name, err), reached: true}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// listTools lists every tool of the child, following nextCursor, each page
// within 5 s. Descriptors are kept raw.
func (c *child) listTools(ctx context.Context) ([]json.RawMessage, error) {
	var out []json.RawMessage
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page > 1000 {
			return nil, fmt.Errorf("tools/list of %s: more than 1000 pages", c.server.Name)
		}
		params := []byte(`{}`)
		if cursor != "" {
			params = []byte(`{"cursor":` + string(jsonString(cursor)) + `}`)
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := c.request(pctx, string(mcp.MethodToolsList), params)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("tools/list of %s: %w", c.server.Name, err)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("tools/list of %s: malformed result: %w", c.server.Name, err)
		}
		out = append(out, res.Tools...)
		if res.NextCursor == "" {
			return out, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("tools/list of %s: cursor %q repeated", c.server.Name, res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// callParams renders the tools/call params sent to a child: a new request
// (never the inbound one, pitfall 2) with the caller's argument bytes
// verbatim and only the gateway's _meta (an object, or nil for none). The
// pieces are what comes before the arguments, the arguments themselves
// (never copied), and what follows them.
func callParams(name string, args json.RawMessage, meta []byte) [3][]byte {
	b := make([]byte, 0, len(name)+len(meta)+32)
	b = append(b, `{"name":`...)
	b = appendJSONString(b, name)
	if len(args) > 0 {
		b = append(b, `,"arguments":`...)
	}
	tail := len(b)
	if len(meta) > 0 {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	b = append(b, '}')
	return [3][]byte{b[:tail], args, b[tail:]}
}

var closeBrace = []byte{'}'}

// readerOf reads the pieces in order without consuming body itself (a
// retried request reads them again).
func readerOf(body net.Buffers) io.Reader {
	r := slices.Clone(body)
	return &r
}

func bodyLen(body net.Buffers) int64 {
	var n int64
	for _, b := range body {
		n += int64(len(b))
	}
	return n
}
