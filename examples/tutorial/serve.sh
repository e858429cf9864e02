#!/bin/sh
# Run from examples/tutorial/notes: starts the notes env on port
# $NOTES_PORT and a gateway in front of it on $GW_PORT, until Ctrl-C.
set -eu
NOTES_PORT=${NOTES_PORT:-18766}
GW_PORT=${GW_PORT:-18765}

MCP_PORT=$NOTES_PORT go run ./cmd/notes-env &

INTERNAL_MCP_SERVERS=notes=http://127.0.0.1:$NOTES_PORT/mcp \
REST_PROXY_URLS=mcp-notes=http://127.0.0.1:$NOTES_PORT \
MCP_PORT=$GW_PORT agentenv-gateway &

trap 'kill $(jobs -p) 2>/dev/null' INT TERM EXIT
wait
