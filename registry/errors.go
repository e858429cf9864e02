package registry

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every store wraps one of them so callers branch with
// errors.Is, whatever the backend.
var (
	// ErrNotFound: no document, version, record or object under that name.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a write-once object or a record key is already taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: a put under an existing id with another type, an expected
	// version that is no longer next, or a compare-and-swap that lost.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: malformed input (id, reference, key, collection, document).
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable: the backend cannot be reached (database down, disk
	// unreadable). Retrying later may succeed.
	ErrUnavailable = errors.New("store unavailable")
	// ErrUnresolved: an env:/secret: reference has no value and no default.
	ErrUnresolved = errors.New("unresolved reference")
	// ErrCorrupt: stored bytes do not match the digest their document
	// records. Never retried, never served.
	ErrCorrupt = errors.New("stored bytes do not match their digest")
)

// NotFoundError names what was looked up. It matches ErrNotFound.
// Its message follows the reference: "<Kind> <id> version=<v> not found".
type NotFoundError struct {
	Kind    string // "Task", "Env", "Artifact", "object", ... (from the collection)
	ID      string // id, record key or object key
	Version int    // 0: latest / not versioned
}

func (e *NotFoundError) Error() string {
	if e.Version > 0 {
		return fmt.Sprintf("%s %s version=%d not found", e.Kind, e.ID, e.Version)
	}
	if e.Kind == "object" || e.Version < 0 {
		return fmt.Sprintf("%s %s not found", e.Kind, e.ID)
	}
	return fmt.Sprintf("%s %s version=latest not found", e.Kind, e.ID)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// InvalidError names the field or value that is malformed. It matches
// ErrInvalid.
type InvalidError struct {
	Field  string // "id", "ref", "key", "collection", "document", ...
	Value  string // the offending value (never a secret)
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, value, reason string) error {
	return &InvalidError{Field: field, Value: value, Reason: reason}
}
