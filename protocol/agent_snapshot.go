package protocol

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Snapshot extension (agent side): save a context's conversation state
// to objects the caller grants, and load it back into a context.
const (
	URISnapshot       = "urn:agentenv:snapshot/v1"
	AgentSnapshotPath = "/ext/snapshot"

	// SnapshotTrajectory names the object every portable snapshot holds;
	// SnapshotWorkspace is the optional workspace archive.
	SnapshotTrajectory = "trajectory"
	SnapshotWorkspace  = "workspace"
)

// Grant kinds.
const (
	GrantHTTPGet = "http-get"
	GrantHTTPPut = "http-put"
)

// HTTPGrant is a pre-authorised GET (HttpGetGrant) or PUT (HttpPutGrant)
// of one object. Headers often carry signatures: never log them.
type HTTPGrant struct {
	Kind      string            `json:"kind"`
	URL       string            `json:"url"`
	ExpiresAt time.Time         `json:"expires_at"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// ReadObject grants reading one object.
type ReadObject struct {
	MediaType string    `json:"media_type"`
	MaxBytes  int64     `json:"max_bytes"`
	SizeBytes *int64    `json:"size_bytes,omitempty"`
	SHA256    string    `json:"sha256,omitempty"`
	Read      HTTPGrant `json:"read"`
}

// WriteObject grants writing one object.
type WriteObject struct {
	MediaType string    `json:"media_type"`
	MaxBytes  int64     `json:"max_bytes"`
	Write     HTTPGrant `json:"write"`
}

// Uploaded describes an object written through a WriteObject grant.
type Uploaded struct {
	SizeBytes int64  `json:"size_bytes"`
	SHA256    string `json:"sha256,omitempty"`
}

// SnapshotSaveRequest is save (POST): {context_id, objects}.
type SnapshotSaveRequest struct {
	ContextID string                 `json:"context_id"`
	Objects   map[string]WriteObject `json:"objects"`
}

// SnapshotSaveResponse answers save.
type SnapshotSaveResponse struct {
	ContextID string              `json:"context_id"`
	Objects   map[string]Uploaded `json:"objects"`
}

// SnapshotLoadRequest is load (PUT): {objects, target_context_id?}.
type SnapshotLoadRequest struct {
	Objects         map[string]ReadObject `json:"objects"`
	TargetContextID string                `json:"target_context_id,omitempty"`
}

// SnapshotLoadResponse answers load.
type SnapshotLoadResponse struct {
	ContextID string `json:"context_id"`
}

var (
	mediaTypeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$`)
	sha256RE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// GrantURLAllowed is the URL rule of grants: absolute https, or (ours)
// plain http to a loopback host, so that a runner on the same machine can
// serve the objects itself without a certificate.
func GrantURLAllowed(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		ip := net.ParseIP(h)
		return h == "localhost" || (ip != nil && ip.IsLoopback())
	}
	return false
}

func (g HTTPGrant) check(at, kind string) error {
	switch {
	case g.Kind != kind:
		return fmt.Errorf("%s.kind: must be %q", at, kind)
	case !GrantURLAllowed(g.URL):
		return fmt.Errorf("%s.url: must be an absolute https URL", at)
	case g.ExpiresAt.IsZero():
		return fmt.Errorf("%s.expires_at: required", at)
	}
	if _, off := g.ExpiresAt.Zone(); off != 0 {
		return fmt.Errorf("%s.expires_at: must be UTC", at)
	}
	return nil
}

func checkObjectNames[T any](objs map[string]T) error {
	if _, ok := objs[SnapshotTrajectory]; !ok {
		return errors.New("objects.trajectory: required")
	}
	for name := range objs {
		if name != SnapshotTrajectory && name != SnapshotWorkspace {
			return fmt.Errorf("objects: unknown object %q (want trajectory, workspace)", name)
		}
	}
	return nil
}

// DecodeSnapshotSave decodes and validates a save body.
func DecodeSnapshotSave(b []byte) (*SnapshotSaveRequest, error) {
	var r SnapshotSaveRequest
	if err := decodeStrictObject(b, &r); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.ContextID) == "" {
		return nil, errors.New("context_id: required")
	}
	if err := checkObjectNames(r.Objects); err != nil {
		return nil, err
	}
	for name, o := range r.Objects {
		at := "objects." + name
		if !mediaTypeRE.MatchString(o.MediaType) || strings.Contains(o.MediaType, "*") {
			return nil, fmt.Errorf("%s.media_type: must be a concrete type/subtype", at)
		}
		if o.MaxBytes <= 0 {
			return nil, fmt.Errorf("%s.max_bytes: must be positive", at)
		}
		if err := o.Write.check(at+".write", GrantHTTPPut); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// DecodeSnapshotLoad decodes and validates a load body.
func DecodeSnapshotLoad(b []byte) (*SnapshotLoadRequest, error) {
	var r SnapshotLoadRequest
	if err := decodeStrictObject(b, &r); err != nil {
		return nil, err
	}
	if err := checkObjectNames(r.Objects); err != nil {
		return nil, err
	}
	for name, o := range r.Objects {
		at := "objects." + name
		if !mediaTypeRE.MatchString(o.MediaType) || strings.Contains(o.MediaType, "*") {
			return nil, fmt.Errorf("%s.media_type: must be a concrete type/subtype", at)
		}
		if o.MaxBytes <= 0 {
			return nil, fmt.Errorf("%s.max_bytes: must be positive", at)
		}
		if o.SizeBytes != nil && (*o.SizeBytes < 0 || *o.SizeBytes > o.MaxBytes) {
			return nil, fmt.Errorf("%s.size_bytes: must be between 0 and max_bytes", at)
		}
		if o.SHA256 != "" && !sha256RE.MatchString(o.SHA256) {
			return nil, fmt.Errorf("%s.sha256: must be 64 lowercase hex digits", at)
		}
		if err := o.Read.check(at+".read", GrantHTTPGet); err != nil {
			return nil, err
		}
	}
	return &r, nil
}
