package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/sqlite"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// storeSet is the stores a command works with.
type storeSet struct {
	docs      registry.DocumentStore // the default document store
	local     registry.DocumentStore // the @local store (runner.md §10.7)
	objects   registry.ObjectStore
	stateRoot string
	closers   []func() error
}

// docsFor routes an id to its document store.
func (s *storeSet) docsFor(id string) registry.DocumentStore {
	if registry.IsLocalID(id) {
		return s.local
	}
	return s.docs
}

func (s *storeSet) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// openDefaultStores opens the local stores under the state root: SQLite
// documents and the filesystem object store.
//
// This is a small adapter until the registry's configured store set
// (registry/stores, [stores] in config.toml) is available to commands; it
// uses one SQLite file for both the default and the @local documents.
func openDefaultStores(ctx context.Context) (*storeSet, error) {
	root, err := registry.StateRoot()
	if err != nil {
		return nil, err
	}
	docs, err := sqlite.Open(ctx, "", nil)
	if err != nil {
		return nil, err
	}
	objs, err := fsobject.New("", nil)
	if err != nil {
		docs.Close()
		return nil, err
	}
	return &storeSet{docs: docs, local: docs, objects: objs, stateRoot: root, closers: []func() error{docs.Close}}, nil
}

// services builds the runner services of a command. Expired local
// sandboxes left by earlier runs are reaped first (best effort).
func (d *deps) services(ctx context.Context, st *storeSet, docs registry.DocumentStore) *runner.Services {
	lp := local.New(d.sandboxRoot(), &local.Options{Logger: d.logger()})
	if reaped, err := lp.Reap(ctx, time.Now()); len(reaped) > 0 || err != nil {
		d.logger().Info("reaped expired local sandboxes", "sandbox_ids", reaped, "error", err)
	}
	return &runner.Services{
		Documents: docs,
		Objects:   st.objects,
		Sandboxes: map[string]runner.SandboxProvider{local.TypeName: lp},
		Logger:    d.logger(),
	}
}

func lockDir(st *storeSet) string { return filepath.Join(st.stateRoot, "locks") }
