package registry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxKeyBytes bounds an object key.
const MaxKeyBytes = 2048

// ReservedObjectNames may not be the first segment of a key: the local
// object store keeps its temporary files and metadata there.
var reservedObjectNames = map[string]bool{".gitignore": true, ".agentenv-meta": true, ".agentenv-tmp": true}

// ValidateKey checks an object key: relative, slash-separated, no empty,
// "." or ".." segment, no backslash or control character, not under a
// reserved root name. Errors are *InvalidError naming the key.
func ValidateKey(key string) error {
	if key == "" {
		return invalid("key", key, "empty")
	}
	if err := checkKeyText(key); err != nil {
		return err
	}
	if strings.HasSuffix(key, "/") {
		return invalid("key", key, "ends with '/'")
	}
	return nil
}

// ValidatePrefix checks a List prefix: "" or a key, optionally ending in '/'
// or in a partial segment.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkKeyText(strings.TrimSuffix(prefix, "/"))
}

func checkKeyText(key string) error {
	switch {
	case len(key) > MaxKeyBytes:
		return invalid("key", key[:32]+"...", "longer than 2048 bytes")
	case strings.HasPrefix(key, "/"):
		return invalid("key", key, "absolute (starts with '/')")
	case strings.ContainsRune(key, '\\'):
		return invalid("key", key, "contains a backslash")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return invalid("key", key, "contains a control character")
		}
	}
	segs := strings.Split(key, "/")
	for _, seg := range segs {
		switch seg {
		case "":
			return invalid("key", key, "empty path segment")
		case ".", "..":
			return invalid("key", key, "'.' or '..' segment (keys cannot leave the store)")
		}
	}
	if reservedObjectNames[segs[0]] {
		return invalid("key", key, "reserved name "+segs[0])
	}
	return nil
}

// PutBytes stores b under key.
func PutBytes(ctx context.Context, s ObjectStore, key string, b []byte, o *ObjectPutOptions) (ObjectInfo, error) {
	return s.Put(ctx, key, bytes.NewReader(b), o)
}

// GetBytes reads a whole object.
func GetBytes(ctx context.Context, s ObjectStore, key string) ([]byte, error) {
	rc, info, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if info.Size > 0 && info.Size < 1<<30 {
		buf.Grow(int(info.Size) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, fmt.Errorf("read object %s: %w", key, err)
	}
	return buf.Bytes(), nil
}

// PutFile stores the file at path under key.
func PutFile(ctx context.Context, s ObjectStore, key, path string, o *ObjectPutOptions) (ObjectInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("put %s from file: %w", key, err)
	}
	defer f.Close()
	return s.Put(ctx, key, f, o)
}

// OpenURL opens an object by its URL (it must belong to s).
func OpenURL(ctx context.Context, s ObjectStore, url string) (io.ReadCloser, ObjectInfo, error) {
	key, err := s.KeyOf(url)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return s.Open(ctx, key)
}

// DownloadToFile copies an object (by key) to path, creating parent
// directories; the file appears whole (temp file + rename).
func DownloadToFile(ctx context.Context, s ObjectStore, key, path string) error {
	rc, _, err := s.Open(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := WriteFileAtomic(path, rc); err != nil {
		return fmt.Errorf("download %s: %w", key, err)
	}
	return nil
}

// WriteFileAtomic copies r to path, creating parent directories. The file
// appears whole or not at all (temp file + rename): when r fails, even on
// its last read, path is left as it was.
func WriteFileAtomic(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// GuessContentType is the content type of an object put without one,
// from its key's extension; every object store uses it so that a key has
// the same type whichever backend holds it.
func GuessContentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".tar.gz"), strings.HasSuffix(key, ".tgz"):
		return "application/gzip"
	case strings.HasSuffix(key, ".jsonl"):
		return "application/x-ndjson"
	}
	if t := mime.TypeByExtension(path.Ext(key)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// CheckPut validates a Put's arguments the same way for every object
// store: the key (ValidateKey), a non-nil reader, and nil options read as
// the zero value, which it returns.
func CheckPut(key string, r io.Reader, o *ObjectPutOptions) (ObjectPutOptions, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectPutOptions{}, err
	}
	if r == nil {
		return ObjectPutOptions{}, &InvalidError{Field: "reader", Value: key, Reason: "nil reader"}
	}
	if o == nil {
		return ObjectPutOptions{}, nil
	}
	return *o, nil
}
