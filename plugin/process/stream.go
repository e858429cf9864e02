package process

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// maxLine bounds one message: a plugin that writes more without a newline
// is writing garbage.
const maxLine = 64 << 20

// lineStream is the framing of the protocol: one JSON-RPC message per line
// (UTF-8 JSON with no raw newline inside, ending in "\n"), both ways. It
// implements jsonrpc2.ObjectStream and remembers why reading stopped, so
// that a failed call can say "wrote something that is not JSON-RPC"
// rather than "connection closed".
type lineStream struct {
	r      *bufio.Reader
	w      io.Writer
	closer func() error

	wmu sync.Mutex

	mu      sync.Mutex
	readErr error
}

// GarbageError is a line from the plugin that is not a JSON-RPC message.
type GarbageError struct {
	Line []byte // the start of the line
	Err  error
}

func (e *GarbageError) Error() string {
	return fmt.Sprintf("wrote a line that is not a JSON-RPC message (%v): %q", e.Err, e.Line)
}

func (e *GarbageError) Unwrap() error { return e.Err }

func (s *lineStream) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.w.Write(b)
	return err
}

func (s *lineStream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if err != nil {
			return s.fail(err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := json.Unmarshal(line, v); err != nil {
			if len(line) > 200 {
				line = line[:200]
			}
			return s.fail(&GarbageError{Line: bytes.TrimRight(line, "\r\n"), Err: err})
		}
		return nil
	}
}

func (s *lineStream) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(buf) > maxLine {
				return nil, &GarbageError{Line: buf[:200], Err: fmt.Errorf("a line longer than %d bytes", maxLine)}
			}
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(buf)) > 0:
			return buf, nil // a last message without its newline
		default:
			return nil, err
		}
	}
}

func (s *lineStream) fail(err error) error {
	s.mu.Lock()
	if s.readErr == nil {
		s.readErr = err
	}
	s.mu.Unlock()
	return err
}

// ReadErr is why reading stopped (io.EOF when the plugin closed its
// output), nil while it goes on.
func (s *lineStream) ReadErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readErr
}

func (s *lineStream) Close() error { return s.closer() }

func newReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }
