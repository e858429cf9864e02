package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Part kinds (A2A 0.3 part shapes).
const (
	PartKindText = "text"
	PartKindData = "data"
	PartKindFile = "file"
)

// Part is the union of text, data and file parts used by the data plane
// and by A2A messages. Exactly one of Text, Data or File is meaningful,
// according to Kind. Parts encode without null fields.
type Part struct {
	Kind string
	// Text of a text part.
	Text string
	// Data of a data part: always a JSON object, kept as raw bytes so that
	// numbers round-trip exactly.
	Data json.RawMessage
	// File of a file part.
	File *FileContent
	// Metadata is an optional JSON object on every kind.
	Metadata json.RawMessage
}

// FileContent is the file of a file part: inline Bytes or a URI.
type FileContent struct {
	// Bytes are base64-encoded on the wire.
	Bytes    []byte `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

// TextPart, DataPart and FilePart build parts.
func TextPart(text string) Part { return Part{Kind: PartKindText, Text: text} }

// DataPart builds a data part from an encoded JSON object.
func DataPart(data json.RawMessage) Part { return Part{Kind: PartKindData, Data: data} }

// FilePart builds a file part.
func FilePart(f FileContent) Part { return Part{Kind: PartKindFile, File: &f} }

type partWire struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	File     *fileWire       `json:"file,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

type fileWire struct {
	Bytes    *string `json:"bytes,omitempty"`
	URI      *string `json:"uri,omitempty"`
	MimeType *string `json:"mimeType,omitempty"`
	Name     *string `json:"name,omitempty"`
}

// MarshalJSON encodes the part without null fields.
func (p Part) MarshalJSON() ([]byte, error) {
	w := partWire{Kind: p.Kind}
	if len(p.Metadata) > 0 && !isNull(p.Metadata) {
		w.Metadata = p.Metadata
	}
	switch p.Kind {
	case PartKindText:
		w.Text = &p.Text
	case PartKindData:
		w.Data = p.Data
		if len(w.Data) == 0 || isNull(w.Data) {
			w.Data = json.RawMessage("{}")
		}
	case PartKindFile:
		f := p.File
		if f == nil {
			f = &FileContent{}
		}
		fw := &fileWire{}
		if f.Bytes != nil {
			s := encodeBase64(f.Bytes)
			fw.Bytes = &s
		}
		fw.URI = nonEmpty(f.URI)
		fw.MimeType = nonEmpty(f.MimeType)
		fw.Name = nonEmpty(f.Name)
		w.File = fw
	default:
		return nil, fmt.Errorf("part: unknown kind %q", p.Kind)
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes and validates a part. Unknown kinds, a data part
// whose data is not an object and a file part with neither bytes nor uri
// are errors naming the offending field.
func (p *Part) UnmarshalJSON(b []byte) error {
	var w struct {
		Kind     *string         `json:"kind"`
		Text     *string         `json:"text"`
		Data     json.RawMessage `json:"data"`
		File     *fileWire       `json:"file"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if !isObject(b) {
		return errors.New("part must be a JSON object")
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("part: %w", err)
	}
	if w.Kind == nil {
		return errors.New("kind: required")
	}
	*p = Part{Kind: *w.Kind}
	if len(w.Metadata) > 0 && !isNull(w.Metadata) {
		if !isObject(w.Metadata) {
			return errors.New("metadata: must be a JSON object")
		}
		p.Metadata = w.Metadata
	}
	switch p.Kind {
	case PartKindText:
		if w.Text == nil {
			return errors.New("text: required for a text part")
		}
		p.Text = *w.Text
	case PartKindData:
		if !isObject(w.Data) {
			return errors.New("data: must be a JSON object")
		}
		p.Data = w.Data
	case PartKindFile:
		if w.File == nil {
			return errors.New("file: required for a file part")
		}
		f := &FileContent{}
		if w.File.Bytes != nil {
			raw, err := decodeBase64(*w.File.Bytes)
			if err != nil {
				return fmt.Errorf("file.bytes: %w", err)
			}
			f.Bytes = raw
		}
		f.URI = deref(w.File.URI)
		f.MimeType = deref(w.File.MimeType)
		f.Name = deref(w.File.Name)
		if w.File.Bytes == nil && f.URI == "" {
			return errors.New("file: needs bytes or uri")
		}
		p.File = f
	default:
		return fmt.Errorf("kind: unknown part kind %q (want text, data or file)", p.Kind)
	}
	return nil
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
