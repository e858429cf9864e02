package a2agates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentenv/agentenv/internal/a2aclient"
	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/envgates"
)

// URIInstall is the install extension a card may declare. Our install
// needs no declaration (agents are static binaries copied in), so the
// install gate reports it without requiring it.
const URIInstall = "urn:agentenv:install/v1"

// Type names of the recorder gates.
const (
	TypeInstall  = "verify_a2a_install"
	TypeSnapshot = "verify_a2a_snapshot"
)

// RecorderInfos registers the two gates that record what earlier steps
// of the run exercised, rather than probing an agent themselves:
// verify_a2a_install and verify_a2a_snapshot.
func RecorderInfos() []runner.StepInfo {
	return []runner.StepInfo{
		{Type: TypeInstall, New: func() runner.Step { return new(Install) }},
		{Type: TypeSnapshot, New: func() runner.Step { return new(Snapshot) }},
	}
}

// agentRef declares a2a_agent_id as an agent reference.
func agentRef(version string) []runner.EntityRef {
	return []runner.EntityRef{{Field: "a2a_agent_id", Collection: string(registry.A2AAgents), VersionField: version}}
}

// recordGate writes a recorder gate's verdict like the probe gates do.
func recordGate(rc *runner.RunContext, gate string, details map[string]any, problems []string) {
	rc.SetVerification(gate, envgates.Verdict(gate, details, problems))
	rc.SetMetadataEntry("validated_a2a", gate, details)
	rc.Logger().Info("a2a gate", "gate", gate, "passed", len(problems) == 0)
}

// rowPassed finds row id in verification verifierID: whether it exists
// and whether it passed (result true, or score 1 without a result).
func rowPassed(rc *runner.RunContext, verifierID, id string) (found, passed bool, score float64) {
	v, err := rc.Verification(verifierID)
	if err != nil {
		return false, false, 0
	}
	for _, r := range v.Results {
		if rid, _ := r["id"].(string); rid != id {
			continue
		}
		if b, ok := r["result"].(bool); ok {
			return true, b, v.Score
		}
		s, _ := r["score"].(float64)
		return true, s >= 1, v.Score
	}
	return false, false, v.Score
}

// Install is verify_a2a_install: the agent install_agent started as
// agent_name (default install-test-agent) is deployed, is agent
// a2a_agent_id, and responded to a prompt: row "responded" of verification
// rubric_verifier_id passed, or, without rubric_verifier_id, a probe task
// this step sends reaches an end state. Details go to
// metadata.validated_a2a.a2a_install.
type Install struct {
	A2AAgentID      string `json:"a2a_agent_id"`
	A2AAgentVersion int    `json:"a2a_agent_version,omitempty"`
	AgentName       string `json:"agent_name,omitempty"`
	RubricVerifier  string `json:"rubric_verifier_id,omitempty"`
	// TimeoutSeconds bounds the probe task (no rubric_verifier_id); zero
	// means 120.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
}

var (
	_ runner.Step         = (*Install)(nil)
	_ runner.Validator    = (*Install)(nil)
	_ runner.EntityRefser = (*Install)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Install) EntityRefs() []runner.EntityRef { return agentRef("a2a_agent_version") }

// Validate implements runner.Validator.
func (c *Install) Validate() error {
	switch {
	case c.A2AAgentID == "":
		return runner.Required("a2a_agent_id")
	case c.A2AAgentVersion < 0:
		return runner.Invalid("a2a_agent_version", "must be >= 1, got %d", c.A2AAgentVersion)
	case c.TimeoutSeconds < 0:
		return runner.Invalid("timeout_seconds", "must not be negative, got %v", c.TimeoutSeconds)
	}
	return nil
}

// DefaultInstallAgentName is the agent_name verify_a2a_install checks by
// default (the reference's).
const DefaultInstallAgentName = "install-test-agent"

