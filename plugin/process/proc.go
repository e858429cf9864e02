package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// proc is one running plugin process and its JSON-RPC connection.
type proc struct {
	name   string
	cmd    *exec.Cmd
	conn   *jsonrpc2.Conn
	stream *lineStream
	stderr *tail
	stdin  io.Closer

	exited  chan struct{} // closed when the process has ended
	waitErr error         // set before exited is closed

	// deltas: the plugin declared context_deltas (set once, by the
	// describe handshake, before the process serves other calls).
	deltas bool
	// ctx is the run context copy the process holds (delta.go).
	ctx mirror

	mu       sync.Mutex
	inflight int
	retired  bool // a call hung: kill once the other calls are done
	killed   bool
}

// startProc starts argv with its own process group (killed as a whole) and
// connects to its stdin/stdout; h serves what the plugin sends.
func startProc(name string, argv []string, env []string, dir string, log *slog.Logger, h jsonrpc2.Handler) (*proc, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("plugin %q: empty command", name)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	setGroup(cmd)
	var parentEnds, childEnds []*os.File
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		return
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, err
	}
	parentEnds = []*os.File{inW, outR, errR}
	childEnds = []*os.File{inR, outW, errW}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range append(parentEnds, childEnds...) {
			f.Close()
		}
		return nil, fmt.Errorf("plugin %q: start %s: %w", name, argv[0], err)
	}
	for _, f := range childEnds {
		f.Close()
	}
	p := &proc{name: name, cmd: cmd, stderr: &tail{done: make(chan struct{})}, stdin: inW, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.stderr.copyLines(errR, func(line string) {
		log.Info("plugin stderr", "plugin", name, "line", line)
	})
	p.stream = &lineStream{r: newReader(outR), w: inW, closer: func() error {
		return errors.Join(inW.Close(), outR.Close())
	}}
	p.conn = jsonrpc2.NewConn(context.Background(), p.stream, h, jsonrpc2.SetLogger(discardLogger{}))
	return p, nil
}

// acquire counts a call in flight; release ends it and kills a retired
// process once it is idle.
func (p *proc) acquire() {
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
}

func (p *proc) release() {
	p.mu.Lock()
	p.inflight--
	kill := p.retired && p.inflight == 0
	p.mu.Unlock()
	if kill {
		p.kill()
	}
}

// retire takes the process out of service: it gets no new calls and is
// killed as soon as the calls it still serves are done.
func (p *proc) retire() {
	p.mu.Lock()
	p.retired = true
	kill := p.inflight == 0
	p.mu.Unlock()
	if kill {
		p.kill()
	}
}

// usable reports whether new calls may go to the process.
func (p *proc) usable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retired || p.killed {
		return false
	}
	select {
	case <-p.conn.DisconnectNotify():
		return false
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill ends the process group and the connection, and waits for the
// process to be reaped.
func (p *proc) kill() {
	p.mu.Lock()
	again := p.killed
	p.killed = true
	p.mu.Unlock()
	if !again { // once: the id may name another process group later
		killGroup(p.cmd.Process.Pid)
	}
	_ = p.conn.Close()
	<-p.exited
	if !again {
		waitGroupGone(p.cmd.Process.Pid)
	}
}

// waitGroupGone waits (up to 5 s) until no process of the killed group is
// left: the plugin's children die a moment after it, reaped by init.
func waitGroupGone(pgid int) {
	deadline := time.Now().Add(5 * time.Second)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// stop asks the process to end by closing its stdin, waits up to grace,
// then kills the whole group (the plugin's own children included).
func (p *proc) stop(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	p.kill()
}

// why explains a broken connection: what the plugin wrote, or how it
// ended, with the end of its stderr.
func (p *proc) why() string {
	var msg string
	var ge *GarbageError
	rerr := p.stream.ReadErr()
	switch {
	case errors.As(rerr, &ge):
		msg = ge.Error()
	default:
		// The output closed: the process is ending; give it a moment to be
		// reaped so that the exit status can be told.
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
		}
		select {
		case <-p.exited:
			if p.waitErr != nil {
				msg = "exited (" + p.waitErr.Error() + ")"
			} else {
				msg = "exited (status 0)"
			}
		default:
			msg = "closed its output"
		}
		p.mu.Lock()
		killed := p.killed
		p.mu.Unlock()
		if killed {
			msg = "was stopped"
		}
	}
	if ge == nil {
		// Its last words may still be in the stderr pipe.
		select {
		case <-p.stderr.done:
		case <-time.After(time.Second):
		}
	}
	if t := p.stderr.String(); t != "" {
		msg += "; its last stderr lines: " + t
	}
	return msg
}

// tail keeps the last lines a plugin wrote to stderr, for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
	done  chan struct{} // closed when the plugin's stderr is closed
}

const tailLines = 5

func (t *tail) copyLines(r io.ReadCloser, each func(string)) {
	defer close(t.done)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		each(line)
		t.mu.Lock()
		t.lines = append(t.lines, line)
		if len(t.lines) > tailLines {
			t.lines = t.lines[len(t.lines)-tailLines:]
		}
		t.mu.Unlock()
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, " | ")
	if len(s) > 800 {
		s = "…" + s[len(s)-800:]
	}
	return s
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
