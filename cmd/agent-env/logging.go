package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/agentenv/agentenv/internal/didyoumean"
	"github.com/agentenv/agentenv/registry/redact"
)

// Log formats (--log-format): people read "text" lines
//
//	warning: config: unknown key "defualt" in [sandbox]; did you mean "default"?
//
// and programs ask for "json" (one slog JSON object per line), on a
// terminal or a pipe alike.
const (
	logText = "text"
	logJSON = "json"
)

var logFormats = []string{logText, logJSON}

func checkLogFormat(f string) error {
	for _, ok := range logFormats {
		if f == ok {
			return nil
		}
	}
	return fmt.Errorf("--log-format: unknown format %q%s", f, didyoumean.Suffix(f, logFormats))
}

// newLogHandler is the handler of d.logger(): JSON or human lines, with
// secrets redacted either way.
func newLogHandler(w io.Writer, format string, level slog.Level) slog.Handler {
	if format == logJSON {
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redact.ReplaceAttr})
	}
	return &textHandler{w: w, mu: &sync.Mutex{}, level: level}
}

// textHandler writes "<level>: <message> key=value ..." lines.
type textHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	level  slog.Level
	attrs  []slog.Attr
	groups []string
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(levelWord(r.Level))
	b.WriteString(": ")
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		h.writeAttr(&b, a)
	}
	r.Attrs(func(a slog.Attr) bool {
		h.writeAttr(&b, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *textHandler) writeAttr(b *strings.Builder, a slog.Attr) {
	a = redact.ReplaceAttr(h.groups, a)
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	key := strings.Join(append(append([]string(nil), h.groups...), a.Key), ".")
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			h.writeAttr(b, slog.Attr{Key: a.Key + "." + g.Key, Value: g.Value})
		}
		return
	}
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		v = strconv.Quote(v)
	}
	fmt.Fprintf(b, " %s=%s", key, v)
}

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *textHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.groups = append(append([]string(nil), h.groups...), name)
	return &c
}

func levelWord(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}
