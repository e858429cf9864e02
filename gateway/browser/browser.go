package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/agentenv/agentenv/gateway"
	"github.com/agentenv/agentenv/registry"
)

// Options tune a Source. A nil *Options takes every default.
type Options struct {
	// Objects stores screenshots; nil records them inline in the trajectory.
	Objects registry.ObjectStore
	// KeyPrefix is the object-key folder of this source's screenshots;
	// "screenshots/<16 random hex>/" when empty, so two gateways sharing a
	// store never collide (objects are write-once).
	KeyPrefix string
	// Width and Height are the viewport in CSS pixels; 1280×800 when zero.
	Width, Height int
	// ConnectTimeout bounds the first connection to the browser (it may
	// still be starting); 60 s when zero.
	ConnectTimeout time.Duration
	// SettleTimeout bounds the wait for a navigation that a click or a key
	// started; 10 s when zero.
	SettleTimeout time.Duration
	// Websites maps website names to their base URLs (the gateway's
	// WEBSITE_URLS), so browser_navigate can open {"website": name} without
	// the agent knowing where the website runs.
	Websites map[string]string
	// Logger receives the source's logs; slog.Default() when nil.
	Logger *slog.Logger
}

// Source is the computer-use tool source: one tab of one browser.
type Source struct {
	cdpURL string
	opts   Options
	log    *slog.Logger

	life context.Context
	stop context.CancelFunc

	mu       sync.Mutex // one caller at a time on the tab
	tab      context.Context
	tabStop  context.CancelFunc
	shots    int
	started  atomic.Int64 // frames that started loading
	stopped  atomic.Int64 // frames that stopped loading
	closeErr error
}

var _ gateway.ToolSource = (*Source)(nil)

// ErrNoBrowser is returned (wrapped) when the browser cannot be reached.
var ErrNoBrowser = errors.New("browser unavailable")

// New returns a source that drives the browser at cdpURL (http://host:port,
// ws://host:port or a full ws:// DevTools URL). It does not connect: the
// first tool call does.
func New(cdpURL string, opts *Options) (*Source, error) {
	u, err := url.Parse(cdpURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") {
		return nil, &gateway.ConfigError{Var: "BROWSER_CDP_URL", Reason: fmt.Sprintf("must be an http(s):// or ws(s):// DevTools URL, got %q", cdpURL)}
	}
	s := &Source{cdpURL: cdpURL}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Width <= 0 || s.opts.Height <= 0 {
		s.opts.Width, s.opts.Height = 1280, 800
	}
	if s.opts.ConnectTimeout <= 0 {
		s.opts.ConnectTimeout = 60 * time.Second
	}
	if s.opts.SettleTimeout <= 0 {
		s.opts.SettleTimeout = 10 * time.Second
	}
	if s.opts.KeyPrefix == "" {
		s.opts.KeyPrefix = "screenshots/" + randomHex(8) + "/"
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.life, s.stop = context.WithCancel(context.Background())
	return s, nil
}

// Name implements gateway.ToolSource.
func (s *Source) Name() string { return "browser" }

// Close closes the tab and the DevTools connection (the browser keeps
// running: it belongs to the env). It is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tabStop != nil {
		s.tabStop()
		s.tabStop, s.tab = nil, nil
	}
	s.stop()
	return s.closeErr
}

// connectLocked opens the tab on first use, retrying until ConnectTimeout.
func (s *Source) connectLocked(ctx context.Context) (context.Context, error) {
	if s.tab != nil {
		if s.tab.Err() == nil {
			return s.tab, nil
		}
		s.tabStop() // the browser went away: reconnect
		s.tab, s.tabStop = nil, nil
	}
	if s.life.Err() != nil {
		return nil, fmt.Errorf("%w: the gateway is closing", ErrNoBrowser)
	}
	deadline := time.Now().Add(s.opts.ConnectTimeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		tab, stop, err := s.open()
		if err == nil {
			s.tab, s.tabStop = tab, stop
			return tab, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w at %s after %s: %v", ErrNoBrowser, s.cdpURL, s.opts.ConnectTimeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", ErrNoBrowser, ctx.Err())
		case <-tick.C:
		}
	}
}

// open attaches a new tab with the configured viewport.
func (s *Source) open() (context.Context, context.CancelFunc, error) {
	actx, cancelAlloc := remote.NewAllocator(s.life, s.cdpURL)
	tab, cancelTab := chromedp.NewContext(actx)
	stop := func() { cancelTab(); cancelAlloc() }
	// The first Run attaches the tab; it must not carry a timeout (it
	// would end the tab), so the bound is a watchdog instead.
	done := make(chan error, 1)
	go func() {
		done <- chromedp.Do(tab, chromedp.EmulateViewport(int64(s.opts.Width), int64(s.opts.Height)))
	}()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			stop()
			return nil, nil, err
		}
	case <-t.C:
		stop()
		return nil, nil, errors.New("attaching a tab timed out")
	}
	if err := chromedp.Listen(tab, func(ev any) {
		switch ev.(type) {
		case *page.EventFrameStartedLoading:
			s.started.Add(1)
		case *page.EventFrameStoppedLoading:
			s.stopped.Add(1)
		}
	}); err != nil {
		stop()
		return nil, nil, err
	}
	return tab, stop, nil
}

// do runs f on the tab under the lock, bounded by ctx.
func (s *Source) do(ctx context.Context, f func(tab context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tab, err := s.connectLocked(ctx)
	if err != nil {
		return err
	}
	// Derive from the tab (it carries the target), and end with ctx.
	cctx, cancel := context.WithCancel(tab)
	defer cancel()
	stopAfter := context.AfterFunc(ctx, cancel)
	defer stopAfter()
	return f(cctx)
}

// settle waits for a navigation an input started: up to 250 ms for one
// to start, then until the frames that started have stopped (at most
// SettleTimeout). A click that navigates nowhere costs the short wait.
func (s *Source) settle(ctx context.Context, mark loadMark) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	startBy := time.Now().Add(250 * time.Millisecond)
	endBy := time.Now().Add(s.opts.SettleTimeout)
	for {
		st := s.started.Load() - mark.started
		switch {
		case st == 0 && time.Now().After(startBy):
			return
		case st > 0 && s.stopped.Load()-mark.stopped >= st:
			return
		case time.Now().After(endBy):
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// loadMark is the load counters before an input.
type loadMark struct{ started, stopped int64 }

func (s *Source) mark() loadMark { return loadMark{s.started.Load(), s.stopped.Load()} }
