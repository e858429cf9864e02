#!/usr/bin/env bash
# Builds the in-memory Temporal dev server (./devserver, the server
# module's temporaltest package) for the real-server test tier, once per
# go.sum, and prints the binary's path. The build is large (minutes on a
# 2-core machine); it is cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/agentenv/integration/bin.
#
#   export AGENTENV_TEMPORAL_DEVSERVER=$(integration/temporal/build-devserver.sh)
set -euo pipefail
cd "$(dirname "$0")"
bin="${XDG_CACHE_HOME:-$HOME/.cache}/agentenv/integration/bin"
key=$(sha256sum go.sum devserver/main.go | sha256sum | cut -c1-12)
out="$bin/temporal-devserver-$key"
if [ ! -x "$out" ]; then
	mkdir -p "$bin"
	CGO_ENABLED=0 nice go build -o "$out.tmp" ./devserver >&2
	mv "$out.tmp" "$out"
fi
echo "$out"
