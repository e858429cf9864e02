package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentenv/agentenv/internal/jsonscan"
	"github.com/agentenv/agentenv/protocol"
)

// supportedMCPVersions are the protocol versions /mcp negotiates.
var supportedMCPVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326}

// bodyPool recycles /mcp request buffers.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// mcpBodyLimit bounds one /mcp POST body (tool arguments may be large).
const mcpBodyLimit = 64 << 20

// mcpFront is the /mcp endpoint. mcp-go serves the transport (initialize,
// the GET notification stream, DELETE, ping); tools/list and tools/call are
// answered by the gateway itself as application/json, so descriptors pass
// through byte-exact (pitfall 1), disabled and unknown tools are isError
// results (pitfalls 3 and 4), and nothing of the caller's _meta is copied.
type mcpFront struct {
	g        *Gateway
	srv      *server.MCPServer
	http     *server.StreamableHTTPServer
	sessions *sessionTable
	// inflight maps session key + request id to the cancel of a running
	// tools/call, for notifications/cancelled.
	inflight sync.Map
	// closing is set when the front closes: listening streams (listen.go)
	// end, and readers counts their goroutines (readersMu orders its
	// growth before the wait).
	closing   atomic.Bool
	readersMu sync.Mutex
	readers   sync.WaitGroup
}

// errCancelledByClient is the cause of a call the agent cancelled.
var errCancelledByClient = errors.New("cancelled by the client")

func inflightKey(session string, id json.RawMessage) string {
	return session + "\x00" + string(bytes.TrimSpace(id))
}

