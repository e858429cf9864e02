package steps_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// The container steps refuse bad fields when the task is parsed, naming
// the step and the field: missing required fields, wrong types, values
// out of their set.
func TestContainerStepsBadInput(t *testing.T) {
	const ctx = `"sandbox_name":"b","docker_context_artifact_id":"c"`
	for js, want := range map[string]string{
		`{"id":"d","type":"run_docker_container","docker_context_artifact_id":"c"}`:                                                              `field "sandbox_name": is required`,
		`{"id":"d","type":"run_docker_container","sandbox_name":"b"}`:                                                                            `field "docker_context_artifact_id": give exactly one of docker_context_artifact_id and docker_context_url`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"docker_context_url":"http://x/c.zip"}`:                                             `field "docker_context_artifact_id": give exactly one`,
		`{"id":"d","type":"run_docker_container","sandbox_name":"b","docker_context_url":"ftp://x/c.zip"}`:                                       `field "docker_context_url": must be an http(s) URL`,
		`{"id":"d","type":"run_docker_container","sandbox_name":"b","docker_context_url":"http://x/c.tar.gz"}`:                                   `field "docker_context_url": must name a .zip archive`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"ports":["80"]}`:                                                                    `field "ports": must be an integer, got a string`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"ports":[70000]}`:                                                                   `field "ports": port 70000 out of range`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"env_vars":{"A":1}}`:                                                                `field "env_vars": must be a string, got a number`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"privileged":"yes"}`:                                                                `field "privileged": must be a boolean, got a string`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"volumes":["data:/data"]}`:                                                          `field "volumes": "data:/data": the source must be an absolute path`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"volumes":["/a:/b:rx"]}`:                                                            `field "volumes": "/a:/b:rx": mode must be ro or rw`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"extra_networks":["host"]}`:                                                         `field "extra_networks": "host" replaces the container's network stack`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"shm_size":"lots"}`:                                                                 `field "shm_size": want a size such as 64m or 1g`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"container_name":"a b"}`:                                                            `field "container_name": must be letters, digits`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"dockerfile_path":"../Dockerfile"}`:                                                 `field "dockerfile_path": must be a path inside the build context`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"command_override":"x","keep_alive_with_base_command":true}`:                        `field "command_override": give command_override or keep_alive_with_base_command, not both`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"command_override":"echo 'hi"}`:                                                     `field "command_override": unclosed ' quote`,
		`{"id":"d","type":"run_docker_container",` + ctx + `,"ready":"x"}`:                                                                       `field "ready"`,
		`{"id":"u","type":"run_container_unit_tests_verifier","container_name":"c","command":"true"}`:                                            `field "sandbox_name": is required`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","command":"true"}`:                                              `field "container_name": is required`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c"}`:                                          `field "command": is required`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":["true"]}`:                       `field "command": must be a string, got a list`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":"t","timeout_sec":"5"}`:          `field "timeout_sec": must be a number, got a string`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":"t","timeout_sec":0}`:            `field "timeout_sec": must be positive`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":"t","env_vars":{"A-B":"1"}}`:     `field "env_vars": key "A-B" is not a POSIX name`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":"t","reward_path":"reward.txt"}`: `field "reward_path": "reward.txt" must be an absolute path`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":"t","result_paths":"/x"}`:        `field "result_paths": must be a list, got a string`,
		`{"id":"u","type":"run_container_unit_tests_verifier","sandbox_name":"b","container_name":"c","command":"t","setup_commands":[""]}`:      `field "setup_commands": command 0 is empty`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte("["+js+"]"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `step 1 (id "`) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
}

// Without a Docker engine among the run's providers the container steps
// fail saying so, before anything is built.
func TestRunDockerContainerWithoutEngine(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.run(t, `[{"id":"box","type":"deploy_sandbox","sandbox_name":"box","sandbox_mode":"vm"},
	 {"id":"up","type":"run_docker_container","sandbox_name":"box","docker_context_artifact_id":"c"}]`, nil)
	if err == nil || !strings.Contains(err.Error(), "include no Docker engine to build and run containers on") {
		t.Errorf("err = %v", err)
	}
}
