package stores

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/blobobject"
	"github.com/agentenv/agentenv/registry/envsecret"
	"github.com/agentenv/agentenv/registry/fsobject"
	"github.com/agentenv/agentenv/registry/localimage"
	"github.com/agentenv/agentenv/registry/postgres"
	"github.com/agentenv/agentenv/registry/sqlite"
)

// Env is what a factory gets to open its store.
type Env struct {
	Kind      string // "document", "object", "image", "secret"
	Impl      string // the [stores.<kind>] impl
	Spec      config.StoreSpec
	Config    *config.Config
	StateRoot string
	// StoreID is the set's store id (registry.StoreID of StateRoot).
	StoreID string
	// Secrets resolves secret: references (nil while opening the secret
	// store itself); Objects is set for image factories.
	Secrets registry.SecretStore
	Objects registry.ObjectStore
	// OnClose registers a cleanup run by Set.Close (or on a failed Open).
	OnClose func(func() error)
}

// String returns the config key with env:/secret: references
// resolved; errors name the key.
func (e *Env) String(ctx context.Context, key string) (string, error) {
	v, err := registry.Resolve(ctx, e.Spec.StoreConfigString(key), e.Secrets, nil)
	if err != nil {
		return "", fmt.Errorf("stores.%s.config.%s: %w", e.Kind, key, err)
	}
	return v, nil
}

// Factories open each store kind.
type (
	DocumentFactory func(ctx context.Context, env *Env) (registry.DocumentStore, error)
	ObjectFactory   func(ctx context.Context, env *Env) (registry.ObjectStore, error)
	ImageFactory    func(ctx context.Context, env *Env) (registry.ImageStore, error)
	SecretFactory   func(ctx context.Context, env *Env) (registry.SecretStore, error)
)

// Registry maps namespaced names ("store.document.sqlite") to factories.
// It is a value: tests and plugins build their own (Builtin, then Register).
type Registry struct {
	factories map[string]any
}

var nameRE = regexp.MustCompile(`^store\.(document|object|image|secret)\.[a-z][a-z0-9_]*$`)

// Register adds a factory under name. It panics on a malformed or
// duplicate name, or a factory of the wrong kind (programmer errors).
func (r *Registry) Register(name string, f any) {
	if !nameRE.MatchString(name) {
		panic("stores: bad factory name " + strconv.Quote(name) + " (want store.<kind>.<impl>)")
	}
	if _, dup := r.factories[name]; dup {
		panic("stores: duplicate factory " + name)
	}
	kind := strings.Split(name, ".")[1]
	ok := false
	switch f.(type) {
	case DocumentFactory:
		ok = kind == "document"
	case ObjectFactory:
		ok = kind == "object"
	case ImageFactory:
		ok = kind == "image"
	case SecretFactory:
		ok = kind == "secret"
	}
	if !ok {
		panic(fmt.Sprintf("stores: factory %s has type %T", name, f))
	}
	if r.factories == nil {
		r.factories = map[string]any{}
	}
	r.factories[name] = f
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.factories))
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (r *Registry) lookup(kind, impl string) (any, error) {
	if f, ok := r.factories["store."+kind+"."+impl]; ok {
		return f, nil
	}
	var known []string
	for _, n := range r.Names() {
		if strings.HasPrefix(n, "store."+kind+".") {
			known = append(known, strings.TrimPrefix(n, "store."+kind+"."))
		}
	}
	return nil, &registry.InvalidError{Field: "stores." + kind + ".impl", Value: impl,
		Reason: "unknown implementation (known: " + strings.Join(known, ", ") + ")"}
}

// Builtin returns a registry with the built-in implementations:
// store.document.{local,sqlite,postgres},
// store.object.{local,filesystem,s3,gcs,azure},
// store.image.local, store.secret.{local,env}.
func Builtin() *Registry {
	r := &Registry{}
	r.Register("store.document.local", DocumentFactory(openSQLiteDocs))
	r.Register("store.document.sqlite", DocumentFactory(openSQLiteDocs))
	r.Register("store.document.postgres", DocumentFactory(openPostgresDocs))
	r.Register("store.object.local", ObjectFactory(openFSObjects))
	r.Register("store.object.filesystem", ObjectFactory(openFSObjects))
	for _, b := range blobobject.Backends {
		r.Register("store.object."+b, ObjectFactory(openBlobObjects))
	}
	r.Register("store.image.local", ImageFactory(openLocalImages))
	r.Register("store.secret.local", SecretFactory(openEnvSecrets))
	r.Register("store.secret.env", SecretFactory(openEnvSecrets))
	return r
}

