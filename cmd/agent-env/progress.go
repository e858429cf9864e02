package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressDelay is how long a step runs before the spinner appears: quick
// steps (all of `agent-env run hello`) never show one.
const progressDelay = 700 * time.Millisecond

// progress shows a spinner line naming the running step(s) while a step
// takes long, on an interactive terminal only. The step lines themselves
// are printed as always; each erases the spinner first, and the spinner
// redraws below it. A nil *progress does nothing, which is what tests and
// pipes get.
type progress struct {
	mu      sync.Mutex // running, order, bar, timer, closed
	running map[string]string
	order   []string
	bar     *progressbar.ProgressBar
	timer   *time.Timer
	closed  bool
	delay   time.Duration

	wmu     sync.Mutex // serialises writes to the terminal
	term    io.Writer
	visible atomic.Bool
}

// newProgress returns a progress display when stdout is a terminal (and
// TERM is not "dumb"), else nil.
func (d *deps) newProgress() *progress {
	f, ok := d.stdout.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || d.getenv("TERM") == "dumb" {
		return nil
	}
	return newTermProgress(f, progressDelay)
}

func newTermProgress(w io.Writer, delay time.Duration) *progress {
	return &progress{running: map[string]string{}, delay: delay, term: w}
}

// Writer returns w wrapped so that every write first erases a shown
// spinner; without a display it is w itself.
func (p *progress) Writer(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return &progressLineWriter{p: p, w: w}
}

// Start marks a step as running; label is shown beside the spinner.
func (p *progress) Start(key, label string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if _, dup := p.running[key]; !dup {
		p.order = append(p.order, key)
	}
	p.running[key] = label
	if p.bar != nil {
		p.bar.Describe(p.describe())
		return
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(p.delay, p.show)
	}
}

// Done marks a step as finished.
func (p *progress) Done(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, key)
	for i, k := range p.order {
		if k == key {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	if len(p.running) > 0 {
		if p.bar != nil {
			p.bar.Describe(p.describe())
		}
		return
	}
	p.hide()
}

// Close removes the spinner for good.
func (p *progress) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.hide()
}

// show draws the spinner once a step has run for the delay. Caller: the
// timer.
func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.closed || p.bar != nil || len(p.running) == 0 {
		return
	}
	p.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(termWriter{p}),
		progressbar.OptionSetDescription(p.describe()),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionClearOnFinish(),
	)
	p.visible.Store(true)
	_ = p.bar.RenderBlank()
}

// hide stops the timer and erases the spinner. Caller holds p.mu.
func (p *progress) hide() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
		p.visible.Store(false)
	}
}

// describe names the oldest running step and how many others run. Caller
// holds p.mu.
func (p *progress) describe() string {
	if len(p.order) == 0 {
		return ""
	}
	s := p.running[p.order[0]]
	if n := len(p.order) - 1; n > 0 {
		s += fmt.Sprintf(" (+%d more)", n)
	}
	return s
}

// termWriter is the spinner's own writer.
type termWriter struct{ p *progress }

func (t termWriter) Write(b []byte) (int, error) {
	t.p.wmu.Lock()
	defer t.p.wmu.Unlock()
	return t.p.term.Write(b)
}

// progressLineWriter erases the spinner line before printing.
type progressLineWriter struct {
	p *progress
	w io.Writer
}

func (l *progressLineWriter) Write(b []byte) (int, error) {
	l.p.wmu.Lock()
	defer l.p.wmu.Unlock()
	if l.p.visible.Load() {
		if _, err := io.WriteString(l.w, "\033[2K\r"); err != nil {
			return 0, err
		}
	}
	return l.w.Write(b)
}