// Run implements runner.Step.
func (c *Install) Run(ctx context.Context, rc *runner.RunContext) error {
	name := c.AgentName
	if name == "" {
		name = DefaultInstallAgentName
	}
	const gate = "a2a_install"
	details := map[string]any{"agent_name": name, "a2a_agent_id": c.A2AAgentID, "installed_successfully": false,
		"advertised": false, "responded_to_prompt": false, "supported": false}
	entry, err := rc.AgentEntry(name)
	if err != nil {
		recordGate(rc, gate, details, []string{fmt.Sprintf("no agent named %q was installed (an earlier install_agent step failed or did not run): %v", name, err)})
		return nil
	}
	details["installed_successfully"] = true
	var problems []string
	if got, _ := entry["a2a_agent_id"].(string); got != c.A2AAgentID {
		problems = append(problems, fmt.Sprintf("agent %q is %q, not a2a_agent_id %q", name, got, c.A2AAgentID))
	}
	card, _ := json.Marshal(entry["a2a_card"])
	details["advertised"] = a2aclient.Advertises(card, URIInstall)
	if c.RubricVerifier != "" {
		found, ok, score := rowPassed(rc, c.RubricVerifier, "responded")
		details["responded_to_prompt"], details["rubric_score"] = ok, score
		switch {
		case !found:
			problems = append(problems, fmt.Sprintf("verification %q has no row \"responded\"", c.RubricVerifier))
		case !ok:
			problems = append(problems, fmt.Sprintf("the installed agent did not respond (verification %q row \"responded\" failed)", c.RubricVerifier))
		}
	} else {
		api, _ := entry["api_url"].(string)
		timeout := 120 * time.Second
		if c.TimeoutSeconds > 0 {
			timeout = time.Duration(c.TimeoutSeconds * float64(time.Second))
		}
		a := &agent{name: name, c: a2aclient.New(api, &http.Client{Timeout: 60 * time.Second}), timeout: timeout}
		// Any end state is an answer, as for verify_a2a_core_protocol: an
		// agent may refuse a probe it has no instructions for.
		t, err := probeTask(ctx, a)
		if err != nil {
			problems = append(problems, "the installed agent did not answer a prompt: "+err.Error())
		} else {
			details["responded_to_prompt"], details["task_state"] = true, t.Status.State
		}
	}
	details["supported"] = len(problems) == 0
	recordGate(rc, gate, details, problems)
	return nil
}

// Snapshot is verify_a2a_snapshot: it records whether the snapshot
// extension round-tripped in the run. Earlier steps plant a fact in an
// agent, save it with snapshot_agent_state, load it into a second agent,
// ask for the fact back and grade the answer; this step reads that grade
// (row rubric_criterion_id of verification rubric_verifier_id), checks a
// snapshot was recorded (metadata.agent_snapshots) and that some
// deployed agent advertises the extension. When none does, the gate is
// skipped (the extension is optional). Details go to
// metadata.validated_a2a.a2a_snapshot.
type Snapshot struct {
	A2AAgentID      string `json:"a2a_agent_id"`
	RubricVerifier  string `json:"rubric_verifier_id"`
	RubricCriterion string `json:"rubric_criterion_id"`
}

var (
	_ runner.Step         = (*Snapshot)(nil)
	_ runner.Validator    = (*Snapshot)(nil)
	_ runner.EntityRefser = (*Snapshot)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *Snapshot) EntityRefs() []runner.EntityRef { return agentRef("") }

// Validate implements runner.Validator.
func (c *Snapshot) Validate() error {
	switch {
	case c.A2AAgentID == "":
		return runner.Required("a2a_agent_id")
	case c.RubricVerifier == "":
		return runner.Required("rubric_verifier_id")
	case c.RubricCriterion == "":
		return runner.Required("rubric_criterion_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *Snapshot) Run(_ context.Context, rc *runner.RunContext) error {
	const gate = "a2a_snapshot"
	advertised := false
	for _, a := range rc.Agents() {
		e, err := rc.AgentEntry(a.AgentName)
		if err != nil {
			continue
		}
		card, _ := json.Marshal(e["a2a_card"])
		advertised = advertised || a2aclient.Advertises(card, protocol.URISnapshot)
	}
	snaps, _ := rc.Metadata("agent_snapshots")
	list, _ := snaps.([]any)
	save := len(list) > 0
	_, recall, _ := rowPassed(rc, c.RubricVerifier, c.RubricCriterion)
	details := map[string]any{"a2a_agent_id": c.A2AAgentID, "extension_advertised": advertised, "save": save, "load": recall,
		"recall": recall, "supported": advertised && save && recall,
		"methods": map[string]any{"save": map[string]any{"supported": save}, "load": map[string]any{"supported": recall}}}
	if !advertised {
		details["skipped"] = "no deployed agent advertises " + protocol.URISnapshot
		rc.SetMetadataEntry("validated_a2a", gate, details)
		rc.SetVerification(gate, runner.Verification{Score: 1, Results: []runner.Row{
			{"gate": gate, "result": true, "score": 1.0, "skipped": true, "justification": details["skipped"]}}})
		return nil
	}
	var problems []string
	if !save {
		problems = append(problems, "no agent snapshot was recorded (metadata.agent_snapshots is empty)")
	}
	if !recall {
		problems = append(problems, fmt.Sprintf("the loaded agent did not recall the planted fact (verification %q row %q did not pass)",
			c.RubricVerifier, c.RubricCriterion))
	}
	recordGate(rc, gate, details, problems)
	return nil
}