// cancelInflight handles an agent's notifications/cancelled: it cancels
// the matching running call of the same session, if any.
func (f *mcpFront) cancelInflight(r *http.Request, params json.RawMessage) {
	sess := f.sessions.get(r.Header.Get(protocol.HeaderMCPSessionID))
	if sess == nil {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	if c, ok := f.inflight.Load(inflightKey(sess.key, p.RequestID)); ok {
		c.(context.CancelCauseFunc)(errCancelledByClient)
	}
}

// inSession is one inbound MCP session. Its Mcp-Session-Id is its session
// key: 32 lowercase hex.
type inSession struct {
	key string
	mu  sync.Mutex
	// role is bound when initialize is answered (bindWriter) and never
	// changes: a request with another role on the session is refused.
	role string
	// view is a hash of the tool list the session's role last saw, to send
	// list_changed only when it changes; listed records that the session
	// listed tools at least once.
	view    uint64
	listed  bool
	created time.Time
	// stream is the session's listening GET stream (listen.go), if open.
	stream *listenStream
	// activity is for idle expiry (sessionexpiry.go).
	activity sessionActivity
}

// sessionTable implements mcp-go's SessionIdManager with 32-hex ids.
type sessionTable struct {
	mu sync.RWMutex
	m  map[string]*inSession
	// register tells mcp-go of a new session (placeholderSession).
	register func(key string)
}

// placeholderSession is what mcp-go holds for an inbound session. mcp-go
// registers a session of its own after answering initialize unless one is
// registered already; its own keeps a 100-slot notification channel and
// three request channels, about 10 KB per session (88% of a held session's
// heap), for messages the gateway never sends through mcp-go: list_changed
// goes on the gateway's listening stream (listen.go). It is never
// initialized, so mcp-go sends it nothing; requests mcp-go answers (ping,
// notifications/initialized) get a short-lived session of mcp-go's own.
type placeholderSession struct{ key string }

var _ server.ClientSession = (*placeholderSession)(nil)

func (p *placeholderSession) Initialize()                                         {}
func (p *placeholderSession) Initialized() bool                                   { return false }
func (p *placeholderSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (p *placeholderSession) SessionID() string                                   { return p.key }

var errUnknownSession = errors.New("unknown session")

func (t *sessionTable) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	key := hex.EncodeToString(b[:])
	t.mu.Lock()
	t.m[key] = &inSession{key: key, role: protocol.DefaultRole, created: time.Now()}
	t.mu.Unlock()
	if t.register != nil {
		t.register(key)
	}
	return key
}

func (t *sessionTable) Validate(id string) (bool, error) {
	if t.get(id) == nil {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets the session (its DELETE, idle expiry, or mcp-go
// unregistering it) and ends its listening stream.
func (t *sessionTable) Terminate(id string) (bool, error) {
	t.mu.Lock()
	s := t.m[id]
	delete(t.m, id)
	t.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		st := s.stream
		s.stream = nil
		s.mu.Unlock()
		if st != nil {
			st.end()
		}
	}
	return false, nil
}

func (t *sessionTable) get(id string) *inSession {
	if id == "" {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[id]
}

func (t *sessionTable) all() []*inSession {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*inSession, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, s)
	}
	return out
}

func newMCPFront(g *Gateway) *mcpFront {
	f := &mcpFront{g: g, sessions: &sessionTable{m: map[string]*inSession{}}}
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		// A new session retries a discovery that has not succeeded yet.
		if !g.reg.discovered() {
			go g.ensureDiscovery(g.life)
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		_, _ = f.sessions.Terminate(s.SessionID())
	})
	f.srv = server.NewMCPServer(g.cfg.Name, Version,
		server.WithToolCapabilities(true),
		server.WithHooks(hooks),
	)
	f.sessions.register = func(key string) {
		_ = f.srv.RegisterSession(context.Background(), &placeholderSession{key: key})
	}
	f.http = server.NewStreamableHTTPServer(f.srv,
		server.WithSessionIdManager(f.sessions),
		server.WithStreamableHTTPProtocolVersions(supportedMCPVersions...),
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(g.log),
	)
	return f
}

func (f *mcpFront) close() {
	f.endStreams()
	ctx, cancel := context.WithTimeout(context.Background(), 3e9)
	defer cancel()
	_ = f.http.Shutdown(ctx)
}

// rpcMessage is the part of a JSON-RPC message the front inspects.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// decode reads a single JSON-RPC message in one pass (jsonscan). ID and
// Params alias data. Keys match exactly, as JSON-RPC names them.
func (m *rpcMessage) decode(data []byte) error {
	return jsonscan.Object(data, func(key, value []byte) error {
		switch string(key) {
		case "jsonrpc", "method":
			s, ok := jsonscan.String(value)
			if !ok {
				if jsonscan.KindOf(value) == jsonscan.KindNull {
					s = "" // as encoding/json leaves a string field on null
				} else {
					return errNotString
				}
			}
			if key[0] == 'j' {
				m.JSONRPC = s
			} else {
				m.Method = s
			}
		case "id":
			m.ID = value
		case "params":
			m.Params = value
		}
		return nil
	})
}

// errNotString stops a scan at a member that must be a JSON string.
var errNotString = errors.New("not a JSON string")

func (f *mcpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who, aerr := f.g.identify(r)
	if aerr != nil {
		rpcRefuse(w, aerr.status, aerr.msg)
		return
	}
	// The request keeps its session from idling out (sessionexpiry.go); a
	// listening stream only when it opens.
	sess := f.sessions.beginRequest(r.Header.Get(protocol.HeaderMCPSessionID))
	if r.Method == http.MethodGet {
		f.sessions.endRequest(sess)
	} else {
		defer f.sessions.endRequest(sess)
	}
	// A session keeps the role it was initialized with: a request without
	// a role speaks for it, one naming another role is refused.
	if sess != nil {
		sess.mu.Lock()
		bound := sess.role
		sess.mu.Unlock()
		if who.named && who.role != bound {
			rpcRefuse(w, http.StatusForbidden, "role '"+who.role+"' does not match the role '"+bound+"' this MCP session was initialized with")
			return
		}
	}
	if r.Method != http.MethodPost {
		// mcp-go would open a stream for a session it never issued, and
		// answers DELETE of an unknown session with success.
		if (r.Method == http.MethodGet || r.Method == http.MethodDelete) && f.session(w, r) == nil {
			return
		}
		// The listening stream is the gateway's own (listen.go); mcp-go
		// still answers the versions it refuses.
		if r.Method == http.MethodGet && f.versionOK(r) {
			f.listen(w, r, sess)
			return
		}
		f.http.ServeHTTP(w, r)
		return
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	size := r.ContentLength
	if size > mcpBodyLimit {
		size = -1 // refused below, without allocating for it
	}
	body, inBuf, err := readBody(buf, http.MaxBytesReader(w, r.Body, mcpBodyLimit), size, 0)
	// A pooled buffer is reused after the request, so everything below
	// copies what it keeps of it (the tools path clones what it decoded;
	// mcp-go reads its own copy); a large body is never reused, and the
	// call's arguments alias it.
	pooled := inBuf && buf.Cap() <= maxPooledBody
	defer func() {
		if buf.Cap() <= maxPooledBody {
			bodyPool.Put(buf)
		}
	}()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": protocol.CodeInvalidRequest, "message": "request body too large"}})
			return
		}
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	var msg rpcMessage
	// JSON whitespace only (bytes.TrimSpace would also take \f and \v,
	// which make a body invalid JSON).
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	single := len(trimmed) > 0 && trimmed[0] == '{' && msg.decode(trimmed) == nil
	if single && (msg.Method == string(mcp.MethodToolsList) || msg.Method == string(mcp.MethodToolsCall)) &&
		len(msg.ID) > 0 && string(msg.ID) != "null" && f.versionOK(r) {
		// (a wrong "jsonrpc" is answered by serveTools after the session
		// check, as mcp-go does for the methods it serves.)
		// A pooled body buffer is reused after this request, but the
		// call's arguments live on in trajectory events and triggers.
		if pooled {
			msg.ID, msg.Params = bytes.Clone(msg.ID), bytes.Clone(msg.Params)
		}
		f.serveTools(w, r, &msg)
		return
	}
	if single && msg.Method == string(mcp.MethodNotificationCancelled) {
		f.cancelInflight(r, msg.Params)
		// mcp-go still sees it (it may concern requests it serves itself).
	}
	if len(trimmed) > 0 && trimmed[0] == '[' && f.versionOK(r) {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) == nil {
			if len(batch) == 0 {
				// JSON-RPC 2.0: an empty batch is one Invalid Request.
				rpcRefuse(w, http.StatusBadRequest, "Invalid Request: empty batch")
				return
			}
			f.serveBatch(w, r, batch)
			return
		}
	}
	if single && msg.Method == string(mcp.MethodInitialize) {
		// Bind the caller's role to the session this initialize creates.
		w = &bindWriter{ResponseWriter: w, sessions: f.sessions, viewHash: f.viewHash, role: who.role}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.http.ServeHTTP(w, r)
}

// rpcRefuse answers a request the transport refuses as a JSON-RPC error
// (-32600, id null) with an HTTP status.
func rpcRefuse(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentenv-gateway"`)
	}
	writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": protocol.CodeInvalidRequest, "message": msg}})
}

