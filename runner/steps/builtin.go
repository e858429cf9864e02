// Package steps lists the built-in step types. Each type is one package
// under runner/steps/ (a config struct with JSON tags, Validate, Run and
// its entity references) and one line below, so the whole set reads in
// one place and tests can build registries of their own.
package steps

import (
	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps/a2agates"
	"github.com/agentenv/agentenv/runner/steps/addskills"
	"github.com/agentenv/agentenv/runner/steps/aggregateverifiers"
	"github.com/agentenv/agentenv/runner/steps/applyserverconfig"
	"github.com/agentenv/agentenv/runner/steps/buildmcpcli"
	"github.com/agentenv/agentenv/runner/steps/collectartifacts"
	"github.com/agentenv/agentenv/runner/steps/deployagent"
	"github.com/agentenv/agentenv/runner/steps/deployenv"
	"github.com/agentenv/agentenv/runner/steps/deployhumanagent"
	"github.com/agentenv/agentenv/runner/steps/deploysandbox"
	"github.com/agentenv/agentenv/runner/steps/dockercontainer"
	"github.com/agentenv/agentenv/runner/steps/envgates"
	"github.com/agentenv/agentenv/runner/steps/envoutcomeverifier"
	"github.com/agentenv/agentenv/runner/steps/installagent"
	"github.com/agentenv/agentenv/runner/steps/loadartifact"
	"github.com/agentenv/agentenv/runner/steps/modifyenvtoolaccess"
	"github.com/agentenv/agentenv/runner/steps/peeragents"
	"github.com/agentenv/agentenv/runner/steps/promptagent"
	"github.com/agentenv/agentenv/runner/steps/promptverifier"
	"github.com/agentenv/agentenv/runner/steps/registeragenttriggers"
	"github.com/agentenv/agentenv/runner/steps/registerenvtriggers"
	"github.com/agentenv/agentenv/runner/steps/resetenv"
	"github.com/agentenv/agentenv/runner/steps/review"
	"github.com/agentenv/agentenv/runner/steps/rubricsverifier"
	"github.com/agentenv/agentenv/runner/steps/runcode"
	"github.com/agentenv/agentenv/runner/steps/snapshotagentstate"
	"github.com/agentenv/agentenv/runner/steps/snapshotenv"
	"github.com/agentenv/agentenv/runner/steps/syncenvclock"
	"github.com/agentenv/agentenv/runner/steps/teardownsandboxes"
	"github.com/agentenv/agentenv/runner/steps/universegates"
	"github.com/agentenv/agentenv/runner/steps/verifysandbox"
)

// Builtin returns a fresh registry holding every built-in step type.
func Builtin() *runner.StepRegistry {
	r := runner.NewStepRegistry()
	r.Register(deploysandbox.StepInfo())
	r.Register(loadartifact.StepInfo())
	r.Register(verifysandbox.StepInfo())
	r.Register(promptverifier.StepInfo())
	r.Register(aggregateverifiers.StepInfo())
	r.Register(teardownsandboxes.StepInfo())
	r.Register(deployenv.StepInfo())
	r.Register(deployagent.StepInfo())
	r.Register(promptagent.StepInfo())
	r.Register(envoutcomeverifier.StepInfo())
	r.Register(peeragents.StepInfo())
	r.Register(syncenvclock.StepInfo())
	r.Register(registerenvtriggers.StepInfo())
	r.Register(modifyenvtoolaccess.StepInfo())
	r.Register(snapshotenv.StepInfo())
	r.Register(resetenv.StepInfo())
	r.Register(rubricsverifier.StepInfo())
	r.Register(collectartifacts.StepInfo())
	r.Register(applyserverconfig.StepInfo())
	r.Register(review.StepInfo())
	r.Register(runcode.StepInfo())
	r.Register(dockercontainer.RunStepInfo())
	r.Register(dockercontainer.TestsStepInfo())
	r.Register(envgates.EnvCardInfo())
	r.Register(envgates.EnvCoreProtocolInfo())
	r.Register(envgates.MCPToolSchemaInfo())
	r.Register(envgates.GateAggregatorInfo())
	r.Register(envgates.SpecConformanceInfo())
	r.Register(envgates.EnvAssessmentInfo())
	r.Register(universegates.RoundtripInfo())
	r.Register(universegates.CombineInfo())
	r.Register(installagent.StepInfo())
	r.Register(addskills.StepInfo())
	r.Register(deployhumanagent.StepInfo())
	r.Register(registeragenttriggers.StepInfo())
	r.Register(snapshotagentstate.StepInfo())
	r.Register(buildmcpcli.StepInfo())
	for _, i := range a2agates.Infos() {
		r.Register(i)
	}
	for _, i := range a2agates.RecorderInfos() {
		r.Register(i)
	}
	return r
}
