package registry

import (
	"context"
	"io"
	"time"
)

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key          string
	URL          string // file:///abs/path for the local store
	Size         int64
	ContentType  string
	Encoding     string // content encoding ("gzip"), "" when none
	LastModified time.Time
}

// ObjectPutOptions tunes ObjectStore.Put. A nil pointer means defaults.
type ObjectPutOptions struct {
	ContentType string // "" = guessed from the key's extension
	Encoding    string
	// Overwrite allows replacing an existing object. Objects are write-once
	// by default: a second put of a key fails with ErrAlreadyExists.
	Overwrite bool
}

// ObjectStore keeps bytes under slash-separated keys.
//
// Contract (checked by storetest.RunObjectStore):
//   - Put is atomic: a reader sees the whole object or nothing, including
//     after a crash mid-write.
//   - Put is write-once unless Overwrite is set.
//   - Keys are relative, clean, without "..", "." or empty segments, and
//     cannot escape the store; reserved root names are refused. Bad keys
//     are *InvalidError (ErrInvalid).
//   - Missing objects are *NotFoundError (ErrNotFound).
type ObjectStore interface {
	Put(ctx context.Context, key string, r io.Reader, o *ObjectPutOptions) (ObjectInfo, error)
	Open(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	Exists(ctx context.Context, key string) (bool, error)
	// Delete removes an object; a missing one is *NotFoundError. It is for
	// collecting garbage (orphan artifact objects): nothing that a document
	// may point at is ever deleted.
	Delete(ctx context.Context, key string) error
	// List returns the objects whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// URL is the object URL of key (whether or not it exists).
	URL(key string) string
	// KeyOf maps an object URL of this store back to its key; a foreign URL
	// is an *InvalidError.
	KeyOf(url string) (string, error)
}
