package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// field is one payload field of a trajectory event, value already JSON.
type field struct {
	key   string
	value json.RawMessage
}

// trajectory is the env trajectory: an append-only JSONL
// file fed by one writer goroutine. emit assigns the id and queues the line
// under one lock, so file order equals id order, and never blocks on I/O.
// Each write carries only complete lines, so no reader sees a torn line
// once it stops at the last newline.
type trajectory struct {
	path  string
	log   *slog.Logger
	now   func() time.Time
	vtime func() (time.Time, bool)
	// maxField caps each stored value (trajcap.go); 0 means no cap.
	maxField int

	mu      sync.Mutex
	next    int64 // next event number
	queue   []pendingEvent
	spare   []pendingEvent // the writer's last batch, reused by the queue
	queued  int64          // events queued so far (by number)
	written int64          // last event number written
	wake    chan struct{}
	// hurry ends the writer's linger at once: a reader waits (flush), the
	// gateway closes, or the queue holds a full batch.
	hurry   chan struct{}
	flushed *sync.Cond
	closed  bool
	file    *os.File
	openErr error
	done    chan struct{}
}

// pendingEvent is an event queued for the writer.
type pendingEvent struct {
	typ    string
	num    int64 // event_<num>
	ts     time.Time
	vt     string
	fields []field
}

// appendLine renders the event as one JSONL line.
func (e *pendingEvent) appendLine(b *bytes.Buffer) {
	// Rendered into the buffer's spare capacity: the writer formats two
	// events per tool call.
	l := b.AvailableBuffer()
	l = append(l, `{"event_type":`...)
	l = appendJSONString(l, e.typ)
	l = append(l, `,"event_id":"event_`...)
	l = strconv.AppendInt(l, e.num, 10)
	l = append(l, `","timestamp_utc":"`...)
	l = appendTimestamp(l, e.ts)
	l = append(l, '"')
	if e.vt != "" {
		l = append(l, `,"virtual_time":`...)
		l = appendJSONString(l, e.vt)
	}
	for _, f := range e.fields {
		l = append(l, ',')
		l = appendJSONString(l, f.key)
		l = append(l, ':')
		l = append(l, compactOrRaw(f.value)...)
	}
	l = append(l, "}\n"...)
	b.Write(l)
}

// maxQueuedEvents bounds memory if the disk stalls; beyond it events are
// dropped (and logged) rather than blocking a tool call.
const maxQueuedEvents = 100000

// trajectoryLinger is how long the writer lets events gather after the
// first one arrives before it writes them. Every tool call emits two
// events; writing each as it came cost a write(2) and a writer wake-up per
// event, about a tenth of the gateway's CPU per call under load. Lingering
// turns those into one write per batch. Nothing waits on it: emit never
// blocks, and a reader of the trajectory (flush) or close ends the linger.
const trajectoryLinger = 2 * time.Millisecond

// lingerBatch is the queue length that ends the linger early.
const lingerBatch = 512

func openTrajectory(path string, log *slog.Logger, vtime func() (time.Time, bool)) *trajectory {
	t := &trajectory{path: path, log: log, now: time.Now, vtime: vtime, next: 1, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{})}
	t.flushed = sync.NewCond(&t.mu)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.openErr = err
	} else if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o644); err != nil {
		t.openErr = err
	} else {
		t.file = f
		t.next = lastEventNumber(f) + 1
	}
	if t.openErr != nil {
		log.Error("trajectory file unavailable; events are dropped", "path", path, "err", t.openErr)
	}
	t.written = t.next - 1
	t.queued = t.next - 1
	go t.run()
	return t
}

// lastEventNumber finds the event_<n> of the file's last complete line, so
// ids continue across restarts.
func lastEventNumber(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	size := st.Size()
	const chunk = 64 << 10
	start := size - chunk
	if start < 0 {
		start = 0
	}
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return 0
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return 0
	}
	lines := bytes.Split(buf[:end], []byte{'\n'})
	for i := len(lines) - 1; i >= 0; i-- {
		var ev struct {
			ID string `json:"event_id"`
		}
		if json.Unmarshal(lines[i], &ev) != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimPrefix(ev.ID, "event_"), 10, 64); err == nil && strings.HasPrefix(ev.ID, "event_") {
			return n
		}
	}
	return 0
}

// emit queues one event and returns its id. Base fields come first, in
// the reference's order; virtual_time is absent while the clock is unarmed.
func (t *trajectory) emit(eventType string, fields ...field) string {
	ts := t.now().UTC()
	var vt string
	if t.vtime != nil {
		if v, ok := t.vtime(); ok {
			vt = formatVirtual(v)
		}
	}
	// The critical section is kept to numbering and queueing: every call
	// emits twice, and under concurrency a longer one convoys the callers.
	t.mu.Lock()
	n := t.next
	t.next++
	if t.closed || t.file == nil {
		t.mu.Unlock()
		return eventID(n)
	}
	if len(t.queue) >= maxQueuedEvents {
		t.mu.Unlock()
		t.log.Error("trajectory queue full; event dropped", "event_id", eventID(n))
		return eventID(n)
	}
	if t.queue == nil {
		t.queue, t.spare = t.spare, nil
	}
	// Formatting happens on the writer goroutine, off the call path.
	t.queue = append(t.queue, pendingEvent{typ: eventType, num: n, ts: ts, vt: vt, fields: fields})
	t.queued = n
	full := len(t.queue) == lingerBatch
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
	if full {
		t.hurryUp()
	}
	return eventID(n)
}

