package explorer

import (
	"context"
	"io"
	"time"
)

// A trajectory is indexed as soon as a run page (or its live refresh)
// lists it, in the background (and the merged timeline the page links is
// built), so that opening it reads only its first
// page instead of indexing the whole file inside that request. One index
// runs at a time; Close stops them.

// prefetchTimeout bounds one background index.
const prefetchTimeout = 2 * time.Minute

type prefetcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	// busy holds the keys being indexed or queued.
	busy map[string]bool
}

// prefetchTrajectories indexes the trajectories of d not yet indexed.
func (s *Server) prefetchTrajectories(d *RunDetail) {
	if s.st.Objects == nil {
		return
	}
	for _, p := range d.Prompts {
		if p.TrajectoryKey != "" {
			s.prefetch(p.TrajectoryKey, func(ctx context.Context) error { return s.indexObject(ctx, p.TrajectoryKey) })
		}
		if p.TrajectoryKey != "" && p.GatewayKey != "" {
			// The run page links the merged view too.
			s.prefetch(p.TrajectoryKey+"\x00"+p.GatewayKey, func(ctx context.Context) error {
				_, _, err := s.timeline(ctx, p.TrajectoryKey, p.GatewayKey)
				return err
			})
		}
	}
	for _, e := range d.EnvTrajectories {
		if e.Key != "" {
			s.prefetch(e.Key, func(ctx context.Context) error { return s.indexObject(ctx, e.Key) })
		}
	}
}

// prefetch runs job in the background unless a job named key is queued
// or running.
func (s *Server) prefetch(key string, job func(context.Context) error) {
	s.pfMu.Lock()
	if s.pf.ctx.Err() != nil || s.pf.busy[key] {
		s.pfMu.Unlock()
		return
	}
	s.pf.busy[key] = true
	s.pfMu.Unlock()
	s.pfWG.Go(func() {
		defer func() {
			s.pfMu.Lock()
			delete(s.pf.busy, key)
			s.pfMu.Unlock()
		}()
		select {
		case s.pf.sem <- struct{}{}:
		case <-s.pf.ctx.Done():
			return
		}
		defer func() { <-s.pf.sem }()
		ctx, cancel := context.WithTimeout(s.pf.ctx, prefetchTimeout)
		defer cancel()
		if err := job(ctx); err != nil {
			// The request that opens it reports the problem on its panel.
			s.opt.Logger.Debug("trajectory not indexed in the background", "key", key, "error", err)
		}
	})
}

// indexObject indexes key into the cache unless an index of its current
// version is there.
func (s *Server) indexObject(ctx context.Context, key string) error {
	info, err := s.st.Objects.Stat(ctx, key)
	if err != nil {
		return err
	}
	if s.trajs.get(key, info) != nil {
		return nil
	}
	rc, info, err := s.st.Objects.Open(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	idx, err := indexTrajectory(key, data)
	if err != nil {
		return err
	}
	s.trajs.put(key, info, idx)
	return nil
}

// Close stops the background indexing and waits for it.
func (s *Server) Close() error {
	s.pf.cancel()
	s.pfWG.Wait()
	return nil
}
