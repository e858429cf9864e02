# The run_code bootstrap: import the entry script, call its entrypoint
# with the input and write the JSON result. Standard library only: it runs
# in the sandbox. argv: run_dir entrypoint script_file.
import importlib.util
import json
import os
import sys

run_dir, entrypoint, script_file = sys.argv[1], sys.argv[2], sys.argv[3]
run_dir = os.path.abspath(run_dir)
entry = os.path.join(run_dir, script_file)
# The entry's folder first, so a nested entry imports its siblings by name.
for p in dict.fromkeys([run_dir, os.path.dirname(entry)]):
    sys.path.insert(0, p)
spec = importlib.util.spec_from_file_location("agentenv_run_code_entry", entry)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
fn = getattr(module, entrypoint, None)
if not callable(fn):
    sys.stderr.write("%s defines no function %r\n" % (script_file, entrypoint))
    sys.exit(3)
with open(os.path.join(run_dir, "input.json")) as f:
    data = json.load(f)
result = fn(data)
with open(os.path.join(run_dir, "output.json"), "w") as f:
    json.dump(result, f)
