package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// SandboxProvider is what the runner needs from a sandbox backend; see
// package runner/sandbox for the contract and runner/sandboxtest for the
// suite every implementation passes.
type SandboxProvider = sandbox.Provider

// Services is what steps reach through the run context: the stores and the
// sandbox providers. Nil stores are allowed; a step that needs one fails
// with ErrNoStore.
type Services struct {
	Documents registry.DocumentStore
	Objects   registry.ObjectStore
	// Artifacts reads and writes artifacts over Documents and Objects; nil
	// means one built from them with default options.
	Artifacts *artifact.Store
	// Sandboxes maps provider names ("local") to providers.
	Sandboxes map[string]SandboxProvider
	// DefaultSandbox is the provider spec used when neither the step nor
	// user_overrides names one; "" means "local".
	DefaultSandbox string
	// SandboxAliases maps a sandbox spec name that is not a provider to
	// the provider that serves it: "process" (the env and agent backend
	// that runs workloads as local processes) → "local" work folders, so
	// --sandbox process also covers a task's bare sandboxes. Nil: none.
	SandboxAliases map[string]string
	// Deployer deploys envs and agents (deploy_env, deploy_agent); nil
	// makes those steps fail with ErrNoStore.
	Deployer *envdeploy.Deployer
	// HumanA2AURL is the configured human endpoint base ([conversations]
	// default_human_a2a_url, which $AGENT_ENV_HUMAN_A2A_URL overrides when
	// the config is loaded); deploy_human_agent uses it when the step
	// gives no a2a_url. "" means the environment variable is read
	// directly (services built without a config).
	HumanA2AURL string
	Logger      *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ErrNoStore is returned by steps that need a store the run was not given.
var ErrNoStore = errors.New("store not configured")

// ArtifactStore returns Artifacts, or one over Documents and Objects; it
// fails with ErrNoStore when either is missing.
func (s *Services) ArtifactStore() (*artifact.Store, error) {
	if s.Artifacts != nil {
		return s.Artifacts, nil
	}
	if s.Documents == nil || s.Objects == nil {
		return nil, fmt.Errorf("artifacts need the document and object stores: %w", ErrNoStore)
	}
	return artifact.New(s.Documents, s.Objects, nil), nil
}

func (s *Services) now() time.Time {
	if s == nil || s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Services) logger() *slog.Logger {
	if s == nil || s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// ErrUnknownProvider is matched when a sandbox spec names no configured
// provider.
var ErrUnknownProvider = errors.New("unknown sandbox provider")

// CreateSandbox creates a sandbox through spec, a provider name or a comma
// list tried in order (a fallback chain). It checks the provider's
// Capabilities first, so an unsupported mode fails without creating
// anything, and terminates a sandbox whose type differs from the provider
// name it was configured under.
func (s *Services) CreateSandbox(ctx context.Context, spec string, sp sandbox.Spec) (sandbox.Sandbox, error) {
	if spec == "" {
		spec = s.DefaultSandbox
	}
	if spec == "" {
		spec = "local"
	}
	names := strings.Split(spec, ",")
	var errs []error
	for _, name := range names {
		name = strings.TrimSpace(name)
		p, ok := s.Sandboxes[name]
		if alias, isAlias := s.SandboxAliases[name]; !ok && isAlias {
			name = alias
			p, ok = s.Sandboxes[name]
		}
		if !ok {
			return nil, fmt.Errorf("%w %q (configured: %s)", ErrUnknownProvider, name, strings.Join(s.providerNames(), ", "))
		}
		caps := p.Capabilities()
		if (sp.Mode == sandbox.ModeVM && !caps.VM) || (sp.Mode == sandbox.ModeContainer && !caps.Container) {
			errs = append(errs, fmt.Errorf("%s: %s mode: %w", name, sp.Mode, sandbox.ErrNotSupported))
			continue
		}
		sb, err := p.CreateSandbox(ctx, sp)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if sb.Type() != name {
			_ = sb.Terminate(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("sandbox provider %q created a sandbox of type %q: the provider's type must equal its configured name", name, sb.Type())
		}
		return sb, nil
	}
	if len(names) == 1 {
		return nil, errs[0]
	}
	return nil, &ChainError{Errs: errs}
}

func (s *Services) providerNames() []string {
	out := make([]string, 0, len(s.Sandboxes))
	for k := range s.Sandboxes {
		out = append(out, k)
	}
	return out
}

// Reconnect rebuilds a sandbox from its handle through the provider named
// by its type.
func (s *Services) Reconnect(ctx context.Context, h sandbox.Handle) (sandbox.Sandbox, error) {
	p, ok := s.Sandboxes[h.Type]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, h.Type)
	}
	r, ok := p.(sandbox.Reconnector)
	if !ok {
		return nil, fmt.Errorf("provider %q cannot reconnect: %w", h.Type, sandbox.ErrNotSupported)
	}
	return r.GetSandbox(ctx, h)
}

// Sweep terminates, on every provider that can find sandboxes by label
// (sandbox.Sweeper), the sandboxes created with all of labels, and returns
// their ids. It goes on past a provider's error.
func (s *Services) Sweep(ctx context.Context, labels map[string]string) ([]string, error) {
	var ids []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.Sandboxes)) {
		sw, ok := s.Sandboxes[name].(sandbox.Sweeper)
		if !ok {
			continue
		}
		got, err := sw.Sweep(ctx, labels)
		ids = append(ids, got...)
		if err != nil {
			errs = append(errs, fmt.Errorf("provider %q: %w", name, err))
		}
	}
	return ids, errors.Join(errs...)
}

// ChainError is returned when every provider of a fallback chain failed.
// Its message stays on one line; Unwrap exposes each provider's error.
type ChainError struct{ Errs []error }

func (e *ChainError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return fmt.Sprintf("All %d providers failed: %s", len(e.Errs), strings.Join(parts, "; "))
}

func (e *ChainError) Unwrap() []error { return e.Errs }
