package envsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/agentenv/agentenv/protocol"
)

// WriteNamespaceGrant lets data/get upload its export under RootPath.
// It reaches the handler validated.
type WriteNamespaceGrant struct {
	RootPath       string              `json:"root_path"`
	ExpiresAt      time.Time           `json:"expires_at"`
	MaxObjects     int64               `json:"max_objects"`
	MaxObjectBytes int64               `json:"max_object_bytes"`
	MaxTotalBytes  int64               `json:"max_total_bytes"`
	Write          HTTPPostPolicyGrant `json:"write"`
}

// HTTPPostPolicyGrant is an S3-style multipart upload policy.
type HTTPPostPolicyGrant struct {
	Kind      string            `json:"kind"`
	URL       string            `json:"url"`
	Fields    map[string]string `json:"fields"`
	PathField string            `json:"path_field"`
	FileField string            `json:"file_field"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// dataObjectsDescription is the card entry's text.
const dataObjectsDescription = "data/get takes a write_namespace grant and may upload its export under it."

// HandleGetWithGrant registers data/get with a handler that accepts a
// write-namespace grant: the card then advertises
// urn:agentenv:data-objects/v1, and the handler receives the validated
// grant, or nil when the caller sent none. An invalid grant is answered
// -32602 naming only the field paths at fault; the handler is not called.
func (s *Server) HandleGetWithGrant(h func(ctx context.Context, grant *WriteNamespaceGrant) ([]protocol.Part, error)) {
	s.register("data/get", func() {
		s.getGrant = h
		s.get = func(ctx context.Context) ([]protocol.Part, error) { return h(ctx, nil) }
	})
}

// decodeGrant validates a grant strictly (closed objects, https URLs, UTC
// expiry, normalised root path, positive limits). Errors list field paths,
// never values: grants carry signatures.
func decodeGrant(raw json.RawMessage) (*WriteNamespaceGrant, error) {
	var bad []string
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, errors.New("write_namespace: must be a JSON object")
	}
	g := &WriteNamespaceGrant{}
	closed(top, "write_namespace", []string{"root_path", "expires_at", "max_objects", "max_object_bytes", "max_total_bytes", "write"}, &bad)
	if !str(top["root_path"], &g.RootPath) || !normalisedRelative(g.RootPath) {
		bad = append(bad, "write_namespace.root_path")
	}
	var exp string
	if !str(top["expires_at"], &exp) || !utcTime(exp, &g.ExpiresAt) {
		bad = append(bad, "write_namespace.expires_at")
	}
	for name, dst := range map[string]*int64{"max_objects": &g.MaxObjects, "max_object_bytes": &g.MaxObjectBytes, "max_total_bytes": &g.MaxTotalBytes} {
		if !positiveInt(top[name], dst) {
			bad = append(bad, "write_namespace."+name)
		}
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(top["write"], &w) != nil || w == nil {
		bad = append(bad, "write_namespace.write")
	} else {
		closed(w, "write_namespace.write", []string{"kind", "url", "fields", "path_field", "file_field", "headers"}, &bad)
		p := &g.Write
		if !str(w["kind"], &p.Kind) || p.Kind != "http-post-policy" {
			bad = append(bad, "write_namespace.write.kind")
		}
		if !str(w["url"], &p.URL) || !httpsURL(p.URL) {
			bad = append(bad, "write_namespace.write.url")
		}
		if json.Unmarshal(w["fields"], &p.Fields) != nil || p.Fields == nil {
			bad = append(bad, "write_namespace.write.fields")
		}
		if !str(w["path_field"], &p.PathField) || p.PathField == "" {
			bad = append(bad, "write_namespace.write.path_field")
		}
		if !str(w["file_field"], &p.FileField) || p.FileField == "" {
			bad = append(bad, "write_namespace.write.file_field")
		}
		if h, ok := w["headers"]; ok && string(h) != "null" && json.Unmarshal(h, &p.Headers) != nil {
			bad = append(bad, "write_namespace.write.headers")
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("invalid grant fields: %s", strings.Join(bad, ", "))
	}
	return g, nil
}

func closed(m map[string]json.RawMessage, at string, allowed []string, bad *[]string) {
	for k := range m {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			*bad = append(*bad, at+"."+k+" (unknown field)")
		}
	}
}

func str(raw json.RawMessage, dst *string) bool {
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, dst) == nil
}

func positiveInt(raw json.RawMessage, dst *int64) bool {
	// Strict integers: no strings, no fractions, no exponent forms.
	if len(raw) == 0 || bytes.ContainsAny(raw, ".eE\"") {
		return false
	}
	return json.Unmarshal(raw, dst) == nil && *dst > 0
}

func utcTime(s string, dst *time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return false
	}
	if _, off := t.Zone(); off != 0 {
		return false
	}
	*dst = t.UTC()
	return true
}

func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// normalisedRelative: relative POSIX, no empty, "." or ".." segment, no
// backslash.
func normalisedRelative(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
