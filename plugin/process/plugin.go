package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Default timeouts; [plugins.<name>] timeout overrides DefaultTimeout.
const (
	// DefaultTimeout bounds one call (a step run, a sandbox exec).
	DefaultTimeout = 10 * time.Minute
	// DefaultStartTimeout bounds starting the process and its
	// plugin/describe answer.
	DefaultStartTimeout = 30 * time.Second
	// DefaultCancelGrace is how long a cancelled or timed-out call waits
	// for the plugin to acknowledge $/cancelRequest before the process is
	// taken out of service.
	DefaultCancelGrace = 2 * time.Second
)

// Options tunes a Plugin; nil means defaults.
type Options struct {
	// Logger receives the plugin's stderr lines and its $/log and
	// $/progress notifications that name no running step; nil discards.
	Logger *slog.Logger
	// StartTimeout; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// CancelGrace; 0 means DefaultCancelGrace.
	CancelGrace time.Duration
	// Environ is the environment of the process; nil means os.Environ().
	Environ []string
}

// Plugin is one process plugin. Its process is started on first use (or
// by Describe), reused by every later call, started again after it
// crashed, and ended by Close. It is safe for concurrent use.
type Plugin struct {
	spec Spec
	opts Options
	log  *slog.Logger

	ids    atomic.Uint64
	tokens sync.Map // token -> *slog.Logger of the step the call serves

	mu     sync.Mutex
	cur    *proc
	desc   *Description
	closed bool
	all    []*proc // every process started, for Close
}

// New returns a plugin for spec; nothing is started yet.
func New(spec Spec, o *Options) *Plugin {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	return &Plugin{spec: spec, opts: opts, log: opts.Logger.With("plugin", spec.Name)}
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.spec.Name }

// Spec is how the plugin is started.
func (p *Plugin) Spec() Spec { return p.spec }

// ErrClosed is returned by calls on a closed Plugin.
var ErrClosed = errors.New("plugin is closed")

// Describe starts the process if needed and returns its plugin/describe
// answer.
func (p *Plugin) Describe(ctx context.Context) (*Description, error) {
	if _, err := p.process(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.desc, nil
}

// process returns the running process, starting one (with the describe
// handshake) when there is none or the last one ended.
func (p *Plugin) process(ctx context.Context) (*proc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, &Error{Plugin: p.spec.Name, Err: ErrClosed}
	}
	if p.cur != nil && p.cur.usable() {
		return p.cur, nil
	}
	if p.cur != nil {
		go p.cur.kill() // reap what is left of the last one
	}
	p.cur = nil
	pr, err := startProc(p.spec.Name, p.spec.Command, p.opts.Environ, p.spec.Dir, p.log, jsonrpc2.AsyncHandler(handler{p}))
	if err != nil {
		return nil, &Error{Plugin: p.spec.Name, Method: MethodDescribe, Err: err}
	}
	p.all = append(p.all, pr)
	sctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	var d Description
	settings := p.spec.Settings
	if settings == nil {
		settings = map[string]any{}
	}
	err = p.callOn(sctx, pr, MethodDescribe, DescribeParams{ProtocolVersion: ProtocolVersion, Name: p.spec.Name, Settings: settings}, &d)
	if err == nil {
		err = d.check()
	}
	if err != nil {
		pr.kill()
		var pe *Error
		if !errors.As(err, &pe) {
			err = &Error{Plugin: p.spec.Name, Method: MethodDescribe, Err: err}
		}
		return nil, err
	}
	pr.deltas = d.ContextDeltas
	p.cur, p.desc = pr, &d
	return pr, nil
}

// check refuses a description the host cannot use.
func (d *Description) check() error {
	major, _, _ := strings.Cut(d.ProtocolVersion, ".")
	if major != ProtocolVersion {
		return fmt.Errorf("speaks protocol version %q; this agent-env speaks %q", d.ProtocolVersion, ProtocolVersion)
	}
	seen := map[string]bool{}
	for _, s := range d.Steps {
		if !stepTypeName(s.Type) {
			return fmt.Errorf("step type %q: a name is lower case letters, digits and _ and starts with a letter", s.Type)
		}
		if seen["step:"+s.Type] {
			return fmt.Errorf("step type %q is listed twice", s.Type)
		}
		seen["step:"+s.Type] = true
		if s.Context != "" && s.Context != ContextFull && s.Context != ContextNone {
			return fmt.Errorf("step type %q: context must be %q or %q, got %q", s.Type, ContextFull, ContextNone, s.Context)
		}
		if len(s.Schema) > 0 {
			if _, err := compileSchema(s.Schema); err != nil {
				return fmt.Errorf("step type %q: schema: %w", s.Type, err)
			}
		}
	}
	for _, sp := range d.SandboxProviders {
		if !pluginName.MatchString(sp.Name) {
			return fmt.Errorf("sandbox provider %q: a name is lower case letters, digits and '-' and starts with a letter", sp.Name)
		}
		if seen["sandbox:"+sp.Name] {
			return fmt.Errorf("sandbox provider %q is listed twice", sp.Name)
		}
		seen["sandbox:"+sp.Name] = true
	}
	return nil
}

func stepTypeName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Call sends one request to the plugin and decodes its result, bounded by
// the plugin's timeout. When ctx ends or the timeout passes first, the
// plugin gets $/cancelRequest; a plugin that does not answer within the
// cancel grace is taken out of service (its process is killed once its
// other calls are done, and the next call starts a fresh one).
func (p *Plugin) Call(ctx context.Context, method string, params, result any) error {
	pr, err := p.process(ctx)
	if err != nil {
		return err
	}
	return p.callOn(ctx, pr, method, params, result)
}

