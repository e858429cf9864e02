package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// CopyOut implements sandbox.Sandbox. The archive API hands the folder
// over as one tar stream in which a symlink is a header with no content
// (read as a file it would be empty) and a hard link names an earlier
// entry. The stream is read whole into a tarTree and sandbox.WalkTree
// resolves the links in that snapshot: nothing is read from the container
// after the decision, so there is no window for a swapped link.
func (s *Sandbox) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := s.alive(ctx); err != nil {
		return err
	}
	return s.p.copyOut(ctx, s.container, root, o, fn)
}

// copyOut is CopyOut from container (an id or name).
func (p *Provider) copyOut(ctx context.Context, container, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	root = abs(root)
	st, err := p.cli.ContainerStatPath(ctx, container, client.ContainerStatPathOptions{Path: root})
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy out %s: %w", root, fs.ErrNotExist)
	}
	if err != nil {
		return p.wrap("copy out "+root, err)
	}
	// A folder that is itself a link is copied from where it leads, inside
	// the container: the engine resolves it within the container's root.
	dirs := []string{root}
	src := root
	if st.Stat.Mode&fs.ModeSymlink != 0 && st.Stat.LinkTarget != "" {
		src = path.Clean(st.Stat.LinkTarget)
		dirs = append(dirs, src)
	}
	res, err := p.cli.CopyFromContainer(ctx, container, client.CopyFromContainerOptions{SourcePath: src})
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: copy out %s: %w", root, fs.ErrNotExist)
	}
	if err != nil {
		return p.wrap("copy out "+root, err)
	}
	defer res.Content.Close()
	if !res.Stat.Mode.IsDir() {
		return fmt.Errorf("docker: copy out %s: not a folder", root)
	}
	// Without a filter every file of the archive is handed over, so an
	// archive past MaxBytes fails the copy as it is read, before it is
	// held whole.
	var limit int64
	if o != nil && len(o.Paths) == 0 && o.Skip == nil {
		limit = o.MaxBytes
	}
	t, err := sandbox.ReadTarTree(res.Content, dirs, limit)
	var big *sandbox.TarTooLargeError
	if errors.As(err, &big) {
		return sandbox.TooLarge(root, big.Name, limit)
	}
	if err != nil {
		return fmt.Errorf("docker: copy out %s: %w", root, err)
	}
	return sandbox.WalkTree(ctx, t, root, o, fn)
}

var _ envdeploy.FileGroup = (*Group)(nil)

// CopyOut implements envdeploy.FileGroup: the files of an agent or env
// group are in the container of its workload, as Sandbox.CopyOut reads
// them. The gateway holds no files of the env, so an env group's files
// are those of its server; with several servers, root must exist in
// exactly one of them (which one is named in the error otherwise).
func (g *Group) CopyOut(ctx context.Context, root string, o *sandbox.CopyOutOptions, fn func(sandbox.File) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cs, err := g.p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: labelFilter(envdeploy.LabelSandbox, g.id)})
	if err != nil {
		return g.p.wrap("list containers", err)
	}
	var names, ids []string
	for _, c := range cs.Items {
		if c.Labels[envdeploy.LabelRole] == "gateway" {
			continue
		}
		names, ids = append(names, c.Labels[labelWorkload]), append(ids, c.ID)
	}
	if len(ids) == 0 {
		return fmt.Errorf("docker group %s: no workload to copy out of: %w", g.id, envdeploy.ErrNotFound)
	}
	if len(ids) == 1 {
		return g.p.copyOut(ctx, ids[0], root, o, fn)
	}
	var have []int
	for i, id := range ids {
		_, err := g.p.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: abs(root)})
		switch {
		case err == nil:
			have = append(have, i)
		case !cerrdefs.IsNotFound(err):
			return g.p.wrap("copy out "+abs(root), err)
		}
	}
	switch len(have) {
	case 0:
		return fmt.Errorf("docker: copy out %s: in none of %s: %w", abs(root), strings.Join(names, ", "), fs.ErrNotExist)
	case 1:
		return g.p.copyOut(ctx, ids[have[0]], root, o, fn)
	}
	var both []string
	for _, i := range have {
		both = append(both, names[i])
	}
	slices.Sort(both)
	return fmt.Errorf("docker: copy out %s: the folder exists in several workloads of group %s (%s); collect from a one-server env", abs(root), g.id, strings.Join(both, ", "))
}
