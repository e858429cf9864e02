#!/bin/sh
# Talk to the notes env through its gateway at $GW (http://127.0.0.1:18765
# by default), as a harness or an agent without MCP would.
set -eu
GW=${GW:-http://127.0.0.1:18765}

# The composed card: the gateway's own routes and, under
# children_environments, the notes env's card.
curl -sf "$GW/.well-known/agent-env.json" >/dev/null && echo "card: ok"

# Reset and seed the env through the data plane (JSON-RPC 2.0).
curl -sf "$GW/agentenv" -d '{"jsonrpc":"2.0","id":1,"method":"data/reset"}'; echo
curl -sf "$GW/agentenv" -d '{"jsonrpc":"2.0","id":2,"method":"data/add",
  "params":{"parts":[{"kind":"text","text":"water the plants"}]}}'; echo

# List the tools a role sees, then call one, over REST.
curl -sf "$GW/step" -H 'AgentEnv-Role: assistant' -d '{"action":"list_tools"}' |
  grep -o '"name":"[a-z_]*"'
curl -sf "$GW/step" -H 'AgentEnv-Role: assistant' \
  -d '{"action":"call_tool","tool_name":"notes_add","arguments":{"text":"call mum"}}'

# Read the env's data back.
curl -sf "$GW/agentenv" -d '{"jsonrpc":"2.0","id":3,"method":"data/get"}'; echo
