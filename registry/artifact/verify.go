package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	"github.com/agentenv/agentenv/registry"
)

// digest is what a document records of one object's bytes.
type digest struct {
	SHA256 string // hex; "" = not recorded (documents of older builds)
	Size   int64
}

// CorruptError says that the bytes stored for an artifact are not the
// bytes its document records. It matches registry.ErrCorrupt.
type CorruptError struct {
	Ref        registry.Ref // the artifact id and version
	Name       string       // the object within it: file name, "image.tar.gz", "bundle.tar.gz"
	Key        string       // the object key
	WantSHA256 string       // recorded by the document
	GotSHA256  string       // of the stored bytes
	WantSize   int64
	GotSize    int64
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("artifact %s: %s: stored bytes have sha256 %s (%d bytes) but the document records sha256 %s (%d bytes); object %s",
		e.Ref, e.Name, e.GotSHA256, e.GotSize, e.WantSHA256, e.WantSize, e.Key)
}

// Is makes errors.Is(err, registry.ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == registry.ErrCorrupt }

// open opens the object at url holding name of artifact ref and checks it
// against want. A size mismatch fails here; otherwise the reader checks
// the digest as the bytes pass and returns a *CorruptError with the last
// bytes instead of success, so a consumer copying to the end never takes
// wrong bytes for right ones. With no recorded digest (documents of older
// builds) the bytes are served as they are.
func (s *Store) open(ctx context.Context, ref registry.Ref, name, url string, want digest) (io.ReadCloser, error) {
	key, err := s.objects.KeyOf(url)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %s: %w", ref, name, err)
	}
	rc, info, err := s.objects.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %s: %w", ref, name, err)
	}
	if want.SHA256 == "" {
		return rc, nil
	}
	v := &verifier{rc: rc, h: sha256.New(), want: want, err: &CorruptError{Ref: ref, Name: name, Key: key,
		WantSHA256: want.SHA256, WantSize: want.Size}}
	if info.Size != want.Size {
		// Hash it all to name both digests.
		n, err := io.Copy(v.h, rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("artifact %s: %s: %w", ref, name, err)
		}
		v.n = n
		return nil, v.corrupt()
	}
	return v, nil
}

// verifier hashes what is read through it and fails the read that
// completes the recorded size when the digest differs.
type verifier struct {
	rc   io.ReadCloser
	h    hash.Hash
	n    int64
	want digest
	err  *CorruptError
	done bool // the digest was checked and matched
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	switch {
	case v.n > v.want.Size:
		return n, v.corrupt() // grew after the check: never right
	case v.n == v.want.Size && !v.done:
		if cerr := v.check(); cerr != nil {
			return n, cerr
		}
		v.done = true
	case err == io.EOF && v.n < v.want.Size:
		return n, v.corrupt()
	}
	return n, err
}

func (v *verifier) check() error {
	if hex.EncodeToString(v.h.Sum(nil)) != v.want.SHA256 {
		return v.corrupt()
	}
	return nil
}

func (v *verifier) corrupt() error {
	v.err.GotSHA256 = hex.EncodeToString(v.h.Sum(nil))
	v.err.GotSize = v.n
	return v.err
}

func (v *verifier) Close() error { return v.rc.Close() }
