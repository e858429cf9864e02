package envdeploy

import (
	"context"
	"fmt"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// FileGroup is implemented by groups whose workloads share a work folder
// on the host (the process backend): CopyOut reads from it with the rules
// of sandbox.Sandbox.CopyOut (links followed only inside root).
type FileGroup interface {
	CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error
}

// CopyOut copies files out of group groupID of backend typ, as
// sandbox.Sandbox.CopyOut does. A backend whose groups have no such
// folder returns an error wrapping sandbox.ErrNotSupported.
func (d *Deployer) CopyOut(ctx context.Context, typ, groupID, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	b, ok := d.Backends[typ]
	if !ok {
		return fmt.Errorf("instance runs on sandbox %q, which is not configured", typ)
	}
	g, err := b.OpenGroup(ctx, groupID)
	if err != nil {
		return fmt.Errorf("%s sandbox %s: %w", typ, groupID, err)
	}
	fg, ok := g.(FileGroup)
	if !ok {
		return fmt.Errorf("%s sandbox %s: copy out: %w", typ, groupID, sandbox.ErrNotSupported)
	}
	return fg.CopyOut(ctx, root, o, fn)
}
