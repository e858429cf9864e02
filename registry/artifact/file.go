package artifact

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"

	"github.com/agentenv/agentenv/registry"
)

// FileInput describes a file artifact to create.
type FileInput struct {
	Filename    string // required; may contain '/' ("data/items.json")
	ContentType string // "" = from the extension
	Description string
	Body        io.Reader // required
}

// PutFile stores a new version of file artifact id.
func (s *Store) PutFile(ctx context.Context, id string, in FileInput) (*File, error) {
	if err := checkName(in.Filename); err != nil {
		return nil, err
	}
	open, dg, cleanup, err := spool(in.Body)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	ct := in.ContentType
	if ct == "" {
		if ct = mime.TypeByExtension(path.Ext(in.Filename)); ct == "" {
			ct = "application/octet-stream"
		}
	}
	d, err := s.put(ctx, TypeFile, id, []payload{{name: in.Filename, contentType: ct, open: open, digest: dg}},
		func(_ int, objs map[string]stored) (any, error) {
			return File{Header: Header{Type: TypeFile, Description: in.Description}, Filename: in.Filename,
				ContentType: ct, S3URL: objs[in.Filename].url, Size: dg.Size, SHA256: dg.SHA256}, nil
		})
	if err != nil {
		return nil, err
	}
	var f File
	return &f, d.Decode(&f)
}

// PutFileFromPath stores the file at p (its base name unless filename is set).
func (s *Store) PutFileFromPath(ctx context.Context, id, p, filename, description string) (*File, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("file artifact %s: %w", id, err)
	}
	defer fh.Close()
	if filename == "" {
		filename = filepath.Base(p)
	}
	return s.PutFile(ctx, id, FileInput{Filename: filename, Description: description, Body: fh})
}

// GetFile reads a file artifact document.
func (s *Store) GetFile(ctx context.Context, ref registry.Ref) (*File, error) {
	return get[File](ctx, s, ref, TypeFile)
}

// OpenFile opens the bytes of a file artifact. They are checked against
// the recorded sha256 and size: a mismatch is a *CorruptError
// (registry.ErrCorrupt), from OpenFile or from the read that ends the
// bytes.
func (s *Store) OpenFile(ctx context.Context, ref registry.Ref) (io.ReadCloser, *File, error) {
	f, err := s.GetFile(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.openFile(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	return rc, f, nil
}

func (s *Store) openFile(ctx context.Context, f *File) (io.ReadCloser, error) {
	return s.open(ctx, f.Ref(), f.Filename, f.S3URL, digest{SHA256: f.SHA256, Size: f.Size})
}

// WriteFile writes a file artifact's bytes to dir/<filename>.
func (s *Store) WriteFile(ctx context.Context, ref registry.Ref, dir string) (string, error) {
	f, err := s.GetFile(ctx, ref)
	if err != nil {
		return "", err
	}
	return s.writeMember(ctx, f, f.Filename, dir)
}

// writeMember writes f's bytes to dir/name; the file appears only when
// the bytes match the recorded digest.
func (s *Store) writeMember(ctx context.Context, f *File, name, dir string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	rc, err := s.openFile(ctx, f)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	dst := filepath.Join(dir, filepath.FromSlash(name))
	if err := registry.WriteFileAtomic(dst, rc); err != nil {
		return "", fmt.Errorf("file artifact %s: %w", f.Ref(), err)
	}
	return dst, nil
}

// UniverseOptions tunes PutUniverse and PutUniverseFromDir.
type UniverseOptions struct {
	Description string
	// Bundle also stores every member in one tar.gz
	// (artifacts/file_artifact_universe/<id>/<v>/bundle.tar.gz, bundle_s3_url),
	// for loaders that copy a whole tree at once (the container archive API).
	Bundle bool
	// Concurrency bounds the parallel file uploads of PutUniverseFromDir;
	// 0 = 8.
	Concurrency int
}

// PutUniverse stores a new version of file_artifact_universe id bundling
// members (file name → file artifact). A member with Version 0 is pinned to
// its latest version now; every member must exist and be a file.
func (s *Store) PutUniverse(ctx context.Context, id string, members map[string]registry.Ref, o *UniverseOptions) (*FileArtifactUniverse, error) {
	if len(members) == 0 {
		return nil, &registry.InvalidError{Field: "file_artifact_refs", Reason: "a universe needs at least one file"}
	}
	var opt UniverseOptions
	if o != nil {
		opt = *o
	}
	ids := make(map[string]string, len(members))
	refs := make(map[string]registry.Ref, len(members))
	files := make(map[string]*File, len(members))
	for name, ref := range members {
		if err := checkName(name); err != nil {
			return nil, err
		}
		f, err := s.GetFile(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("universe %s member %s: %w", id, name, err)
		}
		ids[name], refs[name], files[name] = f.ID, f.Ref(), f
	}
	var payloads []payload
	if opt.Bundle {
		open, dg, cleanup, err := s.bundle(ctx, files)
		if err != nil {
			return nil, fmt.Errorf("universe %s bundle: %w", id, err)
		}
		defer cleanup()
		payloads = append(payloads, payload{name: "bundle.tar.gz", contentType: "application/gzip", open: open, digest: dg})
	}
	d, err := s.put(ctx, TypeFileArtifactUniverse, id, payloads, func(_ int, objs map[string]stored) (any, error) {
		b := objs["bundle.tar.gz"]
		return FileArtifactUniverse{Header: Header{Type: TypeFileArtifactUniverse, Description: opt.Description},
			FileArtifactIDs: ids, FileArtifactRefs: refs, BundleS3URL: b.url, BundleSHA256: b.SHA256, BundleSize: b.Size}, nil
	})
	if err != nil {
		return nil, err
	}
	var u FileArtifactUniverse
	return &u, d.Decode(&u)
}

// PutUniverseFromDir stores every regular file under dir as a file artifact
// "<id>/<relative path>" and bundles them as universe id (put-bundled, and
// bundle artifact folders with several files).
func (s *Store) PutUniverseFromDir(ctx context.Context, id, dir string, o *UniverseOptions) (*FileArtifactUniverse, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("universe %s: read %s: %w", id, dir, err)
	}
	if len(names) == 0 {
		return nil, &registry.InvalidError{Field: "file-dir", Value: dir, Reason: "no files"}
	}
	sort.Strings(names)
	conc := 8
	if o != nil && o.Concurrency > 0 {
		conc = o.Concurrency
	}
	members := make(map[string]registry.Ref, len(names))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, conc)
	)
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f, err := s.PutFileFromPath(ctx, id+"/"+name, filepath.Join(dir, filepath.FromSlash(name)), name, "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			members[name] = f.Ref()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return s.PutUniverse(ctx, id, members, o)
}

// GetUniverse reads a file_artifact_universe document.
func (s *Store) GetUniverse(ctx context.Context, ref registry.Ref) (*FileArtifactUniverse, error) {
	return get[FileArtifactUniverse](ctx, s, ref, TypeFileArtifactUniverse)
}

// WriteUniverse writes every member of a universe to dir/<filename>, in
// name order, and returns the written paths.
func (s *Store) WriteUniverse(ctx context.Context, ref registry.Ref, dir string) ([]string, error) {
	u, err := s.GetUniverse(ctx, ref)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(u.FileArtifactRefs))
	for name := range u.FileArtifactRefs {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		f, err := s.GetFile(ctx, u.FileArtifactRefs[name])
		if err != nil {
			return out, fmt.Errorf("universe %s member %s: %w", u.Ref(), name, err)
		}
		p, err := s.writeMember(ctx, f, name, dir)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}
