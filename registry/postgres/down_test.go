package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/postgres"
)

// proxy forwards TCP to target until closed; closing drops every
// connection, as a server going down would.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// The server goes away while the store is open: calls fail promptly with
// ErrUnavailable naming the server; nothing hangs.
func TestServerGoesDown(t *testing.T) {
	d := dsn(t)
	kv := map[string]string{}
	for _, f := range strings.Fields(d) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	if kv["host"] == "" || kv["port"] == "" {
		t.Skip("the test DSN is not in key=value form with host and port")
	}
	p := startProxy(t, net.JoinHostPort(kv["host"], kv["port"]))
	_, port, _ := net.SplitHostPort(p.ln.Addr().String())
	proxied := strings.NewReplacer("port="+kv["port"], "port="+port).Replace(d) + " connect_timeout=5"
	schema := "agentenv_down_" + registry.RandomSuffix(8)
	t.Cleanup(func() { dropSchema(t, d, schema) })
	s, err := postgres.Open(context.Background(), proxied, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := "down-" + registry.RandomSuffix(8)
	if _, err := s.Put(ctx, registry.Tasks, id, json.RawMessage(`{"type":"task"}`), nil); err != nil {
		t.Fatal(err)
	}
	p.stop()
	_, err = s.Put(ctx, registry.Tasks, id, json.RawMessage(`{"type":"task"}`), nil)
	if !errors.Is(err, registry.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:"+port+"/") {
		t.Fatalf("Put with the server down: %v", err)
	}
	if _, err := s.Get(ctx, registry.Tasks, registry.Ref{ID: id}); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("Get with the server down: %v", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("Ping with the server down: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("calls hung until the deadline")
	}
}
