package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Mode is how a sandbox is isolated: a VM-like work area or a container.
type Mode string

const (
	// ModeVM is a machine-like sandbox; locally it is a host work folder.
	ModeVM Mode = "vm"
	// ModeContainer is a single container running an image.
	ModeContainer Mode = "container"
)

// UnmarshalText accepts only the two known modes.
func (m *Mode) UnmarshalText(b []byte) error {
	switch Mode(b) {
	case ModeVM, ModeContainer:
		*m = Mode(b)
		return nil
	}
	return fmt.Errorf("sandbox_mode must be %q or %q, got %q", ModeVM, ModeContainer, string(b))
}

// Sentinel errors callers branch on.
var (
	// ErrNotSupported is returned when a provider lacks an ability (for
	// example container mode without a Docker engine).
	ErrNotSupported = errors.New("not supported by this sandbox provider")
	// ErrTerminated is returned by operations on a terminated sandbox.
	ErrTerminated = errors.New("sandbox is terminated")
	// ErrNotFound is returned when a handle names a sandbox that is gone.
	ErrNotFound = errors.New("sandbox not found")
	// ErrInvalidSpec wraps every Spec validation failure.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
)

// NetworkPolicy limits where a sandbox may connect.
type NetworkPolicy struct {
	Mode       string   `json:"mode"` // "allow_all" (default) or "allowlist"
	AllowHosts []string `json:"allow_hosts,omitempty"`
	AllowCIDRs []string `json:"allow_cidrs,omitempty"`
}

// IsAllowAll reports whether the policy is the zero or allow_all policy.
func (p NetworkPolicy) IsAllowAll() bool { return p.Mode == "" || p.Mode == "allow_all" }

// Validate applies the network-policy rules: allow_all with entries is invalid, a bare
// "*" is invalid, and the mode must be known.
func (p NetworkPolicy) Validate() error {
	switch p.Mode {
	case "", "allow_all":
		if len(p.AllowHosts)+len(p.AllowCIDRs) > 0 {
			return fmt.Errorf("network_policy: mode allow_all takes no allow_hosts or allow_cidrs")
		}
	case "allowlist":
		for _, h := range append(append([]string{}, p.AllowHosts...), p.AllowCIDRs...) {
			if strings.TrimSpace(h) == "*" {
				return fmt.Errorf("network_policy: a bare %q is not a valid entry", "*")
			}
		}
	default:
		return fmt.Errorf("network_policy.mode must be allow_all or allowlist, got %q", p.Mode)
	}
	return nil
}

// Spec describes a sandbox to create. Zero values take the defaults
// (cpu 2, 8192 MB, 10 GB, 7200 s).
type Spec struct {
	Name          string            // the sandbox_name in the run context (informational)
	Mode          Mode              // required
	Image         string            // container mode: the image to run
	Port          int               // container mode: the port to publish
	Env           map[string]string // environment of the sandbox's processes
	CPU           float64
	MemoryMB      int
	DiskGB        float64
	TTL           time.Duration
	ExposedPorts  []int             // VM mode: ports to tunnel to the host
	Labels        map[string]string // attribution labels
	NetworkPolicy NetworkPolicy
}

// Validate checks the fields every provider relies on.
func (s Spec) Validate() error {
	switch s.Mode {
	case ModeVM, ModeContainer:
	case "":
		return fmt.Errorf("%w: mode is required", ErrInvalidSpec)
	default:
		return fmt.Errorf("%w: unknown mode %q", ErrInvalidSpec, s.Mode)
	}
	if s.Mode == ModeContainer && s.Image == "" {
		return fmt.Errorf("%w: container mode needs an image", ErrInvalidSpec)
	}
	for _, p := range s.ExposedPorts {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("%w: exposed port %d out of range", ErrInvalidSpec, p)
		}
	}
	if err := s.NetworkPolicy.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	return nil
}

// Capabilities is what a provider claims; sandboxtest checks the claims
// against behaviour.
type Capabilities struct {
	VM            bool // ModeVM sandboxes can be created
	Container     bool // ModeContainer sandboxes can be created
	NetworkPolicy bool // policies other than allow_all are enforced
	Reconnect     bool // the provider implements Reconnector
}

