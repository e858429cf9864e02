package gateway

import (
	"bytes"
	"io"
)

// Large JSON-RPC messages (a tool call's arguments, a child's answer) are
// held once: read at their announced size, or in chunks put together once
// when no size was announced, never by doubling a buffer (which leaves up
// to twice the message behind as garbage). Small ones use bodyPool.

// maxFlatBody is the largest child request built as one buffer and the
// largest result copied into one answer message; maxPooledBody is the
// largest buffer kept in bodyPool.
const (
	maxFlatBody   = 64 << 10
	maxPooledBody = 1 << 20
)

// bodyChunk is the read size past maxPooledBody when the length is unknown.
const bodyChunk = 4 << 20

// readBody reads r to its end. size is the announced length (<= 0:
// unknown); hint, when size is unknown, the length the body probably has
// (<= 0: none). A body of at most maxPooledBody bytes is read into buf and
// inBuf is true (the caller copies what it keeps before buf goes back to
// bodyPool); a larger one is returned in memory of its own.
func readBody(buf *bytes.Buffer, r io.Reader, size, hint int64) (body []byte, inBuf bool, err error) {
	if size <= 0 && hint > maxPooledBody {
		size = hint // a wrong hint costs a larger buffer or one regrowth
	}
	if size > maxPooledBody {
		own := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
		_, err := own.ReadFrom(r)
		return own.Bytes(), false, err
	}
	if size > 0 {
		// The announced size is the framing: the body cannot be longer.
		buf.Grow(int(size) + bytes.MinRead)
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), true, err
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, maxPooledBody+1)); err != nil || buf.Len() <= maxPooledBody {
		return buf.Bytes(), true, err
	}
	chunks := [][]byte{buf.Bytes()}
	total := buf.Len()
	for {
		// Not io.ReadFull: it reports a short last chunk as
		// io.ErrUnexpectedEOF, which is also how a cut-off body ends.
		c := make([]byte, bodyChunk)
		n := 0
		var err error
		for n < len(c) && err == nil {
			var k int
			k, err = r.Read(c[n:])
			n += k
		}
		chunks = append(chunks, c[:n])
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	body = make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	return body, false, nil
}