// bindWriter binds a role to the session an initialize answer creates. It
// does so when the answer's head is written, which is before the client can
// learn the session id, so no request can reach the session unbound.
type bindWriter struct {
	http.ResponseWriter
	sessions *sessionTable
	viewHash func(role string) uint64
	role     string
	done     bool
}

func (b *bindWriter) bind() {
	if b.done {
		return
	}
	b.done = true
	if s := b.sessions.get(b.Header().Get(protocol.HeaderMCPSessionID)); s != nil {
		view := b.viewHash(b.role)
		s.mu.Lock()
		s.role = b.role
		if !s.listed {
			// The view a fresh session starts from: list_changed is
			// owed only for changes after this.
			s.view = view
		}
		s.mu.Unlock()
	}
}

func (b *bindWriter) WriteHeader(code int) {
	b.bind()
	b.ResponseWriter.WriteHeader(code)
}

func (b *bindWriter) Write(p []byte) (int, error) {
	b.bind()
	return b.ResponseWriter.Write(p)
}

func (b *bindWriter) Flush() {
	b.bind()
	_ = http.NewResponseController(b.ResponseWriter).Flush()
}

func (b *bindWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// errInvalidVersion is the answer to a message whose "jsonrpc" is not
// "2.0" (mcp-go's words for the methods it serves).
var errInvalidVersion = &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "Invalid JSON-RPC version"}

// serveBatch answers a JSON-RPC batch (protocol 2025-03-26) of tools/list
// and tools/call requests and notifications; mcp-go does not read batches.
// Other requests in a batch get -32601.
func (f *mcpFront) serveBatch(w http.ResponseWriter, r *http.Request, batch []json.RawMessage) {
	sess := f.session(w, r)
	if sess == nil {
		return
	}
	var out [][]byte
	for _, item := range batch {
		m := &rpcMessage{}
		if jsonscan.KindOf(item) != jsonscan.KindObject || m.decode(item) != nil {
			out = append(out, rpcBytes(protocol.NullID, nil, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "Invalid Request: a batch item must be a JSON-RPC message object"}))
			continue
		}
		// The body buffer is reused after this request.
		m.ID, m.Params = bytes.Clone(m.ID), bytes.Clone(m.Params)
		if m.JSONRPC != "2.0" {
			id := m.ID
			if len(id) == 0 {
				id = protocol.NullID
			}
			out = append(out, rpcBytes(id, nil, errInvalidVersion))
			continue
		}
		if len(m.ID) == 0 || string(m.ID) == "null" || m.Method == "" {
			continue // a notification or a response: nothing to answer
		}
		switch m.Method {
		case string(mcp.MethodToolsList), string(mcp.MethodToolsCall):
			out = append(out, f.answer(r, sess, m, nil).bytes())
		default:
			out = append(out, rpcBytes(m.ID, nil, &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "method not supported in a batch: " + m.Method}))
		}
	}
	if len(out) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte{'['})
	_, _ = w.Write(bytes.Join(out, []byte{','}))
	_, _ = w.Write([]byte("]\n"))
}

