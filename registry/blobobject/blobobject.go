package blobobject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agentenv/agentenv/registry"
)

// Defaults of Options.
const (
	DefaultPartSize    = 8 << 20
	DefaultConcurrency = 4
	// minPartSize is S3's smallest part (all but the last).
	minPartSize = 5 << 20
)

// Options tunes New. A nil *Options means defaults.
type Options struct {
	// Scheme and Bucket make the object URLs (<scheme>://<bucket>/...);
	// both are required.
	Scheme, Bucket string
	// Prefix is prepended to every key ("" = the bucket's root). A
	// non-empty prefix is normally a folder ("team-a/"); it is used as is.
	Prefix string
	// PartSize is the size of one part of a multipart upload, in bytes;
	// smaller objects go up in one request. 0 = DefaultPartSize; values
	// under 5 MiB are raised to 5 MiB (S3's minimum part).
	PartSize int
	// Concurrency is how many parts of one upload are in flight at once.
	// 0 = DefaultConcurrency.
	Concurrency int
}

// Store is an ObjectStore on a gocloud.dev/blob bucket.
type Store struct {
	bucket *blob.Bucket
	opt    Options
}

var _ registry.ObjectStore = (*Store)(nil)

// New wraps an open bucket. The store owns it: Close closes it. It panics
// when o lacks Scheme or Bucket (a programmer error: URLs need them).
func New(b *blob.Bucket, o *Options) *Store {
	var opt Options
	if o != nil {
		opt = *o
	}
	if b == nil || opt.Scheme == "" || opt.Bucket == "" {
		panic("blobobject.New: needs a bucket, Options.Scheme and Options.Bucket")
	}
	if opt.PartSize == 0 {
		opt.PartSize = DefaultPartSize
	}
	opt.PartSize = max(opt.PartSize, minPartSize)
	if opt.Concurrency <= 0 {
		opt.Concurrency = DefaultConcurrency
	}
	return &Store{bucket: b, opt: opt}
}

// Close releases the bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// Ping checks that the bucket exists and answers with these credentials.
// Its error names the bucket URL, never a credential, and wraps
// registry.ErrUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	ok, err := s.bucket.IsAccessible(ctx)
	if err == nil && !ok {
		err = errors.New("the bucket does not exist or these credentials cannot see it")
	}
	if err != nil {
		return fmt.Errorf("object store %s: %w: %v", s.root(), registry.ErrUnavailable, err)
	}
	return nil
}

func (s *Store) root() string { return s.opt.Scheme + "://" + s.opt.Bucket + "/" + s.opt.Prefix }

// ctxReader stops a copy when ctx ends and remembers the reader's own
// failure, so a put never completes from a reader that failed. On a
// failure it cancels the upload before returning it: gocloud closes its
// writer after a failed copy, and some drivers (GCS) commit what they
// hold on a close unless the upload's context is already cancelled.
type ctxReader struct {
	ctx    context.Context
	r      io.Reader
	cancel context.CancelFunc
	err    error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		c.err = err
		c.cancel()
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		c.err = err
		c.cancel()
	}
	return n, err
}

// Put streams r to key; write-once unless o.Overwrite.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, o *registry.ObjectPutOptions) (registry.ObjectInfo, error) {
	opt, err := registry.CheckPut(key, r, o)
	if err != nil {
		return registry.ObjectInfo{}, err
	}
	if !opt.Overwrite {
		// Fail before uploading: the conditional write below is what makes
		// write-once race-free, this only saves sending the bytes.
		if ok, err := s.Exists(ctx, key); err != nil {
			return registry.ObjectInfo{}, err
		} else if ok {
			return registry.ObjectInfo{}, alreadyExists(key)
		}
	}
	ct := opt.ContentType
	if ct == "" {
		ct = registry.GuessContentType(key)
	}
	// A cancelled upload context is how gocloud aborts a write: the
	// object (or multipart upload) is discarded, never published.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cr := &ctxReader{ctx: ctx, r: r, cancel: cancel}
	err = s.bucket.Upload(wctx, s.opt.Prefix+key, cr, &blob.WriterOptions{
		ContentType:     ct,
		ContentEncoding: opt.Encoding,
		BufferSize:      s.opt.PartSize,
		MaxConcurrency:  s.opt.Concurrency,
		IfNotExist:      !opt.Overwrite,
	})
	if err == nil && cr.err != nil {
		err = cr.err // defensive: a reader failure must never publish
	}
	if err != nil {
		cancel()
		if cr.err != nil {
			return registry.ObjectInfo{}, fmt.Errorf("write object %s: %w", key, cr.err)
		}
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return registry.ObjectInfo{}, alreadyExists(key)
		}
		return registry.ObjectInfo{}, s.wrap(key, "write", err)
	}
	return s.Stat(ctx, key)
}

