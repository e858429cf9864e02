package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// An artifact's versions page previews its latest version: the first
// bytes of a file artifact (as text when they are text), and the pinned
// members of a file universe, each linked to its own page.

// previewBytes is how much of a file artifact a preview reads.
const previewBytes = 64 << 10

// FilePreview is the start of a file artifact's bytes.
type FilePreview struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size_bytes"`
	// Text is the first bytes when they are UTF-8 text; Binary is set
	// instead for other bytes.
	Text      string `json:"text,omitempty"`
	Binary    bool   `json:"binary,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// UniverseMember is one pinned member of a file universe.
type UniverseMember struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// artifactPreview fills v's preview or members from its latest version.
func (s *Server) artifactPreview(ctx context.Context, v *Versions) {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(v.Latest, &head) != nil {
		return
	}
	switch head.Type {
	case artifact.TypeFile:
		var f artifact.File
		if err := json.Unmarshal(v.Latest, &f); err != nil {
			v.Preview = &FilePreview{Error: "the artifact document is not a file artifact: " + err.Error()}
			return
		}
		v.Preview = s.filePreview(ctx, &f)
	case artifact.TypeFileArtifactUniverse:
		var u artifact.FileArtifactUniverse
		if err := json.Unmarshal(v.Latest, &u); err != nil {
			return
		}
		v.Members = []UniverseMember{}
		for name, ref := range u.FileArtifactRefs {
			v.Members = append(v.Members, UniverseMember{Name: name, ID: ref.ID, Version: ref.Version})
		}
		for name, id := range u.FileArtifactIDs { // documents with ids only
			if _, ok := u.FileArtifactRefs[name]; !ok {
				v.Members = append(v.Members, UniverseMember{Name: name, ID: id})
			}
		}
		sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].Name < v.Members[j].Name })
	}
}

func (s *Server) filePreview(ctx context.Context, f *artifact.File) *FilePreview {
	p := &FilePreview{Filename: f.Filename, ContentType: f.ContentType, Size: f.Size}
	if s.st.Objects == nil {
		p.Error = "no object store is configured"
		return p
	}
	key, err := s.st.Objects.KeyOf(f.S3URL)
	if err != nil {
		p.Error = "the file's bytes are in another object store (" + f.S3URL + ")"
		return p
	}
	rc, _, err := s.st.Objects.Open(ctx, key)
	if errors.Is(err, registry.ErrNotFound) {
		p.Error = "the file's bytes are not in the object store (deleted?)"
		return p
	}
	if err != nil {
		p.Error = "cannot read the file's bytes: " + err.Error()
		return p
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, previewBytes+1))
	if err != nil {
		p.Error = "cannot read the file's bytes: " + err.Error()
		return p
	}
	if len(b) > previewBytes {
		b, p.Truncated = b[:previewBytes], true
	}
	// A cut may split the last rune: trim up to 3 bytes of it.
	text := b
	for i := 0; i < 3 && len(text) > 0 && !utf8.Valid(text); i++ {
		text = text[:len(text)-1]
	}
	if !utf8.Valid(text) || bytes.IndexByte(text, 0) >= 0 {
		p.Binary = true
		return p
	}
	p.Text = string(text)
	return p
}
