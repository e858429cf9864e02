package registry

import (
	"context"
	"os"
)

// SecretStore looks secrets up by name.
//
// The local implementation (registry/envsecret) reads the process
// environment first, then an optional flat JSON/YAML file. Values must never
// be logged or stored; use registry/redact on anything persisted.
type SecretStore interface {
	// Get returns the value of name and whether it exists. err is for a
	// backend failure, never for a missing name.
	Get(ctx context.Context, name string) (value string, ok bool, err error)
}

// ReferenceError says why an env:/secret: reference did not resolve. It
// matches ErrUnresolved. It names the reference, never a value.
type ReferenceError struct {
	Ref    string // as written, e.g. "secret:LITELLM_API_KEY"
	Reason string
	Err    error // backend failure, if any
}

func (e *ReferenceError) Error() string {
	if e.Err != nil {
		return "cannot resolve " + e.Ref + ": " + e.Reason + ": " + e.Err.Error()
	}
	return "cannot resolve " + e.Ref + ": " + e.Reason
}

// Is makes errors.Is(err, ErrUnresolved) true.
func (e *ReferenceError) Is(target error) bool { return target == ErrUnresolved }

// Unwrap returns the backend error.
func (e *ReferenceError) Unwrap() error { return e.Err }

// IsReference reports whether s is written as a reference ("env:NAME",
// "secret:KEY", with an optional "?default").
func IsReference(s string) bool {
	scheme, _, _ := splitReference(s)
	return scheme != ""
}

func splitReference(s string) (scheme, name string, def *string) {
	for _, p := range []string{"env:", "secret:"} {
		if len(s) >= len(p) && s[:len(p)] == p {
			scheme, rest := p[:len(p)-1], s[len(p):]
			for i := 0; i < len(rest); i++ {
				if rest[i] == '?' {
					d := rest[i+1:]
					return scheme, rest[:i], &d
				}
			}
			return scheme, rest, nil
		}
	}
	return "", "", nil
}

// Resolve returns the value of a config string: plain strings are returned
// as they are; "env:NAME" reads the process environment (lookupEnv, or
// os.LookupEnv when nil), "secret:KEY" asks secrets; "?default" is used when
// the name has no value. A reference without value or default is a
// *ReferenceError. secrets may be nil (then secret: references fail, as for
// the [stores.secret] table itself).
func Resolve(ctx context.Context, s string, secrets SecretStore, lookupEnv func(string) (string, bool)) (string, error) {
	scheme, name, def := splitReference(s)
	if scheme == "" {
		return s, nil
	}
	if name == "" {
		return "", &ReferenceError{Ref: s, Reason: "empty name"}
	}
	var (
		v   string
		ok  bool
		err error
	)
	switch scheme {
	case "env":
		if lookupEnv == nil {
			lookupEnv = os.LookupEnv
		}
		v, ok = lookupEnv(name)
		ok = ok && v != ""
	case "secret":
		if secrets == nil {
			return "", &ReferenceError{Ref: s, Reason: "no secret store here (secret: cannot be used in [stores.secret])"}
		}
		v, ok, err = secrets.Get(ctx, name)
		if err != nil {
			return "", &ReferenceError{Ref: s, Reason: "secret store failed", Err: err}
		}
	}
	if ok {
		return v, nil
	}
	if def != nil {
		return *def, nil
	}
	if scheme == "env" {
		return "", &ReferenceError{Ref: s, Reason: "environment variable " + name + " is not set and no ?default is given"}
	}
	return "", &ReferenceError{Ref: s, Reason: "secret " + name + " is not in the secret store and no ?default is given"}
}
