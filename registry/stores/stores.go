// Package stores opens the set of stores a configuration selects
// ([stores] in config.toml) and routes @local ids to
// the local document store.
//
// Each implementation is a factory registered under a namespaced name
// ("store.document.postgres") in a Registry value; Builtin() has the
// built-in ones, and Options.Registry lets tests and (later) plugins add
// their own.
//
// Why a separate @local store: bundle runs write "@local/..." documents
// that must never reach a shared remote store. When the configured document
// store is the default local SQLite file, both roles are the same store;
// otherwise @local documents go to the local SQLite file.
//
//	cfg, err := config.Load(nil)
//	set, err := stores.Open(ctx, cfg, nil)
//	defer set.Close()
//	docs := set.DocumentsFor(taskID)   // @local ids → set.Local
//	arts := set.ArtifactsFor(artifactID)
package stores

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/sqlite"
)

// Options tunes Open. A nil *Options means defaults.
type Options struct {
	// StateRoot replaces registry.StateRoot() (tests).
	StateRoot string
	// Registry replaces Builtin().
	Registry *Registry
}

// Set is the opened stores.
type Set struct {
	Documents registry.DocumentStore // the configured document store
	Local     registry.DocumentStore // the @local store (may be Documents itself)
	Objects   registry.ObjectStore
	Images    registry.ImageStore
	Secrets   registry.SecretStore
	StateRoot string

	storeID                   string
	artifacts, localArtifacts *artifact.Store
	closers                   []func() error
}

// StoreID is the id of this set's store: registry.StoreID of the state
// root (16 lowercase hex characters from <state root>/store-id, created
// atomically on the first Open of the root and never changed). Tags of
// the images the set builds end in it, and those images carry the label
// registry.StoreLabel=<id>; anything else that several stores share on one
// machine (container labels) should carry it too.
func (s *Set) StoreID() string { return s.storeID }

// DocumentsFor returns the document store that owns id.
func (s *Set) DocumentsFor(id string) registry.DocumentStore {
	if registry.IsLocalID(id) {
		return s.Local
	}
	return s.Documents
}

// ArtifactsFor returns the artifact store that owns id.
func (s *Set) ArtifactsFor(id string) *artifact.Store {
	if registry.IsLocalID(id) {
		return s.localArtifacts
	}
	return s.artifacts
}

// Resolve resolves an env:/secret: reference with the set's secret store.
func (s *Set) Resolve(ctx context.Context, v string) (string, error) {
	return registry.Resolve(ctx, v, s.Secrets, nil)
}

// CollectOrphanObjects removes the artifact objects of crashed puts that
// no document of this set (the configured store and the @local one)
// points at, once older than artifact.DefaultOrphanAge; see
// artifact.Store.CollectOrphans. Another configuration sharing this object
// store with other document stores must not run it.
func (s *Set) CollectOrphanObjects(ctx context.Context, dryRun bool) (artifact.CollectResult, error) {
	o := &artifact.CollectOptions{DryRun: dryRun}
	if s.Local != s.Documents {
		o.Also = []registry.DocumentStore{s.Local}
	}
	return s.artifacts.CollectOrphans(ctx, o)
}

// LocksDir is <state root>/locks (per-id file locks of bundle runs).
func (s *Set) LocksDir() string { return filepath.Join(s.StateRoot, "locks") }

// Close closes every store that needs it, in reverse order of opening.
func (s *Set) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Open opens the stores of cfg (nil = built-in defaults). On error nothing
// stays open.
func Open(ctx context.Context, cfg *config.Config, o *Options) (_ *Set, err error) {
	if cfg == nil {
		cfg = config.Defaults()
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Registry == nil {
		opt.Registry = Builtin()
	}
	root := opt.StateRoot
	if root == "" {
		if root, err = registry.StateRoot(); err != nil {
			return nil, err
		}
	}
	s := &Set{StateRoot: root}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.storeID, err = registry.StoreID(root); err != nil {
		return nil, err
	}
	env := func(kind string, spec config.StoreSpec) *Env {
		return &Env{Kind: kind, Impl: spec.Impl, Spec: spec, Config: cfg, StateRoot: root, StoreID: s.storeID,
			Secrets: s.Secrets, Objects: s.Objects, OnClose: func(f func() error) { s.closers = append(s.closers, f) }}
	}
	wrap := func(kind, impl string, err error) error {
		return fmt.Errorf("stores.%s (%s): %w", kind, impl, err)
	}

	// Secrets first: the other stores' settings may reference them.
	f, err := opt.Registry.lookup("secret", cfg.Stores.Secret.Impl)
	if err != nil {
		return nil, err
	}
	if s.Secrets, err = f.(SecretFactory)(ctx, env("secret", cfg.Stores.Secret)); err != nil {
		return nil, wrap("secret", cfg.Stores.Secret.Impl, err)
	}

	spec := cfg.Stores.Document
	if f, err = opt.Registry.lookup("document", spec.Impl); err != nil {
		return nil, err
	}
	denv := env("document", spec)
	if s.Documents, err = f.(DocumentFactory)(ctx, denv); err != nil {
		return nil, wrap("document", spec.Impl, err)
	}
	// The @local store: the configured one when it is that very SQLite file.
	localPath, err := localDocPath(ctx, denv)
	if err != nil {
		return nil, err
	}
	if st, ok := s.Documents.(*sqlite.Store); ok && sameFile(st.Path(), localPath) {
		s.Local = s.Documents
	} else if s.Local, err = openSQLiteAt(ctx, denv, localPath); err != nil {
		return nil, fmt.Errorf("@local document store: %w", err)
	}

	if f, err = opt.Registry.lookup("object", cfg.Stores.Object.Impl); err != nil {
		return nil, err
	}
	if s.Objects, err = f.(ObjectFactory)(ctx, env("object", cfg.Stores.Object)); err != nil {
		return nil, wrap("object", cfg.Stores.Object.Impl, err)
	}

	if f, err = opt.Registry.lookup("image", cfg.Stores.Image.Impl); err != nil {
		return nil, err
	}
	if s.Images, err = f.(ImageFactory)(ctx, env("image", cfg.Stores.Image)); err != nil {
		return nil, wrap("image", cfg.Stores.Image.Impl, err)
	}

	aopt := &artifact.Options{KeyPrefix: cfg.Environment.FixturePrefix, TypeAliases: cfg.Artifacts.TypeAliases}
	s.artifacts = artifact.New(s.Documents, s.Objects, aopt)
	s.localArtifacts = s.artifacts
	if s.Local != s.Documents {
		s.localArtifacts = artifact.New(s.Local, s.Objects, aopt)
	}
	return s, nil
}

func sameFile(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