// localDocPath is the @local SQLite file: config local_path, else
// <state root>/document_store/documents.db.
func localDocPath(ctx context.Context, env *Env) (string, error) {
	p, err := env.String(ctx, "local_path")
	if err != nil || p != "" {
		return p, err
	}
	return filepath.Join(env.StateRoot, "document_store", "documents.db"), nil
}

func openSQLiteAt(ctx context.Context, env *Env, path string) (*sqlite.Store, error) {
	if err := registry.EnsureStateDir(env.StateRoot, filepath.Dir(path)); err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	env.OnClose(st.Close)
	return st, nil
}

func openSQLiteDocs(ctx context.Context, env *Env) (registry.DocumentStore, error) {
	path, err := env.String(ctx, "path")
	if err != nil {
		return nil, err
	}
	if path == "" {
		if path, err = localDocPath(ctx, env); err != nil {
			return nil, err
		}
	}
	return openSQLiteAt(ctx, env, path)
}

func openPostgresDocs(ctx context.Context, env *Env) (registry.DocumentStore, error) {
	dsn, err := env.String(ctx, "dsn")
	if err != nil {
		return nil, err
	}
	if dsn == "" {
		return nil, &registry.InvalidError{Field: "stores.document.config.dsn", Reason: "empty"}
	}
	schema, err := env.String(ctx, "schema")
	if err != nil {
		return nil, err
	}
	pg, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	env.OnClose(pg.Close)
	return pg, nil
}

func openFSObjects(ctx context.Context, env *Env) (registry.ObjectStore, error) {
	root, err := env.String(ctx, "root")
	if err != nil {
		return nil, err
	}
	if root == "" {
		root = filepath.Join(env.StateRoot, "object_store")
		if err := registry.EnsureStateDir(env.StateRoot, root); err != nil {
			return nil, err
		}
	}
	return fsobject.New(root, nil)
}

// openBlobObjects opens the s3, gcs or azure object store: url from the
// config, credentials resolved through the secret store (the config holds
// only references), and a check that the bucket answers, so a bad bucket
// fails here rather than at the first put of a run.
func openBlobObjects(ctx context.Context, env *Env) (registry.ObjectStore, error) {
	c := &blobobject.Config{Backend: env.Impl}
	for key, dst := range map[string]*string{"url": &c.URL, "access_key_id": &c.AccessKeyID,
		"secret_access_key": &c.SecretAccessKey, "session_token": &c.SessionToken,
		"credentials_json": &c.CredentialsJSON, "account_key": &c.AccountKey} {
		v, err := env.String(ctx, key)
		if err != nil {
			return nil, err
		}
		*dst = v
	}
	var err error
	if c.Store.PartSize, err = configInt(env, "part_size_mib"); err != nil {
		return nil, err
	}
	c.Store.PartSize <<= 20
	if c.Store.Concurrency, err = configInt(env, "concurrency"); err != nil {
		return nil, err
	}
	st, err := blobobject.Open(ctx, c)
	var ie *registry.InvalidError
	if errors.As(err, &ie) && ie.Field == "backend" {
		ie.Field = "stores.object.impl"
	} else if errors.As(err, &ie) && !strings.HasPrefix(ie.Field, "stores.") {
		ie.Field = "stores.object.config." + ie.Field // name the config key
	}
	if err != nil {
		return nil, err
	}
	env.OnClose(st.Close)
	return st, nil
}

// configInt reads a whole-number config key (0 when absent).
func configInt(env *Env, key string) (int, error) {
	switch v := env.Spec.Config[key].(type) {
	case nil:
		return 0, nil
	case int64:
		if v >= 0 && v <= 1<<20 {
			return int(v), nil
		}
	case int:
		if v >= 0 && v <= 1<<20 {
			return v, nil
		}
	}
	return 0, &registry.InvalidError{Field: "stores." + env.Kind + ".config." + key, Value: fmt.Sprint(env.Spec.Config[key]), Reason: "want a whole number >= 0"}
}

func openLocalImages(ctx context.Context, env *Env) (registry.ImageStore, error) {
	host, err := env.String(ctx, "registry_host")
	if err != nil {
		return nil, err
	}
	prefix, err := env.String(ctx, "repository_prefix")
	if err != nil {
		return nil, err
	}
	return localimage.New(&localimage.Options{Host: host, RepositoryPrefix: prefix, StoreID: env.StoreID}), nil
}

func openEnvSecrets(ctx context.Context, env *Env) (registry.SecretStore, error) {
	// [stores.secret] may use env: references, never secret: ones (env.Secrets is nil).
	path, err := env.String(ctx, "file_path")
	if err != nil {
		return nil, err
	}
	var useEnv *bool
	switch v := env.Spec.Config["use_env"].(type) {
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
	return envsecret.New(&envsecret.Options{FilePath: path, UseEnv: useEnv})
}
