package agentsdk

import (
	"container/list"
	"context"
	"sync"
)

// lru is a small bounded map, least recently used evicted first.
type lru[V any] struct {
	mu  sync.Mutex
	max int
	// onEvict, when set, is called (outside the lock) with evicted values.
	onEvict func(V)
	ll      *list.List
	m       map[string]*list.Element
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, ll: list.New(), m: map[string]*list.Element{}}
}

func (c *lru[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*lruEntry[V]).val, true
	}
	var zero V
	return zero, false
}

// take removes and returns key's value.
func (c *lru[V]) take(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.ll.Remove(e)
		delete(c.m, key)
		return e.Value.(*lruEntry[V]).val, true
	}
	var zero V
	return zero, false
}

func (c *lru[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		e.Value.(*lruEntry[V]).val = v
		c.ll.MoveToFront(e)
		return
	}
	c.m[key] = c.ll.PushFront(&lruEntry[V]{key, v})
	var evicted []V
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*lruEntry[V]).key)
		evicted = append(evicted, last.Value.(*lruEntry[V]).val)
	}
	if c.onEvict != nil && len(evicted) > 0 {
		c.mu.Unlock()
		for _, v := range evicted {
			c.onEvict(v)
		}
		c.mu.Lock()
	}
}

// drain removes every entry and returns the values.
func (c *lru[V]) drain() []V {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []V
	for e := c.ll.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*lruEntry[V]).val)
	}
	c.ll.Init()
	c.m = map[string]*list.Element{}
	return out
}

// contextLocks serialises the tasks of one context, in arrival order.
// A lock exists only while some task holds or waits for it, so idle
// contexts cost nothing.
type contextLocks struct {
	mu sync.Mutex
	m  map[string]*ctxLock
}

type ctxLock struct {
	ch    chan struct{} // buffered(1): holding the token = holding the lock
	users int
}

func (l *contextLocks) lock(ctx context.Context, id string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*ctxLock{}
	}
	cl := l.m[id]
	if cl == nil {
		cl = &ctxLock{ch: make(chan struct{}, 1)}
		l.m[id] = cl
	}
	cl.users++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		cl.users--
		if cl.users == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
	select {
	case cl.ch <- struct{}{}:
		return func() { <-cl.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
