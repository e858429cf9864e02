package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentenv/agentenv/internal/config"
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
	// defaultSandbox is [sandbox] default.
	defaultSandbox string
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

// openDefaultStores opens the local stores of [stores]: SQLite documents
// (config key path, default <state root>/document_store/documents.db; the
// @local documents in local_path, default the same file) and the
// filesystem object store (root, default <state root>/object_store).
//
// It is a small adapter until the registry's store-set opener is available
// to commands; other implementations (postgres) are refused by name.
func openDefaultStores(ctx context.Context, cfg *config.Config) (*storeSet, error) {
	root, err := registry.StateRoot()
	if err != nil {
		return nil, err
	}
	ds, obj := cfg.Stores.Document, cfg.Stores.Object
	if ds.Impl != "local" && ds.Impl != "sqlite" {
		return nil, fmt.Errorf("[stores] document = %q: this build of the CLI opens only the local SQLite store", ds.Impl)
	}
	if obj.Impl != "local" && obj.Impl != "filesystem" {
		return nil, fmt.Errorf("[stores] object = %q: this build of the CLI opens only the local object store", obj.Impl)
	}
	st := &storeSet{stateRoot: root}
	docs, err := sqlite.Open(ctx, ds.StoreConfigString("path"), nil)
	if err != nil {
		return nil, err
	}
	st.docs, st.local = docs, docs
	st.closers = append(st.closers, docs.Close)
	if lp := ds.StoreConfigString("local_path"); lp != "" {
		local, err := sqlite.Open(ctx, lp, nil)
		if err != nil {
			st.Close()
			return nil, err
		}
		st.local = local
		st.closers = append(st.closers, local.Close)
	}
	objs, err := fsobject.New(obj.StoreConfigString("root"), nil)
	if err != nil {
		st.Close()
		return nil, err
	}
	st.objects = objs
	return st, nil
}

// services builds the runner services of a command. Expired local
// sandboxes left by earlier runs are reaped first (best effort).
func (d *deps) services(ctx context.Context, st *storeSet, docs registry.DocumentStore) *runner.Services {
	lp := local.New(d.sandboxRoot(), &local.Options{Logger: d.logger()})
	if reaped, err := lp.Reap(ctx, time.Now()); len(reaped) > 0 || err != nil {
		d.logger().Info("reaped expired local sandboxes", "sandbox_ids", reaped, "error", err)
	}
	return &runner.Services{
		Documents:      docs,
		Objects:        st.objects,
		Sandboxes:      map[string]runner.SandboxProvider{local.TypeName: lp},
		DefaultSandbox: st.defaultSandbox,
		Logger:         d.logger(),
	}
}

func lockDir(st *storeSet) string { return filepath.Join(st.stateRoot, "locks") }
