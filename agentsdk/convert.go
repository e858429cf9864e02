package agentsdk

import (
	"encoding/base64"
	"encoding/json"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentenv/agentenv/protocol"
)

// toA2AParts converts result parts for a2a-go. Data values become plain
// JSON types (float64 numbers): a2a-go deep-copies tasks with gob, which
// knows no json.Number, so integers beyond 2^53 lose precision on output.
func toA2AParts(parts []protocol.Part) []a2a.Part {
	out := make([]a2a.Part, 0, len(parts))
	for _, p := range parts {
		meta := decodeObject(p.Metadata)
		switch p.Kind {
		case protocol.PartKindText:
			out = append(out, a2a.TextPart{Text: p.Text, Metadata: meta})
		case protocol.PartKindData:
			d := decodeObject(p.Data)
			if d == nil {
				d = map[string]any{}
			}
			out = append(out, a2a.DataPart{Data: d, Metadata: meta})
		case protocol.PartKindFile:
			f := p.File
			if f == nil {
				f = &protocol.FileContent{}
			}
			fm := a2a.FileMeta{MimeType: f.MimeType, Name: f.Name}
			if f.Bytes != nil || f.URI == "" {
				out = append(out, a2a.FilePart{File: a2a.FileBytes{FileMeta: fm, Bytes: base64.StdEncoding.EncodeToString(f.Bytes)}, Metadata: meta})
			} else {
				out = append(out, a2a.FilePart{File: a2a.FileURI{FileMeta: fm, URI: f.URI}, Metadata: meta})
			}
		}
	}
	return out
}

// fromA2AParts converts a2a-go parts (used for peer replies and when the
// raw inbound parts are not available).
func fromA2AParts(parts []a2a.Part) []protocol.Part {
	out := make([]protocol.Part, 0, len(parts))
	for _, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			continue
		}
		var pp protocol.Part
		if json.Unmarshal(b, &pp) == nil {
			out = append(out, pp)
		}
	}
	return out
}

func decodeObject(raw json.RawMessage) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func dataPart(v any) protocol.Part {
	b, _ := json.Marshal(v)
	return protocol.DataPart(b)
}
