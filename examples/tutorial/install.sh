#!/bin/sh
# Run from the root of the agentenv checkout: installs the CLI and the
# gateway as static binaries into $(go env GOPATH)/bin (or $GOBIN).
set -eu
CGO_ENABLED=0 go install ./cmd/agent-env ./cmd/agentenv-gateway
