package steps_test

import (
	"strings"
	"testing"

	"github.com/agentenv/agentenv/runner"
	"github.com/agentenv/agentenv/runner/steps"
)

// The agent steps refuse bad fields when the task is parsed, naming the
// step and the field: missing required fields, wrong types, values out of
// their set.
func TestAgentStepsBadInput(t *testing.T) {
	const trig = `"triggers":[{"id":"a","when":{"type":"step","turn":1,"cmp":"eq"},"actions":[{"type":"end"}]}]`
	for js, want := range map[string]string{
		// install_agent
		`{"id":"s","type":"install_agent","a2a_agent_id":"x"}`:                                                `field "sandbox_name": is required`,
		`{"id":"s","type":"install_agent","sandbox_name":"b"}`:                                                `field "a2a_agent_id": is required`,
		`{"id":"s","type":"install_agent","sandbox_name":"b","a2a_agent_id":"x","a2a_port":"80"}`:             `field "a2a_port": must be an integer, got a string`,
		`{"id":"s","type":"install_agent","sandbox_name":"b","a2a_agent_id":"x","a2a_port":70000}`:            `field "a2a_port": port 70000 out of range`,
		`{"id":"s","type":"install_agent","sandbox_name":"b","a2a_agent_id":"x","workspace_dir":"work"}`:      `field "workspace_dir": "work" must be an absolute path`,
		`{"id":"s","type":"install_agent","sandbox_name":"b","a2a_agent_id":"x","workspace_dir":"/w"}`:        `field "workspace_dir": applies to a container install`,
		`{"id":"s","type":"install_agent","sandbox_name":"b","a2a_agent_id":"x","install_commands":["make"]}`: `field "install_commands"`,
		// add_skills
		`{"id":"s","type":"add_skills","agent_name":"a"}`:                                              `field "skills": give at least one of skills`,
		`{"id":"s","type":"add_skills","skills":{"name":"x"}}`:                                         `field "skills": must be a list, got an object`,
		`{"id":"s","type":"add_skills","skills":[{"name":"x","description":"d"}]}`:                     `field "skills": skills[0]: give exactly one of body (inline), s3_url and skill_artifact_id`,
		`{"id":"s","type":"add_skills","skills":[{"description":"d","body":"b"}]}`:                     `field "skills": skills[0]: an inline skill needs name and description`,
		`{"id":"s","type":"add_skills","skills":[{"name":"a b","description":"d","body":"b"}]}`:        `field "skills": skills[0]: name "a b"`,
		`{"id":"s","type":"add_skills","skills":[{"name":"x","description":"d","s3_url":"s3://b/k"}]}`: `field "skills": skills[0]: s3_url: skill folders in an object store are not supported`,
		`{"id":"s","type":"add_skills","skills":[{"skill_artifact_id":"k","name":"x"}]}`:               `takes its name, description and frontmatter from the artifact`,
		`{"id":"s","type":"add_skills","cli_artifact_ids":"c"}`:                                        `field "cli_artifact_ids": must be a list, got a string`,
		`{"id":"s","type":"add_skills","file_artifact_universe_ids":["u","u"]}`:                        `field "file_artifact_universe_ids": ids must be non-empty and unique`,
		// deploy_human_agent
		`{"id":"s","type":"deploy_human_agent","a2a_url":"ftp://x"}`:       `field "a2a_url": "ftp://x" must be an absolute http(s) URL`,
		`{"id":"s","type":"deploy_human_agent","a2a_url":"https://u:p@x"}`: `field "a2a_url": must not carry credentials`,
		`{"id":"s","type":"deploy_human_agent","agent_name":7}`:            `field "agent_name": must be a string, got a number`,
		// register_agent_triggers
		`{"id":"s","type":"register_agent_triggers",` + trig + `}`:                                                                                            `field "agent_name": is required`,
		`{"id":"s","type":"register_agent_triggers","agent_name":"u"}`:                                                                                        `field "triggers": is required`,
		`{"id":"s","type":"register_agent_triggers","agent_name":"u","triggers":"x"}`:                                                                         `field "triggers": must be a list, got a string`,
		`{"id":"s","type":"register_agent_triggers","agent_name":"u","triggers":[{"when":{"type":"soon"},"actions":[{"type":"end"}]}]}`:                       `field "triggers": triggers[0].when.type "soon": want one of [step env_trigger conversational all any]`,
		`{"id":"s","type":"register_agent_triggers","agent_name":"u","triggers":[{"when":{"type":"all","of":[{"type":"nope"}]},"actions":[{"type":"end"}]}]}`: `triggers[0].when.of[0].type "nope"`,
		`{"id":"s","type":"register_agent_triggers","agent_name":"u","triggers":[{"when":{"type":"step"},"actions":[{"type":"shout"}]}]}`:                     `field "triggers": triggers[0].actions[0].type "shout": want one of [say end]`,
		// snapshot_agent_state
		`{"id":"s","type":"snapshot_agent_state","prompt_id":"p"}`:                                              `field "artifact_id": is required`,
		`{"id":"s","type":"snapshot_agent_state","artifact_id":"a"}`:                                            `field "prompt_id": is required`,
		`{"id":"s","type":"snapshot_agent_state","artifact_id":"a","prompt_id":"p","timeout_seconds":"60"}`:     `field "timeout_seconds": must be an integer, got a string`,
		`{"id":"s","type":"snapshot_agent_state","artifact_id":"a","prompt_id":"p","timeout_seconds":0}`:        `field "timeout_seconds": must be positive`,
		`{"id":"s","type":"snapshot_agent_state","artifact_id":"a","prompt_id":"p","universe_artifact_id":"u"}`: `field "universe_artifact_id": goes with env_id`,
		// deploy_agent sandbox_name, prompt_agent user_a2a_url
		`{"id":"s","type":"deploy_agent","sandbox_name":["b"]}`:                                                                     `field "sandbox_name": must be a string, got a list`,
		`{"id":"s","type":"prompt_agent","prompt":"hi","user_a2a_url":"mailto:x"}`:                                                  `field "user_a2a_url": "mailto:x" must be an absolute http(s) URL`,
		`{"id":"s","type":"prompt_agent","prompt":"hi","user_a2a_url":"http://h"}`:                                                  `field "user_a2a_url": names the user of a conversation: set max_conversation_turns above 1`,
		`{"id":"s","type":"prompt_agent","prompt":"hi","user_a2a_url":"http://h","max_conversation_turns":3,"user_agent_name":"u"}`: `field "user_a2a_url": give user_a2a_url or user_agent_name, not both`,
	} {
		_, err := runner.ParseSteps(steps.Builtin(), []byte("["+js+"]"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `step 1 (id "s")`) {
			t.Errorf("%s:\n got %v\nwant %s", js, err, want)
		}
	}
}