func (f *mcpFront) versionOK(r *http.Request) bool {
	v := r.Header.Get(protocol.HeaderMCPProtocolVersion)
	if v == "" {
		return true
	}
	for _, s := range supportedMCPVersions {
		if v == s {
			return true
		}
	}
	return false
}

// session returns the request's known inbound session, or answers 400/404.
func (f *mcpFront) session(w http.ResponseWriter, r *http.Request) *inSession {
	sess := f.sessions.get(r.Header.Get(protocol.HeaderMCPSessionID))
	if sess == nil {
		if r.Header.Get(protocol.HeaderMCPSessionID) == "" {
			http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
		} else {
			http.Error(w, "Invalid session ID", http.StatusNotFound)
		}
	}
	return sess
}

// serveTools answers tools/list and tools/call for a known session.
func (f *mcpFront) serveTools(w http.ResponseWriter, r *http.Request, msg *rpcMessage) {
	sess := f.session(w, r)
	if sess == nil {
		return
	}
	if msg.JSONRPC != "2.0" {
		w.Header()["Content-Type"] = jsonContentType
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(rpcBytes(msg.ID, nil, errInvalidVersion), '\n'))
		return
	}
	// A caller that asked for progress and accepts an event stream gets
	// the child's progress relayed on this POST's stream (SSE), then the
	// response; otherwise the answer is plain JSON.
	var sse *sseStream
	if msg.Method == string(mcp.MethodToolsCall) && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		sse = &sseStream{w: w}
	}
	rep := f.answer(r, sess, msg, sse)
	if sse != nil && sse.started {
		sse.event(rep.parts()...)
		return
	}
	// Assigned, not Set: a shared, never-modified value saves canonicalising
	// the key and allocating a slice on every call.
	w.Header()["Content-Type"] = jsonContentType
	if len(rep.result) <= maxFlatBody {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(rep.bytes(), '\n'))
		return
	}
	// A large result is written from where it is, not copied into one
	// message first.
	parts := rep.parts()
	w.Header().Set("Content-Length", strconv.FormatInt(bodyLen(parts)+1, 10))
	w.WriteHeader(http.StatusOK)
	for _, p := range parts {
		_, _ = w.Write(p)
	}
	_, _ = w.Write([]byte{'\n'})
}

var jsonContentType = []string{"application/json"}

// sseStream writes JSON-RPC messages as server-sent events on a POST answer.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
}

func (s *sseStream) event(msg ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.w.Header().Set("Content-Type", "text/event-stream")
		s.w.Header().Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	_, _ = s.w.Write([]byte("event: message\ndata: "))
	for _, p := range msg {
		_, _ = s.w.Write(p)
	}
	_, _ = s.w.Write([]byte("\n\n"))
	_ = http.NewResponseController(s.w).Flush()
}

// rpcReply is one JSON-RPC response, rendered when written.
type rpcReply struct {
	id     json.RawMessage
	result json.RawMessage
	err    *protocol.Error
}

// bytes renders the reply as one message.
func (r rpcReply) bytes() []byte { return rpcBytes(r.id, r.result, r.err) }

// parts renders the reply as the pieces around the result, which is not
// copied.
func (r rpcReply) parts() net.Buffers {
	if r.err != nil || len(r.result) <= maxFlatBody {
		return net.Buffers{r.bytes()}
	}
	head := make([]byte, 0, len(r.id)+32)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, r.id...)
	head = append(head, `,"result":`...)
	return net.Buffers{head, r.result, closeBrace}
}

