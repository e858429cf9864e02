// Package deploysandbox is the deploy_sandbox step: create a bare sandbox
// (a VM-like work area, or a container running an image) and record it in
// deployed_sandboxes[] under its sandbox_name.
package deploysandbox

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Type is the step type name.
const Type = "deploy_sandbox"

// StepInfo registers the step.
func StepInfo() runner.StepInfo {
	return runner.StepInfo{Type: Type, New: func() runner.Step { return new(Config) }}
}

// Config is the step's fields.
type Config struct {
	SandboxName   string                 `json:"sandbox_name"`
	SandboxMode   string                 `json:"sandbox_mode"` // "vm" | "container"
	Image         string                 `json:"image,omitempty"`
	CPU           *float64               `json:"cpu,omitempty"`          // 2.0
	MemoryMB      *int                   `json:"memory_mb,omitempty"`    // 8192
	DiskSizeGB    *float64               `json:"disk_size_gb,omitempty"` // 10
	TTLSeconds    *int                   `json:"ttl_seconds,omitempty"`  // 7200
	ExposedPorts  []int                  `json:"exposed_ports,omitempty"`
	BootMode      string                 `json:"boot_mode,omitempty"`
	Port          int                    `json:"port,omitempty"`
	EnvVars       map[string]string      `json:"env_vars,omitempty"`
	SandboxType   string                 `json:"sandbox_type,omitempty"` // overridden by user_overrides.sandbox
	NetworkPolicy *sandbox.NetworkPolicy `json:"network_policy,omitempty"`
	Metadata      map[string]any         `json:"metadata,omitempty"`
}

var (
	_ runner.Step      = (*Config)(nil)
	_ runner.Validator = (*Config)(nil)
)

// Validate implements runner.Validator.
func (c *Config) Validate() error {
	if c.SandboxName == "" {
		return runner.Required("sandbox_name")
	}
	switch sandbox.Mode(c.SandboxMode) {
	case sandbox.ModeVM:
		if c.Port != 0 {
			return runner.Invalid("port", "is for container mode (with image)")
		}
	case sandbox.ModeContainer:
		if c.Image == "" {
			return runner.Invalid("image", "is required when sandbox_mode is container")
		}
	case "":
		return runner.Required("sandbox_mode")
	default:
		return runner.Invalid("sandbox_mode", "must be vm or container, got %q", c.SandboxMode)
	}
	if c.TTLSeconds != nil && *c.TTLSeconds <= 0 {
		return runner.Invalid("ttl_seconds", "must be positive")
	}
	if c.CPU != nil && *c.CPU <= 0 {
		return runner.Invalid("cpu", "must be positive")
	}
	if c.MemoryMB != nil && *c.MemoryMB <= 0 {
		return runner.Invalid("memory_mb", "must be positive")
	}
	for _, p := range c.ExposedPorts {
		if p <= 0 || p > 65535 {
			return runner.Invalid("exposed_ports", "port %d out of range", p)
		}
	}
	if c.NetworkPolicy != nil {
		if err := c.NetworkPolicy.Validate(); err != nil {
			return runner.Invalid("network_policy", "%v", err)
		}
	}
	return nil
}

func (c *Config) spec() sandbox.Spec {
	s := sandbox.Spec{Name: c.SandboxName, Mode: sandbox.Mode(c.SandboxMode), Image: c.Image, Port: c.Port,
		Env: c.EnvVars, CPU: 2, MemoryMB: 8192, DiskGB: 10, TTL: 7200 * time.Second, ExposedPorts: c.ExposedPorts}
	if c.CPU != nil {
		s.CPU = *c.CPU
	}
	if c.MemoryMB != nil {
		s.MemoryMB = *c.MemoryMB
	}
	if c.DiskSizeGB != nil {
		s.DiskGB = *c.DiskSizeGB
	}
	if c.TTLSeconds != nil {
		s.TTL = time.Duration(*c.TTLSeconds) * time.Second
	}
	if c.NetworkPolicy != nil {
		s.NetworkPolicy = *c.NetworkPolicy
	}
	return s
}

// Run implements runner.Step.
func (c *Config) Run(ctx context.Context, rc *runner.RunContext) error {
	if _, _, err := rc.Sandbox(ctx, c.SandboxName); err == nil {
		return fmt.Errorf("sandbox_name %q: %w", c.SandboxName, runner.ErrDuplicateName)
	}
	spec := c.spec()
	sb, err := rc.Services().CreateSandbox(ctx, cmp.Or(rc.UserOverride("sandbox"), c.SandboxType), spec)
	if err != nil {
		return fmt.Errorf("deploy sandbox %q: %w", c.SandboxName, err)
	}
	now := time.Now()
	tunnels := map[string]string{}
	for port, u := range sb.TunnelURLs() {
		tunnels[strconv.Itoa(port)] = u
	}
	h := sb.Handle()
	ds := runner.DeployedSandbox{
		SandboxName: c.SandboxName, SandboxID: sb.ID(), SandboxMode: sb.Mode(), SandboxType: sb.Type(),
		TunnelURLs: tunnels, InstanceID: sb.ID(), CreatedAtUTC: registry.FormatMinute(now),
		ExpiresAtUTC: registry.FormatMinute(now.Add(spec.TTL)), NetworkPolicy: sb.NetworkPolicy(), Handle: &h,
	}
	if ds.NetworkPolicy.Mode == "" {
		ds.NetworkPolicy.Mode = "allow_all"
	}
	if err := rc.AddSandbox(ds, sb); err != nil {
		_ = sb.Terminate(context.WithoutCancel(ctx))
		return err
	}
	rc.Logger().Info("sandbox deployed", "sandbox_name", c.SandboxName, "sandbox_id", sb.ID(), "sandbox_type", sb.Type())
	return nil
}

var _ runner.SandboxUser = (*Config)(nil)

// SandboxProvider implements runner.SandboxUser: user_overrides.sandbox,
// else sandbox_type.
func (c *Config) SandboxProvider(rc *runner.RunContext) (string, bool) {
	return cmp.Or(rc.UserOverride("sandbox"), c.SandboxType), true
}
