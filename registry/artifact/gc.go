package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentenv/agentenv/registry"
)

// CollectOptions tunes CollectOrphans. A nil pointer means defaults.
type CollectOptions struct {
	// Also are further document stores whose artifacts keep their bytes in
	// the same object store (the @local store beside the configured one):
	// an object any of them points at is never collected.
	Also []registry.DocumentStore
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// CollectResult is what CollectOrphans found.
type CollectResult struct {
	Removed []string // object keys removed (or, with DryRun, to remove)
	Young   int      // upload objects younger than OrphanAge: not judged
}

// CollectOrphans removes the objects of uploads that no artifact document
// points at and that started more than OrphanAge ago: the leftovers of
// puts that crashed between writing bytes and publishing their document.
//
// Why it cannot remove bytes a writer is about to publish: a put never
// publishes an upload older than OrphanAge/2, and the candidates (older
// than OrphanAge) are chosen before the documents are read, so any
// candidate a writer could still publish was published before that read
// and is seen referenced. Objects outside the upload layout (written by
// older builds, images, run outputs) are never touched.
func (s *Store) CollectOrphans(ctx context.Context, o *CollectOptions) (CollectResult, error) {
	var opt CollectOptions
	if o != nil {
		opt = *o
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	var res CollectResult
	objs, err := s.objects.List(ctx, s.keyRoot())
	if err != nil {
		return res, err
	}
	cutoff := now().Add(-s.opt.OrphanAge)
	var candidates []string
	for _, o := range objs {
		started, ok := uploadStart(o.Key)
		switch {
		case !ok:
		case started.Before(cutoff):
			candidates = append(candidates, o.Key)
		default:
			res.Young++
		}
	}
	if len(candidates) == 0 {
		return res, nil
	}
	refs := map[string]bool{}
	for _, docs := range append([]registry.DocumentStore{s.docs}, opt.Also...) {
		if err := s.referenced(ctx, docs, refs); err != nil {
			return res, err
		}
	}
	for _, k := range candidates {
		if refs[k] {
			continue
		}
		if !opt.DryRun {
			if err := s.objects.Delete(ctx, k); err != nil && !errors.Is(err, registry.ErrNotFound) {
				return res, fmt.Errorf("collect orphan %s: %w", k, err)
			}
		}
		res.Removed = append(res.Removed, k)
	}
	return res, nil
}

// referenced adds to refs the key of every object URL that any version of
// any artifact in docs holds, in any field.
func (s *Store) referenced(ctx context.Context, docs registry.DocumentStore, refs map[string]bool) error {
	latest, err := docs.List(ctx, registry.Artifacts, nil)
	if err != nil {
		return fmt.Errorf("collect orphans: list artifacts: %w", err)
	}
	for _, l := range latest {
		vs, err := docs.Versions(ctx, registry.Artifacts, l.ID)
		if err != nil {
			return fmt.Errorf("collect orphans: artifact %s: %w", l.ID, err)
		}
		for _, d := range vs {
			var body any
			if err := json.Unmarshal(d.Data, &body); err != nil {
				return fmt.Errorf("collect orphans: artifact %s: %w", d.Ref(), err)
			}
			s.collectURLs(body, refs)
		}
	}
	return nil
}

func (s *Store) collectURLs(v any, refs map[string]bool) {
	switch v := v.(type) {
	case string:
		if k, err := s.objects.KeyOf(v); err == nil {
			refs[k] = true
		}
	case []any:
		for _, e := range v {
			s.collectURLs(e, refs)
		}
	case map[string]any:
		for _, e := range v {
			s.collectURLs(e, refs)
		}
	}
}
