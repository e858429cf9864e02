package registry

import (
	"crypto/rand"
	"strconv"
	"strings"
	"time"
)

// Ref names a document: an id and a version (0 = latest).
type Ref struct {
	ID      string `json:"id"`
	Version int    `json:"version,omitempty"`
}

// String renders "id" or "id:version".
func (r Ref) String() string {
	if r.Version > 0 {
		return r.ID + ":" + strconv.Itoa(r.Version)
	}
	return r.ID
}

// MaxIDBytes bounds an id.
const MaxIDBytes = 4096

// LocalPrefix starts the ids that live only in the @local store.
const LocalPrefix = "@local/"

// ParseRef parses a CLI reference: "id", "id:N" or "id:latest".
// The version part must be a positive integer; anything else is an
// *InvalidError naming the reference.
func ParseRef(s string) (Ref, error) {
	id, ver, hasVer := strings.Cut(s, ":")
	if hasVer && strings.Contains(ver, ":") {
		return Ref{}, invalid("ref", s, "more than one ':' (want id or id:version)")
	}
	if err := ValidateID(id); err != nil {
		return Ref{}, invalid("ref", s, err.(*InvalidError).Reason)
	}
	if !hasVer || ver == "latest" {
		return Ref{ID: id}, nil
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 || strings.HasPrefix(ver, "+") {
		return Ref{}, invalid("ref", s, "version must be a positive integer or 'latest'")
	}
	return Ref{ID: id, Version: n}, nil
}

// IsLocalID reports whether id belongs to the @local store.
func IsLocalID(id string) bool { return strings.HasPrefix(id, LocalPrefix) }

// ValidateID checks an entity id: non-empty, at most
// 4096 bytes, segments of letters, digits, space and ". _ - ~ @ ( ) + , &"
// separated by "/", no empty, "." or ".." segment, no ':'. Ids starting with
// '@' are reserved: only "@local/..." is accepted. A bare id spelled like an
// encoded local id ("local/...") is refused.
func ValidateID(id string) error {
	switch {
	case id == "":
		return invalid("id", id, "empty")
	case len(id) > MaxIDBytes:
		return invalid("id", id[:32]+"...", "longer than 4096 bytes")
	case strings.HasPrefix(id, "@") && !IsLocalID(id):
		return invalid("id", id, "ids starting with '@' are reserved (only @local/... is accepted)")
	case strings.HasPrefix(id, "local/"):
		return invalid("id", id, "bare ids may not start with local/ (reserved for encoded @local ids)")
	}
	rest := id
	if IsLocalID(id) {
		rest = strings.TrimPrefix(id, LocalPrefix)
		if rest == "" {
			return invalid("id", id, "empty after @local/")
		}
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return invalid("id", id, "empty, '.' or '..' path segment")
		}
		if strings.TrimSpace(seg) != seg {
			return invalid("id", id, "segment with leading or trailing space")
		}
		for _, r := range seg {
			if !idRune(r) {
				return invalid("id", id, "character "+strconv.QuoteRune(r)+" not allowed")
			}
		}
	}
	return nil
}

func idRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune(" ._-~@()+,&", r)
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// RandomSuffix returns n characters of [a-z0-9] from crypto/rand.
func RandomSuffix(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// NewInstanceID returns "<owner>-<8 chars [a-z0-9]>", the id format of
// env_instances, a2a_agent_instances and task_instances
// (e.g. "@local/agentenv-framework/hello/hello-5aii6zzz").
func NewInstanceID(owner string) string { return owner + "-" + RandomSuffix(InstanceSuffixLen) }

// InstanceSuffixLen is the length of NewInstanceID's random tail.
const InstanceSuffixLen = 8

// Time formats used in stored documents.
const (
	// TimeISO is created_at_utc of versioned documents (Python isoformat()).
	TimeISO = "2006-01-02T15:04:05.000000+00:00"
	// TimeMinute is created_at_utc / expires_at_utc of instance records
	// ("%Y-%m-%d %H:%M UTC").
	TimeMinute = "2006-01-02 15:04 UTC"
)

// FormatISO formats t in UTC as TimeISO.
func FormatISO(t time.Time) string { return t.UTC().Format(TimeISO) }

// FormatMinute formats t in UTC as TimeMinute.
func FormatMinute(t time.Time) string { return t.UTC().Format(TimeMinute) }
