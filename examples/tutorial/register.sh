#!/bin/sh
# Run from examples/tutorial/notes: compiles the env and the agent into
# static binaries and registers them under the ids tasks use.
set -eu
agent-env env mcp-server put --id notes --environment-name notes --go-package ./cmd/notes-env
agent-env a2a-agent put --id notes-agent --go-package ./cmd/notes-agent
