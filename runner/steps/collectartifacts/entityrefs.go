package collectartifacts

import "github.com/agentenv/agentenv/runner"

var _ runner.EntityRefser = (*Config)(nil)

// EntityRefs implements runner.EntityRefser: the env whose files are
// collected.
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id")}
}