// Handle is the persisted form of a sandbox, enough for a Reconnector to
// rebuild it in another process.
type Handle struct {
	Version int             `json:"version"`
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	State   json.RawMessage `json:"state,omitempty"`
}

// ExecResult is the outcome of a command that ran. A non-zero exit code is
// not an error.
type ExecResult struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
}

// ExecOptions tunes one Exec call; nil means none.
type ExecOptions struct {
	Env   map[string]string // added to the sandbox environment
	Stdin io.Reader
	Dir   string // sandbox path to run in; "" is the sandbox's default (/app)
}

// Provider creates sandboxes of one type.
type Provider interface {
	// Type is the provider's name, equal to its [sandbox.providers.<name>] key.
	Type() string
	Capabilities() Capabilities
	// CreateSandbox creates a sandbox; a Mode the provider cannot serve
	// returns an error wrapping ErrNotSupported and creates nothing.
	CreateSandbox(ctx context.Context, s Spec) (Sandbox, error)
	// Close releases provider resources; it does not terminate sandboxes.
	Close() error
}

// Reconnector is implemented by providers that can rebuild a sandbox from a
// Handle. A gone sandbox returns an error wrapping ErrNotFound.
type Reconnector interface {
	GetSandbox(ctx context.Context, h Handle) (Sandbox, error)
}

// Sweeper is implemented by providers that can find their sandboxes by
// the Spec.Labels they were created with. It is how a sandbox whose creator
// died before recording its handle is still torn down: the next attempt
// sweeps the labels the dead one created under.
type Sweeper interface {
	// Sweep terminates every sandbox of this provider whose labels include
	// all of labels and returns their ids. Empty labels are an error (they
	// would match everything).
	Sweep(ctx context.Context, labels map[string]string) ([]string, error)
}

// ErrNoSweepLabels is returned by Sweep given no labels.
var ErrNoSweepLabels = errors.New("sweep needs at least one label")

// HasLabels reports whether have includes every key and value of want.
func HasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Sandbox is one live sandbox. Paths are sandbox paths: "/app/x" is the
// sandbox's /app, relative paths are relative to /app.
type Sandbox interface {
	ID() string
	Type() string
	Mode() Mode
	TunnelURLs() map[int]string
	NetworkPolicy() NetworkPolicy
	Handle() Handle

	// Exec runs argv and waits for it. Cancelling ctx kills the command and
	// everything it started, and returns ctx's error.
	Exec(ctx context.Context, argv []string, o *ExecOptions) (ExecResult, error)
	// WriteFile creates or replaces a file, making parent folders.
	WriteFile(ctx context.Context, path string, r io.Reader, perm fs.FileMode) error
	// ReadFile returns a file's content; a missing file wraps fs.ErrNotExist.
	// A symlink is followed only within the sandbox (the work folder of a
	// local sandbox, the container's own file system); one that leads out
	// fails with a *LinkError, and no link is ever read as an empty file.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Stat describes a path; a missing path wraps fs.ErrNotExist.
	Stat(ctx context.Context, path string) (fs.FileInfo, error)
	// CopyOut calls fn with files below the sandbox folder root: the paths
	// o names, or every file under root (see CopyOutOptions). Symlinks are
	// resolved with root as the boundary, never by the host: a link to a
	// file inside root is copied under the link's path with the target's
	// content, a link to a folder inside root is walked as that folder, and
	// a link that resolves outside root, dangles or loops fails the copy
	// with a *LinkError naming the link and its target; so do sockets,
	// FIFOs and devices (ErrNotRegular). Providers implement it with
	// WalkTree. A missing root wraps fs.ErrNotExist.
	CopyOut(ctx context.Context, root string, o *CopyOutOptions, fn func(File) error) error
	// Terminate stops everything and removes what the sandbox created. It is
	// idempotent: a second call returns nil.
	Terminate(ctx context.Context) error
}
