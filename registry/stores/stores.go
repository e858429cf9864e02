// Package stores opens the set of stores a configuration selects
// ([stores] in config.toml, runner.md §10 and §12) and routes @local ids to
// the local document store (§10.7).
//
// Why a separate @local store: bundle runs write "@local/..." documents
// that must never reach a shared remote store. When the configured document
// store is the default local SQLite file, both roles are the same store;
// when it is PostgreSQL, @local documents still go to the local SQLite file.
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
	"strconv"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/registry/envsecret"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/postgres"
	"github.com/agentenv/agentenv/registry/sqlite"
)

// Options tunes Open. A nil *Options means defaults.
type Options struct {
	// StateRoot replaces registry.StateRoot() (tests).
	StateRoot string
}

// Set is the opened stores.
type Set struct {
	Documents registry.DocumentStore // the configured document store
	Local     registry.DocumentStore // the @local store (may be Documents itself)
	Objects   registry.ObjectStore
	Images    registry.ImageStore
	Secrets   registry.SecretStore
	StateRoot string

	artifacts, localArtifacts *artifact.Store
	closers                   []func() error
}

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

// LocksDir is <state root>/locks (per-id file locks of bundle runs).
func (s *Set) LocksDir() string { return filepath.Join(s.StateRoot, "locks") }

// Close closes every store that needs it.
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

	// Secrets first: the other stores' settings may reference them.
	if s.Secrets, err = openSecrets(ctx, cfg.Stores.Secret); err != nil {
		return nil, err
	}
	str := func(spec config.StoreSpec, kind, key string) (string, error) {
		v, err := registry.Resolve(ctx, spec.StoreConfigString(key), s.Secrets, nil)
		if err != nil {
			return "", fmt.Errorf("stores.%s.config.%s: %w", kind, key, err)
		}
		return v, nil
	}

	localPath, err := str(cfg.Stores.Document, "document", "local_path")
	if err != nil {
		return nil, err
	}
	if localPath == "" {
		localPath = filepath.Join(root, "document_store", "documents.db")
	}
	openSQLite := func(path string) (registry.DocumentStore, error) {
		if err := registry.EnsureStateDir(root, filepath.Dir(path)); err != nil {
			return nil, err
		}
		st, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, st.Close)
		return st, nil
	}
	switch impl := cfg.Stores.Document.Impl; impl {
	case "local", "sqlite":
		path, err := str(cfg.Stores.Document, "document", "path")
		if err != nil {
			return nil, err
		}
		if path == "" {
			path = localPath
		}
		if s.Documents, err = openSQLite(path); err != nil {
			return nil, fmt.Errorf("stores.document (%s): %w", impl, err)
		}
		s.Local = s.Documents
		if abs(path) != abs(localPath) {
			if s.Local, err = openSQLite(localPath); err != nil {
				return nil, fmt.Errorf("@local document store: %w", err)
			}
		}
	case "postgres":
		dsn, err := str(cfg.Stores.Document, "document", "dsn")
		if err != nil {
			return nil, err
		}
		if dsn == "" {
			return nil, fmt.Errorf("stores.document (postgres): %w", &registry.InvalidError{Field: "stores.document.config.dsn", Reason: "empty"})
		}
		schema, err := str(cfg.Stores.Document, "document", "schema")
		if err != nil {
			return nil, err
		}
		pg, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema})
		if err != nil {
			return nil, fmt.Errorf("stores.document (postgres): %w", err)
		}
		s.closers = append(s.closers, pg.Close)
		s.Documents = pg
		if s.Local, err = openSQLite(localPath); err != nil {
			return nil, fmt.Errorf("@local document store: %w", err)
		}
	default:
		return nil, fmt.Errorf("stores.document: unknown implementation %q", impl)
	}

	switch impl := cfg.Stores.Object.Impl; impl {
	case "local", "filesystem":
		objRoot, err := str(cfg.Stores.Object, "object", "root")
		if err != nil {
			return nil, err
		}
		if objRoot == "" {
			objRoot = filepath.Join(root, "object_store")
			if err := registry.EnsureStateDir(root, objRoot); err != nil {
				return nil, err
			}
		}
		if s.Objects, err = fsobject.New(objRoot, nil); err != nil {
			return nil, fmt.Errorf("stores.object (%s): %w", impl, err)
		}
	default:
		return nil, fmt.Errorf("stores.object: unknown implementation %q", impl)
	}

	switch impl := cfg.Stores.Image.Impl; impl {
	case "local":
		host, err := str(cfg.Stores.Image, "image", "registry_host")
		if err != nil {
			return nil, err
		}
		prefix, err := str(cfg.Stores.Image, "image", "repository_prefix")
		if err != nil {
			return nil, err
		}
		s.Images = localimage.New(s.Objects, &localimage.Options{Host: host, RepositoryPrefix: prefix, KeyPrefix: cfg.Environment.FixturePrefix})
	default:
		return nil, fmt.Errorf("stores.image: unknown implementation %q", impl)
	}

	aopt := &artifact.Options{KeyPrefix: cfg.Environment.FixturePrefix, TypeAliases: cfg.Artifacts.TypeAliases}
	s.artifacts = artifact.New(s.Documents, s.Objects, aopt)
	s.localArtifacts = s.artifacts
	if s.Local != s.Documents {
		s.localArtifacts = artifact.New(s.Local, s.Objects, aopt)
	}
	return s, nil
}

func openSecrets(ctx context.Context, spec config.StoreSpec) (registry.SecretStore, error) {
	switch spec.Impl {
	case "local", "env":
	default:
		return nil, fmt.Errorf("stores.secret: unknown implementation %q", spec.Impl)
	}
	// [stores.secret] may use env: references, never secret: ones.
	path, err := registry.Resolve(ctx, spec.StoreConfigString("file_path"), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("stores.secret.config.file_path: %w", err)
	}
	var useEnv *bool
	switch v := spec.Config["use_env"].(type) {
	case nil:
	case bool:
		useEnv = &v
	case string:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &registry.InvalidError{Field: "stores.secret.config.use_env", Value: v, Reason: "want true or false"}
		}
		useEnv = &b
	default:
		return nil, &registry.InvalidError{Field: "stores.secret.config.use_env", Value: fmt.Sprint(v), Reason: "want true or false"}
	}
	st, err := envsecret.New(&envsecret.Options{FilePath: path, UseEnv: useEnv})
	if err != nil {
		return nil, fmt.Errorf("stores.secret: %w", err)
	}
	return st, nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