// hurryUp ends the writer's current linger, or its next one.
func (t *trajectory) hurryUp() {
	select {
	case t.hurry <- struct{}{}:
	default:
	}
}

func eventID(n int64) string { return "event_" + strconv.FormatInt(n, 10) }

// Emit writes an event built by another component (the trigger engine):
// payload is a JSON object whose fields follow the base fields in order.
// It returns the assigned event id.
func (t *trajectory) Emit(eventType string, payload json.RawMessage) string {
	var fields []field
	if len(payload) > 0 {
		fs, err := orderedFields(payload)
		if err != nil {
			t.log.Error("trajectory payload is not a JSON object; event written without it", "event_type", eventType, "err", err)
		}
		for _, f := range fs {
			if f.key == "event_type" || f.key == "event_id" || f.key == "timestamp_utc" || f.key == "virtual_time" {
				continue
			}
			fields = append(fields, field{f.key, capValue(f.value, t.maxField)})
		}
	}
	return t.emit(eventType, fields...)
}

func (t *trajectory) run() {
	defer close(t.done)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var buf bytes.Buffer // reused across batches
	for {
		t.mu.Lock()
		for len(t.queue) == 0 && !t.closed {
			t.mu.Unlock()
			<-t.wake
			t.mu.Lock()
		}
		if !t.closed && len(t.queue) < lingerBatch {
			// Let the rest of this call's events, and other calls', join
			// the batch (trajectoryLinger).
			t.mu.Unlock()
			linger.Reset(trajectoryLinger)
			select {
			case <-linger.C:
			case <-t.hurry:
				linger.Stop()
			}
			t.mu.Lock()
		}
		batch := t.queue
		upto := t.queued
		t.queue = nil
		closed := t.closed
		t.mu.Unlock()
		if len(batch) > 0 {
			buf.Reset()
			for i := range batch {
				batch[i].appendLine(&buf)
			}
			if _, err := t.file.Write(buf.Bytes()); err != nil {
				t.log.Error("trajectory write failed", "err", err, "events", len(batch))
			}
			if buf.Cap() > 1<<20 {
				buf = bytes.Buffer{} // a burst of large events is not kept
			}
		}
		clear(batch)
		t.mu.Lock()
		if cap(batch) <= 4096 {
			t.spare = batch[:0]
		}
		t.written = upto
		t.flushed.Broadcast()
		t.mu.Unlock()
		if closed {
			t.mu.Lock()
			rest := len(t.queue)
			t.mu.Unlock()
			if rest == 0 {
				return
			}
		}
	}
}

// flush waits until every event emitted before the call is on disk, or the
// context ends.
func (t *trajectory) flush(ctx context.Context) {
	t.mu.Lock()
	target := t.queued
	waiting := t.written < target
	t.mu.Unlock()
	if waiting {
		t.hurryUp()
	}
	done := make(chan struct{})
	go func() {
		t.mu.Lock()
		for t.written < target && ctx.Err() == nil && !t.closed {
			t.flushed.Wait()
		}
		t.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.mu.Lock()
		t.flushed.Broadcast()
		t.mu.Unlock()
	}
}

// close drains the queue and closes the file.
func (t *trajectory) close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
	t.hurryUp()
	<-t.done
	if t.file != nil {
		_ = t.file.Close()
	}
}

// serve answers GET /trajectory: exactly X-Trajectory-Total-Bytes bytes,
// up to the last complete line at open time, streamed in chunks. Query
// parameters are ignored.
func (t *trajectory) serve(w http.ResponseWriter, r *http.Request) {
	fctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	t.flush(fctx)
	cancel()
	f, err := os.Open(t.path)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "trajectory file unavailable: " + err.Error()})
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "trajectory file unavailable: " + err.Error()})
		return
	}
	n := completeLength(f, st.Size())
	w.Header().Set("Content-Type", protocol.TrajectoryContentType)
	w.Header().Set(protocol.HeaderTrajectoryTotalBytes, strconv.FormatInt(n, 10))
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.CopyN(w, f, n); err != nil {
		t.log.Debug("trajectory stream cut", "err", err)
	}
}

// completeLength returns the offset just after the last newline at or
// before size.
func completeLength(f *os.File, size int64) int64 {
	const chunk = 64 << 10
	for end := size; end > 0; {
		start := end - chunk
		if start < 0 {
			start = 0
		}
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return 0
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}

// appendTimestamp appends ISO 8601 with "+00:00" and microseconds when non-zero
// (Python's datetime.isoformat()).
func appendTimestamp(dst []byte, t time.Time) []byte {
	t = t.UTC()
	dst = t.AppendFormat(dst, "2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		dst = append(dst, '.')
		for d := 100000; d > 0; d /= 10 {
			dst = append(dst, byte('0'+us/d%10))
		}
	}
	return append(dst, "+00:00"...)
}

// formatVirtual is UTC with "Z", microseconds only when non-zero.
func formatVirtual(t time.Time) string {
	t = t.UTC()
	if us := t.Nanosecond() / 1000; us != 0 {
		return t.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%06dZ", us)
	}
	return t.Format("2006-01-02T15:04:05Z")
}
