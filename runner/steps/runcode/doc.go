// Package runcode is the run_code step: it runs a script artifact in a
// sandbox and stores its JSON result in
// metadata.script_results[<result_id>].
//
// The script receives {"args": <the step's args>, "results": <the
// script_results so far>} and returns any JSON value. Two contracts, chosen
// by the entry file's name:
//
//   - Python (the reference's): an entry ending in .py defines
//     run(input) (or the function named by entrypoint). The step stages
//     the entry and its sibling .py files with a small bootstrap
//     (runner.py, run with python3 in the sandbox) that imports the entry,
//     calls the function with the input and writes its JSON result.
//   - Program (ours, for Go or any language): any other entry is run as an
//     executable (a static binary, or a script with a #! line) with the
//     entrypoint name as its only argument, the input JSON on stdin, and
//     its result JSON on stdout. Its exit status must be 0.
//
// A Go program under the program contract (built static, for the
// sandbox's platform):
//
//	func main() {
//		var in struct {
//			Args    map[string]any `json:"args"`
//			Results map[string]any `json:"results"`
//		}
//		if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
//			os.Exit(1)
//		}
//		json.NewEncoder(os.Stdout).Encode(map[string]any{"seen": in.Args})
//	}
//
// Both find the sandbox's /app in the environment variable
// AGENTENV_WORKSPACE (on a local work-folder sandbox, /app is a folder of
// this machine, and that is its path), so a script can read and write the
// task's files wherever it runs.
//
// The script runs in the sandbox named by sandbox_name (ours), on the
// env's host (env_id) or in the agent's sandbox (agent_name, default
// default-agent). Env and agent instances deployed as local processes or
// FROM scratch containers run no commands, so with those the step fails
// saying so; sandbox_name is the portable choice.
package runcode
