// Package docprep is the write-side preparation every DocumentStore backend
// shares: decoding a body into an object, stripping secrets, checking record
// keys and rewriting a stored document's metadata.
//
// Backends differ in where the bytes go, not in what they accept, so these
// rules live once here (registry/storetest then checks them through every
// backend). The package is internal to registry: its functions return the
// registry's typed errors and are no API of their own.
package docprep

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/redact"
)

// Document decodes a versioned document body, strips its secret keys and
// reads its "type" field ("" when absent or null).
func Document(body json.RawMessage) (map[string]any, string, error) {
	m, err := registry.DecodeObject(body)
	if err != nil {
		return nil, "", err
	}
	m = strip(m)
	typ := ""
	if v, ok := m["type"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, "", &registry.InvalidError{Field: "type", Reason: "must be a string"}
		}
		typ = s
	}
	return m, typ, nil
}

// RecordKey checks the key of a keyed (unversioned) record.
func RecordKey(key string) error {
	if key == "" {
		return &registry.InvalidError{Field: "key", Reason: "empty"}
	}
	if len(key) > registry.MaxIDBytes {
		return &registry.InvalidError{Field: "key", Value: key[:32] + "...", Reason: "longer than 4096 bytes"}
	}
	if strings.ContainsAny(key, "\x00\n\r") {
		return &registry.InvalidError{Field: "key", Value: key, Reason: "control characters not allowed"}
	}
	return nil
}

// Record checks c and key, decodes body and returns the bytes to store
// (EncodeRecord of the decoded object).
func Record(c registry.Collection, key string, body json.RawMessage) ([]byte, error) {
	if err := c.CheckRecords(); err != nil {
		return nil, err
	}
	if err := RecordKey(key); err != nil {
		return nil, err
	}
	m, err := registry.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	return EncodeRecord(c, key, m)
}

// EncodeRecord strips secrets, stamps the collection's key field with key
// (so the stored body always names its own key) and marshals.
func EncodeRecord(c registry.Collection, key string, m map[string]any) ([]byte, error) {
	m = strip(m)
	if f := c.KeyField(); f != "" {
		m[f] = key
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, &registry.InvalidError{Field: "document", Reason: err.Error()}
	}
	return b, nil
}

// CheckMetadataUpdate validates an UpdateMetadata call before any backend
// reads: a versioned collection, an exact version, and a patch that leaves
// updated_at to the store.
func CheckMetadataUpdate(c registry.Collection, ref registry.Ref, patch map[string]any) error {
	if err := c.CheckVersioned(); err != nil {
		return err
	}
	if ref.Version < 1 {
		return &registry.InvalidError{Field: "version", Value: ref.String(), Reason: "metadata updates need an exact version"}
	}
	if _, ok := patch["updated_at"]; ok {
		return &registry.InvalidError{Field: "metadata.updated_at", Reason: "set by the store"}
	}
	return nil
}

// PatchMetadata applies patch to the metadata of the stored document
// (c, ref) and stamps metadata.updated_at with now. expect is the
// updated_at the caller last saw: when the stored one differs the update
// is refused with registry.ErrConflict (optimistic concurrency). The
// result is stripped of secrets, ready to store.
func PatchMetadata(c registry.Collection, ref registry.Ref, stored []byte, expect string, patch map[string]any, now time.Time) ([]byte, error) {
	doc, err := registry.DecodeObject(stored)
	if err != nil {
		return nil, fmt.Errorf("%s %s: stored document is corrupt: %w", c.Kind(), ref, err)
	}
	meta, _ := doc["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	if cur, _ := meta["updated_at"].(string); cur != expect {
		return nil, fmt.Errorf("%w: %s %s metadata.updated_at is %q, not %q", registry.ErrConflict, c.Kind(), ref, cur, expect)
	}
	for k, v := range patch {
		meta[k] = v
	}
	meta["updated_at"] = registry.FormatISO(now)
	doc["metadata"] = meta
	data, err := json.Marshal(strip(doc))
	if err != nil {
		return nil, &registry.InvalidError{Field: "metadata", Reason: err.Error()}
	}
	return data, nil
}

// strip is redact.Strip for an object, which it always returns as one.
func strip(m map[string]any) map[string]any {
	return redact.Strip(m).(map[string]any)
}
