#!/bin/sh
# Build the agentenv-gateway image FROM scratch.
#
#   images/gateway/build.sh [tag]      (default tag: agentenv-gateway:dev)
#
# It compiles a static binary (CGO_ENABLED=0) into a temporary build
# context, adds the empty directories the image needs, and runs
# `docker build` on that context, so nothing is written into the tree.
set -eu
tag="${1:-agentenv-gateway:dev}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
(cd "$root" && CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o "$ctx/agentenv-gateway" ./cmd/agentenv-gateway)
mkdir -p "$ctx/tmp" "$ctx/var/log/agentenv"
chmod 1777 "$ctx/tmp"
chmod 0777 "$ctx/var/log/agentenv"
cp "$here/Dockerfile" "$ctx/Dockerfile"
DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" docker build -q -t "$tag" "$ctx"
