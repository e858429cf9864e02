package artifact

import (
	"context"
	"fmt"
	"io"
	"mime"
	"os"
	"path"
	"path/filepath"

	"github.com/agentenv/agentenv/registry"
)

// VMImageInput describes a vm_image artifact to create: a disk image file
// (Path), the name of an image a sandbox provider already knows
// (ImageName, ECRURL), or both.
type VMImageInput struct {
	Path        string // the disk image file; streamed, never held in memory
	Filename    string // "" = Path's base name
	ContentType string // "" = from the extension, else application/octet-stream
	ImageName   string // "" with a Path = the file name
	ECRURL      string
	OS          string
	DiskSizeGB  float64
	CPU         float64
	MemoryMB    int
	SandboxType string
	Description string
}

// PutVMImage stores a new version of vm_image artifact id. A disk image
// file is streamed from its path to the object store in one pass, hashed
// on the way; nothing is copied first.
func (s *Store) PutVMImage(ctx context.Context, id string, in VMImageInput) (*VMImage, error) {
	if in.Path == "" && in.ImageName == "" && in.ECRURL == "" {
		return nil, &registry.InvalidError{Field: "vm_image", Reason: "give a disk image file, an image_name or an ecr_url"}
	}
	switch {
	case in.DiskSizeGB < 0:
		return nil, &registry.InvalidError{Field: "disk_size_gb", Value: fmt.Sprint(in.DiskSizeGB), Reason: "must not be negative"}
	case in.CPU < 0:
		return nil, &registry.InvalidError{Field: "cpu", Value: fmt.Sprint(in.CPU), Reason: "must not be negative"}
	case in.MemoryMB < 0:
		return nil, &registry.InvalidError{Field: "memory_mb", Value: fmt.Sprint(in.MemoryMB), Reason: "must not be negative"}
	}
	var payloads []payload
	if in.Path != "" {
		st, err := os.Stat(in.Path)
		if err != nil {
			return nil, fmt.Errorf("vm image %s: %w", id, err)
		}
		if !st.Mode().IsRegular() {
			return nil, &registry.InvalidError{Field: "disk image", Value: in.Path, Reason: "is not a regular file"}
		}
		if in.Filename == "" {
			in.Filename = filepath.Base(in.Path)
		}
		if err := checkName(in.Filename); err != nil {
			return nil, err
		}
		if in.ContentType == "" {
			if in.ContentType = mime.TypeByExtension(path.Ext(in.Filename)); in.ContentType == "" {
				in.ContentType = "application/octet-stream"
			}
		}
		if in.ImageName == "" && in.ECRURL == "" {
			// The Python framework needs one of the two to read the document.
			in.ImageName = in.Filename
		}
		payloads = append(payloads, pathPayload(in.Filename, in.ContentType, in.Path))
	}
	d, err := s.put(ctx, TypeVMImage, id, payloads, func(_ int, objs map[string]stored) (any, error) {
		v := VMImage{Header: Header{Type: TypeVMImage, Description: in.Description}, ECRURL: in.ECRURL, ImageName: in.ImageName,
			OS: in.OS, DiskSizeGB: in.DiskSizeGB, CPU: in.CPU, MemoryMB: in.MemoryMB, SandboxType: in.SandboxType}
		if o, ok := objs[in.Filename]; ok && in.Path != "" {
			v.Filename, v.ContentType = in.Filename, in.ContentType
			v.DiskImageObjectURL, v.DiskImageS3URL, v.DiskImageSHA256, v.DiskImageSize = o.url, o.url, o.SHA256, o.Size
		}
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	var v VMImage
	return &v, d.Decode(&v)
}

// GetVMImage reads a vm_image artifact.
func (s *Store) GetVMImage(ctx context.Context, ref registry.Ref) (*VMImage, error) {
	return get[VMImage](ctx, s, ref, TypeVMImage)
}

// OpenVMImage opens the disk image of a vm_image artifact, checked
// against its recorded digest as OpenFile's bytes are; ErrNotFound when
// the artifact only names an image.
func (s *Store) OpenVMImage(ctx context.Context, ref registry.Ref) (io.ReadCloser, *VMImage, error) {
	v, err := s.GetVMImage(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.openOne(ctx, v.Ref(), "disk image of vm_image artifact", v.Filename,
		digest{SHA256: v.DiskImageSHA256, Size: v.DiskImageSize}, v.DiskImageObjectURL, v.DiskImageS3URL)
	return rc, v, err
}

// WriteVMImage writes the disk image of a vm_image artifact to
// dir/<filename>, streamed; the file appears only when its bytes match the
// recorded digest.
func (s *Store) WriteVMImage(ctx context.Context, ref registry.Ref, dir string) (string, *VMImage, error) {
	rc, v, err := s.OpenVMImage(ctx, ref)
	if err != nil {
		return "", v, err
	}
	defer rc.Close()
	if err := checkName(v.Filename); err != nil {
		return "", v, err
	}
	dst := filepath.Join(dir, filepath.FromSlash(v.Filename))
	if err := registry.WriteFileAtomic(dst, rc); err != nil {
		return "", v, fmt.Errorf("vm image %s: %w", v.Ref(), err)
	}
	return dst, v, nil
}
