#!/bin/sh
# Run from examples/tutorial: runs every task of the bundle folder, with
# the env, its gateway and the agent as local processes (no Docker).
set -eu
agent-env run ./bundle --sandbox process
