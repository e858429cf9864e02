package gateway

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadBody(t *testing.T) {
	big := strings.Repeat("x", 3*maxPooledBody+17)
	for _, tc := range []struct {
		name        string
		body        string
		size, hint  int64
		inBuf, fail bool
	}{
		{name: "small, length known", body: "{}", size: 2, inBuf: true},
		{name: "small, length unknown", body: "{}", size: -1, inBuf: true},
		{name: "large, length known", body: big, size: int64(len(big))},
		{name: "large, length unknown", body: big, size: -1},
		{name: "large, right hint", body: big, size: -1, hint: int64(len(big))},
		{name: "large, short hint", body: big, size: -1, hint: maxPooledBody + 1},
		{name: "exactly the pool limit", body: big[:maxPooledBody], size: -1, inBuf: true},
		{name: "one past the pool limit", body: big[:maxPooledBody+1], size: -1},
	} {
		var buf bytes.Buffer
		got, inBuf, err := readBody(&buf, strings.NewReader(tc.body), tc.size, tc.hint)
		if err != nil || string(got) != tc.body || inBuf != tc.inBuf {
			t.Errorf("%s: %d bytes (want %d), inBuf %v, err %v", tc.name, len(got), len(tc.body), inBuf, err)
		}
	}
}

// A body cut off in transit is an error however it is read, never a
// shorter body.
func TestReadBodyCutOff(t *testing.T) {
	for _, n := range []int{10, 3 * maxPooledBody} {
		r := io.MultiReader(strings.NewReader(strings.Repeat("x", n)), errReader{io.ErrUnexpectedEOF})
		var buf bytes.Buffer
		if _, _, err := readBody(&buf, r, -1, 0); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%d bytes then a cut: err %v", n, err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
