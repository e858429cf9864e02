package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
)

// childResponse is what the gateway reads of a child's HTTP answer: the
// raw client (rawclient.go) parses it straight off the connection, and
// net/http's answers are reduced to it (fromHTTP), so readAnswer has one
// input whichever path carried the call.
type childResponse struct {
	status int
	ctype  string // Content-Type, as sent
	length int64  // Content-Length; -1 when the body is chunked or runs to EOF
	// hint is the size of a chunked body's first chunk when it was known
	// at once (0 otherwise): a server that writes its whole answer in one
	// write, as net/http servers encoding JSON do, announces the length there.
	hint  int64
	close bool // the connection cannot carry another request after this answer
	body  io.Reader
}

func fromHTTP(resp *http.Response) *childResponse {
	return &childResponse{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"),
		length: resp.ContentLength, close: resp.Close, body: resp.Body}
}

// isEventStream reports whether the answer is a 200 text/event-stream.
func (r *childResponse) isEventStream() bool {
	if r.status != http.StatusOK || r.ctype == "application/json" {
		return false // the common case, without parsing the media type
	}
	mediaType, _, _ := mime.ParseMediaType(r.ctype)
	return mediaType == "text/event-stream"
}

// maxResponseHead bounds a child's status line and headers (net/http's
// Transport allows 10 MB; no MCP server needs more than a few hundred bytes).
const maxResponseHead = 1 << 20

var (
	errResponseHeadTooLarge = errors.New("child response headers too large")
	errBadResponseHead      = errors.New("malformed child response")
)

// readResponseHead parses one HTTP/1.x response head from br and sets up
// its body. It replaces http.ReadResponse on the proxied-call path, which
// builds a Header map of every field and a Response, only for the gateway
// to read four of them. It keeps the framing rules that matter for
// reusing the connection safely (RFC 9112 §6.3): Transfer-Encoding wins
// over Content-Length, conflicting lengths are an error, 1xx/204/304 have
// no body, and a body without either runs to EOF and ends the connection.
func readResponseHead(br *bufio.Reader) (*childResponse, error) {
	budget := maxResponseHead
	line, err := readHeadLine(br, &budget)
	if err != nil {
		return nil, err
	}
	// "HTTP/1.1 200 OK": a version, one space, three digits, then an
	// optional reason.
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return nil, fmt.Errorf("%w: status line %q", errBadResponseHead, truncate(string(line), 64))
	}
	status := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return nil, fmt.Errorf("%w: status line %q", errBadResponseHead, truncate(string(line), 64))
		}
		status = status*10 + int(c-'0')
	}
	r := &childResponse{status: status, length: -1, close: line[7] == '0'}
	chunked, haveLength := false, false
	for {
		line, err := readHeadLine(br, &budget)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, fmt.Errorf("%w: folded header line", errBadResponseHead)
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, fmt.Errorf("%w: header line %q", errBadResponseHead, truncate(string(line), 64))
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (haveLength && n != r.length) {
				return nil, fmt.Errorf("%w: Content-Length %q", errBadResponseHead, truncate(string(value), 32))
			}
			r.length, haveLength = n, true
		case asciiEqualFold(name, "transfer-encoding"):
			if !asciiEqualFold(value, "chunked") {
				// No MCP server sends another coding; guessing the
				// framing would misread the body.
				return nil, fmt.Errorf("%w: unsupported Transfer-Encoding %q", errBadResponseHead, truncate(string(value), 32))
			}
			chunked = true
		case asciiEqualFold(name, "connection"):
			if hasToken(value, "close") {
				r.close = true
			}
		case asciiEqualFold(name, "content-type"):
			r.ctype = string(value)
		}
	}
	switch {
	case (status >= 100 && status < 200) || status == http.StatusNoContent || status == http.StatusNotModified:
		r.length, r.body = 0, http.NoBody
	case chunked:
		r.length, r.body = -1, &chunkedBody{br: br}
		r.hint = firstChunkSize(br)
	case haveLength:
		r.body = &fixedBody{br: br, n: r.length}
	default:
		r.body, r.close = br, true
	}
	return r, nil
}

// firstChunkSize parses the first chunk-size line of a chunked body if it
// is already buffered, without blocking or consuming anything; 0 when it
// is not there yet or does not parse (the chunked reader then reports it).
func firstChunkSize(br *bufio.Reader) int64 {
	b, _ := br.Peek(min(br.Buffered(), 18))
	end := bytes.IndexAny(b, ";\r\n")
	if end <= 0 || end > 15 {
		return 0
	}
	n, err := strconv.ParseInt(string(b[:end]), 16, 64)
	if err != nil {
		return 0
	}
	return n
}

