package gateway

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestReadResponseHead(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		status       int
		ctype, body  string
		length       int64
		close        bool
		rest         string // what must remain on the connection afterwards
		wantErr, bad bool
	}{
		{name: "content-length", in: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}NEXT",
			status: 200, ctype: "application/json", body: "{}", length: 2, rest: "NEXT"},
		{name: "names are case-insensitive, values trimmed", in: "HTTP/1.1 200 OK\r\ncontent-LENGTH:  3 \r\nCONTENT-TYPE:\ttext/event-stream\r\n\r\nabcX",
			status: 200, ctype: "text/event-stream", body: "abc", length: 3, rest: "X"},
		{name: "chunked with trailers", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT",
			status: 200, body: "abcde", length: -1, rest: "NEXT"},
		{name: "transfer-encoding wins over content-length", in: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\nNEXT",
			status: 200, body: "a", length: -1, rest: "NEXT"},
		{name: "no length runs to EOF and closes", in: "HTTP/1.1 200 OK\r\n\r\nall of it",
			status: 200, body: "all of it", length: -1, close: true},
		{name: "connection close", in: "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx",
			status: 200, body: "x", length: 1, close: true},
		{name: "HTTP/1.0 closes", in: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", length: 1, close: true},
		{name: "204 has no body", in: "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nNEXT", status: 204, length: 0, rest: "NEXT"},
		{name: "1xx has no body", in: "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1", status: 103, length: 0, rest: "HTTP/1.1"},
		{name: "no reason phrase", in: "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", status: 404, length: 0},
		{name: "bare LF line endings", in: "HTTP/1.1 200 OK\nContent-Length: 1\n\nx", status: 200, body: "x", length: 1},
		{name: "identical duplicate lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", length: 1},
		{name: "conflicting lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", wantErr: true, bad: true},
		{name: "negative length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: true, bad: true},
		{name: "gzip transfer coding", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", wantErr: true, bad: true},
		{name: "folded header", in: "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", wantErr: true, bad: true},
		{name: "header without colon", in: "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", wantErr: true, bad: true},
		{name: "not HTTP", in: "SSH-2.0-OpenSSH\r\n\r\n", wantErr: true, bad: true},
		{name: "status not digits", in: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: true, bad: true},
		{name: "status too long", in: "HTTP/1.1 2000 OK\r\n\r\n", wantErr: true, bad: true},
		{name: "truncated head", in: "HTTP/1.1 200 OK\r\nContent-Len", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 64)
			r, err := readResponseHead(br)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", r)
				}
				if tc.bad && !errors.Is(err, errBadResponseHead) {
					t.Fatalf("error %v is not errBadResponseHead", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(r.body)
			if err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(br)
			if r.status != tc.status || r.ctype != tc.ctype || r.length != tc.length || r.close != tc.close ||
				string(body) != tc.body || (!r.close && string(rest) != tc.rest) {
				t.Fatalf("got status %d ctype %q length %d close %v body %q rest %q", r.status, r.ctype, r.length, r.close, body, rest)
			}
		})
	}
}

func TestReadResponseHeadLimitsTheHead(t *testing.T) {
	long := "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 100) + "\r\n\r\n"
	if _, err := readResponseHead(bufio.NewReaderSize(strings.NewReader(long), 32)); !errors.Is(err, errResponseHeadTooLarge) {
		t.Fatalf("a line longer than the buffer: %v", err)
	}
	many := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: 1\r\n", maxResponseHead/6+1) + "\r\n"
	if _, err := readResponseHead(bufio.NewReader(strings.NewReader(many))); !errors.Is(err, errResponseHeadTooLarge) {
		t.Fatalf("a head over %d bytes: %v", maxResponseHead, err)
	}
}

func TestChildResponseIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{"text/event-stream": true, "Text/Event-Stream; charset=utf-8": true,
		"application/json": false, "": false, "text/plain": false} {
		if got := (&childResponse{status: 200, ctype: ct}).isEventStream(); got != want {
			t.Errorf("%q: %v", ct, got)
		}
	}
	if (&childResponse{status: 202, ctype: "text/event-stream"}).isEventStream() {
		t.Error("a 202 is not an answer stream")
	}
}

// FuzzReadResponseHead checks the lean parser against net/http's: whatever
// both accept must agree on status, body and whether the connection can be
// reused, and the parser must never panic or read past its response.
func FuzzReadResponseHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 204 No Content\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := readResponseHead(bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			return
		}
		body, berr := io.ReadAll(r.body)
		resp, herr := http.ReadResponse(bufio.NewReader(strings.NewReader(in)), nil)
		if herr != nil {
			return // stricter or looser elsewhere; only agreement is checked
		}
		hbody, hberr := io.ReadAll(resp.Body)
		if berr != nil || hberr != nil {
			return
		}
		if resp.StatusCode != r.status {
			t.Fatalf("status %d, net/http %d", r.status, resp.StatusCode)
		}
		if string(body) != string(hbody) {
			t.Fatalf("body %q, net/http %q", body, hbody)
		}
		if !r.close && resp.Close {
			t.Fatalf("keeps a connection net/http closes")
		}
	})
}

// The first chunk's size is read only from what is already buffered: a
// short body never makes the head parser wait for bytes that will not come.
func TestFirstChunkSizeHint(t *testing.T) {
	for in, want := range map[string]int64{
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f4\r\n":           500,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2000000;ext=1\r\n": 32 << 20,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3":                 0, // line not complete
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n":                  0,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n":            0,
	} {
		resp, err := readResponseHead(bufio.NewReader(strings.NewReader(in)))
		if err != nil || resp.hint != want {
			t.Errorf("%q: hint %d (%v), want %d", in, resp.hint, err, want)
		}
	}
}