// answer runs one tools/list or tools/call and returns its response.
func (f *mcpFront) answer(r *http.Request, sess *inSession, msg *rpcMessage, sse *sseStream) rpcReply {
	sess.mu.Lock()
	role := sess.role
	sess.mu.Unlock()
	var result json.RawMessage
	switch msg.Method {
	case string(mcp.MethodToolsList):
		// Retry a failed discovery on use, as the reference does per session.
		f.g.ensureDiscovery(r.Context())
		result = f.listResult(role)
		sess.mu.Lock()
		sess.view = f.viewHash(role)
		sess.listed = true
		sess.mu.Unlock()
	case string(mcp.MethodToolsCall):
		p, ok := decodeCallParams(msg.Params)
		if !ok {
			return rpcReply{id: msg.ID, err: &protocol.Error{Code: protocol.CodeInvalidParams, Message: "invalid params: tools/call needs a string 'name'"}}
		}
		call := &ToolCall{Source: SourceMCP, Role: role, Session: sess.key, Tool: p.Name, Arguments: p.Arguments}
		if sse != nil && len(p.Meta) > 0 {
			var m struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(p.Meta, &m) // a malformed _meta is ignored, as before
			if tok := bytes.TrimSpace(m.ProgressToken); len(tok) > 0 && string(tok) != "null" {
				call.ProgressToken, call.Progress = tok, func(n []byte) { sse.event(n) }
			}
		}
		// notifications/cancelled from the agent cancels this call (and the
		// child is told in turn, see child.send).
		ctx, cancel := context.WithCancelCause(r.Context())
		key := inflightKey(sess.key, msg.ID)
		f.inflight.Store(key, cancel)
		res, err := f.g.call(ctx, call)
		f.inflight.Delete(key)
		cancel(nil)
		if err != nil {
			var ce *CallError
			text := err.Error()
			if errors.As(err, &ce) {
				text = ce.mcpText()
			}
			result = errorResult(text)
		} else {
			result = res.Raw
		}
	}
	return rpcReply{id: msg.ID, result: result}
}

// callParams is what the gateway reads of tools/call params.
type toolsCallParams struct {
	Name      string
	Arguments json.RawMessage // nil when absent or null
	Meta      json.RawMessage
}

// decodeCallParams reads tools/call params in one pass; ok is false
// unless they are an object with a string name. Arguments and Meta alias
// raw.
func decodeCallParams(raw []byte) (p toolsCallParams, ok bool) {
	named := false
	err := jsonscan.Object(raw, func(key, value []byte) error {
		switch string(key) {
		case "name":
			s, isString := jsonscan.String(value)
			if !isString {
				return errNotString
			}
			p.Name, named = s, true
		case "arguments":
			if jsonscan.KindOf(value) == jsonscan.KindNull {
				value = nil
			}
			p.Arguments = value
		case "_meta":
			p.Meta = value
		}
		return nil
	})
	return p, err == nil && named
}

// listResult is the tools/list result for a role: the registry filtered by
// role rules, raw descriptors, in registry order.
func (f *mcpFront) listResult(role string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	n := 0
	for _, e := range f.g.reg.snapshot() {
		if f.g.rules.disabled(role, e.name) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(e.raw)
		n++
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// viewHash fingerprints what a role sees on tools/list.
func (f *mcpFront) viewHash(role string) uint64 {
	h := fnv.New64a()
	for _, e := range f.g.reg.snapshot() {
		if f.g.rules.disabled(role, e.name) {
			continue
		}
		h.Write([]byte(e.name))
		h.Write([]byte{0})
		h.Write(e.raw)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// notifyChanged sends notifications/tools/list_changed to every session
// whose role's visible tool set changed since it last looked.
func (f *mcpFront) notifyChanged() {
	hashes := map[string]uint64{}
	for _, s := range f.sessions.all() {
		s.mu.Lock()
		role := s.role
		s.mu.Unlock()
		h, ok := hashes[role]
		if !ok {
			h = f.viewHash(role)
			hashes[role] = h
		}
		f.notifyOne(s, h)
	}
}

// notifyOne sends list_changed on the listening stream of s if its view
// differs from h. A session without a stream is told when it opens one
// (attach), since MCP sends such notifications on that stream only.
func (f *mcpFront) notifyOne(s *inSession, h uint64) {
	s.mu.Lock()
	st := s.stream
	if s.view == h || st == nil {
		s.mu.Unlock()
		return
	}
	s.view = h
	s.mu.Unlock()
	// Written outside the session's lock: a slow client's write does not
	// hold up the session's requests.
	if !st.send(listChangedEvent) {
		s.mu.Lock()
		if s.view == h {
			s.view = 0 // not told: the next stream is
		}
		s.mu.Unlock()
	}
}

// rpcBytes renders one JSON-RPC response.
func rpcBytes(id json.RawMessage, result json.RawMessage, rpcErr *protocol.Error) []byte {
	var b bytes.Buffer
	b.Grow(len(result) + 48)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if rpcErr != nil {
		eb, _ := json.Marshal(rpcErr)
		b.WriteString(`,"error":`)
		b.Write(eb)
	} else {
		b.WriteString(`,"result":`)
		b.Write(result)
	}
	b.WriteByte('}')
	return b.Bytes()
}
