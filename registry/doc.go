// Package registry defines the four stores every other part of agentenv
// keeps its state in, and the vocabulary they share: versioned documents,
// instance records, objects (bytes), container images and secrets.
//
// The package holds interfaces, value types, sentinel errors and small
// helpers only. Each backend lives in its own package and proves itself
// with the shared conformance suites of registry/storetest:
//
//	registry/sqlite      DocumentStore on SQLite (pure Go, WAL)   the default
//	registry/postgres    DocumentStore on PostgreSQL              [stores.document] impl="postgres"
//	registry/memory      DocumentStore in memory                  tests, dry runs
//	registry/fsobject    ObjectStore on a local directory          the default
//	registry/localimage  ImageStore: refs <host>/<repo>:v<N>-<store id>
//	registry/envsecret   SecretStore: process environment + optional file
//	registry/ociregistry an in-process OCI registry (agent-env registry serve)
//	registry/artifact    typed artifacts (file, universes, docker_image) over the stores
//	registry/redact      the safe form of contexts, masking for display and logs
//	registry/stores      opens the configured set of stores
//
// Why versioned documents: everything a run depends on (envs, agents,
// artifacts, tasks) is immutable once written. A put inserts the next
// version and never overwrites one, so a run can always name exactly what
// it used ("items:3") and re-running it reads the same bytes.
//
// Records (env_instances, task_instances, runs, ...) are the mutable side:
// one document per key, changed only through a compare-and-swap on its
// revision so that concurrent writers never lose an update.
//
// Usage:
//
//	docs, _ := sqlite.Open(ctx, "", nil) // default path under the state root
//	defer docs.Close()
//	d, err := docs.Put(ctx, registry.Tasks, "hello", body, nil)   // d.Version == 1, 2, ...
//	d, err = docs.Get(ctx, registry.Tasks, registry.Ref{ID: "hello"}) // latest
//	ref, err := registry.ParseRef("hello:2")
//	if errors.Is(err, registry.ErrNotFound) { ... }
package registry