func (p *Plugin) callOn(ctx context.Context, pr *proc, method string, params, result any) error {
	return p.callWith(ctx, pr, method, func(*proc) (any, func(bool), error) { return params, nil, nil }, result)
}

// paramsFunc makes a request's params for the process that will get it,
// right before the request is written. sent, when not nil, is called once
// the request was written (true) or could not be (false): a step/run
// keeps the process's context mirror locked from the delta until then,
// so that deltas reach the plugin in order.
type paramsFunc func(pr *proc) (params any, sent func(ok bool), err error)

func (p *Plugin) callWith(ctx context.Context, pr *proc, method string, build paramsFunc, result any) error {
	if err := ctx.Err(); err != nil {
		return &Error{Plugin: p.spec.Name, Method: method, Err: err}
	}
	pr.acquire()
	defer pr.release()
	timeout := p.spec.Timeout
	if method == MethodDescribe {
		timeout = p.opts.StartTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id := jsonrpc2.ID{Num: p.ids.Add(1)}
	params, sent, err := build(pr)
	if err != nil {
		return &Error{Plugin: p.spec.Name, Method: method, Err: err}
	}
	w, err := pr.conn.DispatchCall(cctx, method, params, jsonrpc2.PickID(id))
	if sent != nil {
		sent(err == nil)
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		// The request could not be written: the process is gone or going.
		return &Error{Plugin: p.spec.Name, Method: method, Err: fmt.Errorf("could not send the request: %s", pr.why())}
	}
	if err == nil {
		err = w.Wait(cctx, result)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsonrpc2.ErrClosed):
		return &Error{Plugin: p.spec.Name, Method: method, Err: errors.New(pr.why())}
	case cctx.Err() != nil && errors.Is(err, cctx.Err()):
		// Stopped waiting: tell the plugin, and give it a moment to stop.
		_ = pr.conn.Notify(context.Background(), MethodCancel, CancelParams{ID: id})
		gctx, gcancel := context.WithTimeout(context.Background(), p.opts.CancelGrace)
		werr := w.Wait(gctx, nil)
		gcancel()
		if errors.Is(werr, context.DeadlineExceeded) {
			pr.retire()
		}
		if ctx.Err() != nil { // the caller cancelled (Ctrl-C, the run ended)
			return &Error{Plugin: p.spec.Name, Method: method, Err: context.Cause(ctx)}
		}
		return &Error{Plugin: p.spec.Name, Method: method,
			Err: fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded)}
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return &Error{Plugin: p.spec.Name, Method: method, Err: &RemoteError{Code: je.Code, Message: je.Message}}
	}
	// The result did not decode.
	return &Error{Plugin: p.spec.Name, Method: method, Err: fmt.Errorf("answered with an invalid result: %v", err)}
}

// Close ends every process of the plugin: stdin is closed, and the
// process group is killed after a short grace. It waits for them to end.
func (p *Plugin) Close() error {
	p.mu.Lock()
	p.closed = true
	all := p.all
	p.cur = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pr := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.stop(time.Second)
		}()
	}
	wg.Wait()
	return nil
}

// pids lists the process ids the plugin started (for leak tests).
func (p *Plugin) pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, pr := range p.all {
		out = append(out, pr.cmd.Process.Pid)
	}
	return out
}

// handler serves what the plugin sends: $/log and $/progress
// notifications. Requests from the plugin are answered "method not found".
type handler struct{ p *Plugin }

func (h handler) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
	switch r.Method {
	case NotifyLog:
		var lp LogParams
		if r.Params != nil && json.Unmarshal(*r.Params, &lp) == nil {
			log := h.p.logFor(lp.Token)
			args := make([]any, 0, 2*len(lp.Fields))
			for k, v := range lp.Fields {
				args = append(args, k, v)
			}
			log.Log(ctx, logLevel(lp.Level), lp.Message, args...)
		}
		return
	case NotifyProgress:
		var pp ProgressParams
		if r.Params != nil && json.Unmarshal(*r.Params, &pp) == nil {
			args := []any{}
			if pp.Done != nil {
				args = append(args, "done", *pp.Done)
			}
			if pp.Total != nil {
				args = append(args, "total", *pp.Total)
			}
			msg := pp.Message
			if msg == "" {
				msg = "progress"
			}
			h.p.logFor(pp.Token).Info(msg, args...)
		}
		return
	}
	if !r.Notif {
		_ = c.ReplyWithError(ctx, r.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "the host serves no method " + r.Method})
	}
}

func (p *Plugin) logFor(token string) *slog.Logger {
	if l, ok := p.tokens.Load(token); ok && token != "" {
		return l.(*slog.Logger)
	}
	return p.log
}

func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// running lists the process ids of the plugin's processes (and process
// groups) still alive.
func (p *Plugin) running() []int {
	p.mu.Lock()
	all := append([]*proc(nil), p.all...)
	p.mu.Unlock()
	var out []int
	for _, pr := range all {
		select {
		case <-pr.exited:
			if groupAlive(pr.cmd.Process.Pid) {
				out = append(out, pr.cmd.Process.Pid)
			}
		default:
			out = append(out, pr.cmd.Process.Pid)
		}
	}
	return out
}