// readHeadLine returns one header line without its line ending.
func readHeadLine(br *bufio.Reader, budget *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	*budget -= len(line)
	if errors.Is(err, bufio.ErrBufferFull) || *budget < 0 {
		return nil, errResponseHeadTooLarge
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// errWouldBlock is returned by a body read in settle mode (rawclient.go)
// when the next bytes have not arrived: nothing was consumed, and the
// read can be tried again later.
var errWouldBlock = errors.New("would block")

// errBadChunk is a malformed chunked body.
var errBadChunk = errors.New("malformed chunked encoding")

// chunkedBody decodes a chunked body (RFC 9112 §7.1) and, at its end, the
// trailer section, so the connection is positioned at the next response.
// It is written for being read in two modes: a blocking read while the
// answer is parsed, and a non-blocking one afterwards that consumes only
// what has arrived (settle). Every step takes its bytes whole or not at
// all, so a read that fails with errWouldBlock leaves the state as it was.
type chunkedBody struct {
	br      *bufio.Reader
	n       uint64 // data bytes left in the current chunk
	crlf    bool   // the CRLF after a chunk's data is next
	trailer bool   // the last chunk was read; trailer lines follow
	budget  int    // trailer bytes still allowed
	err     error  // sticky: io.EOF at the end, or the failure
}

// maxChunkLine bounds a chunk-size line (net/http allows 4 KiB).
const maxChunkLine = 4 << 10

func (b *chunkedBody) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 && b.err == nil {
		if b.n == 0 {
			// Between chunks: never wait for the next one with data in
			// hand, only take what is buffered.
			if err := b.advance(total > 0); err != nil {
				if total > 0 && err == errWouldBlock {
					break
				}
				return total, err
			}
			continue
		}
		if total > 0 && b.br.Buffered() == 0 {
			break
		}
		q := p
		if uint64(len(q)) > b.n {
			q = q[:b.n]
		}
		n, err := b.br.Read(q)
		total += n
		p = p[n:]
		b.n -= uint64(n)
		b.crlf = b.n == 0
		if err != nil {
			if err == errWouldBlock {
				if total > 0 {
					break
				}
				return 0, err
			}
			return total, b.fail(err)
		}
	}
	if total == 0 && b.err != nil {
		return 0, b.err
	}
	return total, nil
}

// advance moves past the end of a chunk's data to the next chunk with
// data, or to the end of the body (b.err = io.EOF). With buffered set, it
// takes only what is already buffered and returns errWouldBlock for more.
func (b *chunkedBody) advance(buffered bool) error {
	for b.n == 0 && b.err == nil {
		switch {
		case b.crlf:
			if buffered && b.br.Buffered() < 2 {
				return errWouldBlock
			}
			crlf, err := b.br.Peek(2)
			if err != nil {
				return b.fail(err)
			}
			if crlf[0] != '\r' || crlf[1] != '\n' {
				return b.fail(errBadChunk)
			}
			_, _ = b.br.Discard(2)
			b.crlf = false
		case b.trailer:
			line, err := b.line(b.budget, buffered)
			if err != nil {
				return b.fail(err)
			}
			b.budget -= len(line)
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				b.err = io.EOF
			}
		default:
			line, err := b.line(maxChunkLine, buffered)
			if err != nil {
				return b.fail(err)
			}
			size, ok := parseChunkSize(line)
			if !ok {
				return b.fail(errBadChunk)
			}
			if size == 0 {
				b.trailer, b.budget = true, maxResponseHead
			}
			b.n = size
		}
	}
	return b.err
}

// line consumes one whole line (with its ending) of at most limit bytes,
// or nothing (errWouldBlock when buffered and the line is not).
func (b *chunkedBody) line(limit int, buffered bool) ([]byte, error) {
	for {
		buf, _ := b.br.Peek(b.br.Buffered())
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			if i >= limit {
				return nil, errBadChunk
			}
			line := buf[:i+1]
			_, _ = b.br.Discard(i + 1)
			return line, nil
		}
		if len(buf) >= limit || len(buf) == b.br.Size() {
			return nil, errBadChunk
		}
		if buffered {
			return nil, errWouldBlock
		}
		if _, err := b.br.Peek(len(buf) + 1); err != nil {
			return nil, err
		}
	}
}

// fail records a lasting failure; errWouldBlock is not one.
func (b *chunkedBody) fail(err error) error {
	if err == errWouldBlock {
		return err
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	b.err = err
	return err
}

// parseChunkSize parses a chunk-size line: hex digits, optional
// extensions after ';', optional trailing whitespace, then the line end.
func parseChunkSize(line []byte) (uint64, bool) {
	line = bytes.TrimRight(line, " \t\r\n")
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = bytes.TrimRight(line[:i], " \t")
	}
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, n <= 1<<62
}

// fixedBody is a body of a known length; like chunkedBody, a read that
// fails with errWouldBlock consumes nothing.
type fixedBody struct {
	br *bufio.Reader
	n  int64
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// asciiEqualFold reports whether s equals lower, a lowercase ASCII
// string, ignoring ASCII case in s.
func asciiEqualFold[T []byte | string](s T, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether a comma-separated header value lists token.
func hasToken(value []byte, token string) bool {
	for len(value) > 0 {
		part := value
		if i := bytes.IndexByte(value, ','); i >= 0 {
			part, value = value[:i], value[i+1:]
		} else {
			value = nil
		}
		if asciiEqualFold(bytes.Trim(part, " \t"), token) {
			return true
		}
	}
	return false
}
