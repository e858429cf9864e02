#!/bin/sh
# The scripted agent: writes its answer to the coding task where the unit
# tests look for it, and reports what it did (run_code's program contract:
# the input JSON on stdin, the result JSON on stdout).
set -e
mkdir -p "$AGENTENV_WORKSPACE/solution"
printf 'sum=5\n' > "$AGENTENV_WORKSPACE/solution/answer.txt"
echo '{"wrote": "solution/answer.txt"}'