func alreadyExists(key string) error {
	return fmt.Errorf("object %s: %w (pass Overwrite to replace it)", key, registry.ErrAlreadyExists)
}

// wrap turns a bucket error into the store's errors: NotFound becomes
// *NotFoundError, other failures name the key and keep the cause.
func (s *Store) wrap(key, what string, err error) error {
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return &registry.NotFoundError{Kind: "object", ID: key}
	case gcerrors.Canceled, gcerrors.DeadlineExceeded:
		return fmt.Errorf("object %s: %s: %w", key, what, err)
	}
	return fmt.Errorf("object %s in %s: %s: %w", key, s.root(), what, err)
}

// Open streams an object.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, registry.ObjectInfo, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, registry.ObjectInfo{}, err
	}
	rd, err := s.bucket.NewReader(ctx, s.opt.Prefix+key, nil)
	if err != nil {
		return nil, registry.ObjectInfo{}, s.wrap(key, "open", err)
	}
	// The object may have been overwritten between the two calls: the
	// reader's own size is the one that matches the bytes.
	info.Size = rd.Size()
	return rd, info, nil
}

// Stat returns an object's metadata.
func (s *Store) Stat(ctx context.Context, key string) (registry.ObjectInfo, error) {
	if err := registry.ValidateKey(key); err != nil {
		return registry.ObjectInfo{}, err
	}
	a, err := s.bucket.Attributes(ctx, s.opt.Prefix+key)
	if err != nil {
		return registry.ObjectInfo{}, s.wrap(key, "stat", err)
	}
	ct := a.ContentType
	if ct == "" {
		ct = registry.GuessContentType(key)
	}
	return registry.ObjectInfo{Key: key, URL: s.URL(key), Size: a.Size, ContentType: ct,
		Encoding: a.ContentEncoding, LastModified: a.ModTime.UTC()}, nil
}

// Exists reports whether key holds an object.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	_, err := s.Stat(ctx, key)
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes an object; a missing one is *NotFoundError.
func (s *Store) Delete(ctx context.Context, key string) error {
	// S3 deletes a missing key without complaint; the contract wants
	// NotFound, so look first.
	if _, err := s.Stat(ctx, key); err != nil {
		return err
	}
	if err := s.bucket.Delete(ctx, s.opt.Prefix+key); err != nil {
		return s.wrap(key, "delete", err)
	}
	return nil
}

// List returns the objects under prefix, sorted by key. Keys under the
// store's prefix that are not valid object keys (written by something
// else) are skipped.
func (s *Store) List(ctx context.Context, prefix string) ([]registry.ObjectInfo, error) {
	if err := registry.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	it := s.bucket.List(&blob.ListOptions{Prefix: s.opt.Prefix + prefix})
	var out []registry.ObjectInfo
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list objects %q in %s: %w", prefix, s.root(), err)
		}
		key := strings.TrimPrefix(obj.Key, s.opt.Prefix)
		if obj.IsDir || registry.ValidateKey(key) != nil {
			continue
		}
		out = append(out, registry.ObjectInfo{Key: key, URL: s.URL(key), Size: obj.Size,
			ContentType: registry.GuessContentType(key), LastModified: obj.ModTime.UTC()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// URL is <scheme>://<bucket>/<prefix><key>, path-escaped.
func (s *Store) URL(key string) string {
	return (&url.URL{Scheme: s.opt.Scheme, Host: s.opt.Bucket, Path: "/" + s.opt.Prefix + key}).String()
}

// KeyOf maps an object URL of this store back to its key.
func (s *Store) KeyOf(u string) (string, error) {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != s.opt.Scheme || pu.Host != s.opt.Bucket || pu.RawQuery != "" || pu.Fragment != "" {
		return "", &registry.InvalidError{Field: "url", Value: u, Reason: "not an object URL of " + s.root()}
	}
	key, ok := strings.CutPrefix(pu.Path, "/"+s.opt.Prefix)
	if !ok {
		return "", &registry.InvalidError{Field: "url", Value: u, Reason: "outside the object store " + s.root()}
	}
	if err := registry.ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}
