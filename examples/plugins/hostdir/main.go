// Command agentenv-plugin-hostdir is a process plugin that adds a sandbox
// provider, "hostdir": each sandbox is a host work folder, run by the
// built-in local provider inside the plugin. It shows the sandbox half of
// the process plugin protocol (docs/plugins.md) from Go; any language that
// reads and writes lines of JSON can do the same.
//
// Install it on PATH and agent-env finds it with no configuration:
//
//	go build -o ~/bin/agentenv-plugin-hostdir ./examples/plugins/hostdir
//	agent-env run my-bundle --sandbox hostdir
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/agentenv/agentenv/plugin/process"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

// server holds the live sandboxes and the cancel functions of running
// requests (for $/cancelRequest).
type server struct {
	prov    *local.Provider
	mu      sync.Mutex
	boxes   map[string]*local.Sandbox
	running map[jsonrpc2.ID]context.CancelFunc
}

func main() {
	root, err := os.MkdirTemp("", "agentenv-hostdir-")
	if err != nil {
		os.Exit(1)
	}
	s := &server{prov: local.New(root, nil), boxes: map[string]*local.Sandbox{}, running: map[jsonrpc2.ID]context.CancelFunc{}}
	conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(stdio{}),
		jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(s.handle)))
	<-conn.DisconnectNotify() // agent-env closed our stdin: the run is over
	s.mu.Lock()
	for _, sb := range s.boxes {
		_ = sb.Terminate(context.Background())
	}
	s.mu.Unlock()
	_ = os.RemoveAll(root)
}

func (s *server) handle(ctx context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
	if r.Method == process.MethodCancel {
		var p process.CancelParams
		if r.Params != nil && json.Unmarshal(*r.Params, &p) == nil {
			s.mu.Lock()
			if cancel := s.running[p.ID]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
		}
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.running[r.ID] = cancel
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.running, r.ID); s.mu.Unlock() }()
	res, err := s.serve(ctx, r)
	return res, wireError(err)
}

// wireError gives an error the protocol's code for its kind.
func wireError(err error) error {
	if err == nil {
		return nil
	}
	code := int64(jsonrpc2.CodeInternalError)
	for _, c := range []struct {
		target error
		code   int64
	}{{context.Canceled, process.CodeCancelled}, {sandbox.ErrTerminated, process.CodeTerminated},
		{sandbox.ErrNotSupported, process.CodeNotSupported}, {sandbox.ErrInvalidSpec, process.CodeInvalidSpec},
		{fs.ErrNotExist, process.CodeNotFound}, {sandbox.ErrNotFound, process.CodeNotFound}} {
		if errors.Is(err, c.target) {
			code = c.code
			break
		}
	}
	return &jsonrpc2.Error{Code: code, Message: err.Error()}
}

func (s *server) box(id string) (*local.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb, ok := s.boxes[id]; ok {
		return sb, nil
	}
	return nil, sandbox.ErrNotFound
}
