package envoutcomeverifier

import "github.com/agentenv/agentenv/runner"

var _ runner.EntityRefser = (*Config)(nil)

// EntityRefs implements runner.EntityRefser: the deployed env, and the
// verifier program's file artifact (checked at preflight, rewritten to the
// bundle's id in bundle runs).
func (c *Config) EntityRefs() []runner.EntityRef {
	return []runner.EntityRef{runner.EnvRef("env_id"), runner.ArtifactRef("file_artifact_id", "file_artifact_version")}
}
