#!/usr/bin/env bash
# Builds the static binaries the Kubernetes integration tests run against:
# kube-apiserver, etcd and kwok, each from its own builder module in this folder
# (their k8s.io versions differ, so they cannot share one go.mod), and kubelet
# for the real-node tests. kubelet is built from k8s.io/kubernetes v1.37.2 with the
# same replaces as kube-apiserver, but in its own builder module: a tool added to
# the apiserver module would change its go.sum and so the cache key of the
# (ten-minute) kube-apiserver build.
#
# Binaries are cached in ${XDG_CACHE_HOME:-$HOME/.cache}/agentenv/integration/bin,
# keyed by the builder module's go.mod + go.sum + sources and the Go version, so a
# second run with nothing changed builds nothing. The last line printed is
#   AGENTENV_KUBE_BIN=<folder holding kube-apiserver, etcd and kwok>
#
# Beside kwok it writes kwok-stages.yaml: the "fast" node and pod Stages of
# the same kwok release (kwok runs no stages unless given some), read by
# the test harness (internal/kubecluster).
#
# Usage: integration/kube/build.sh [--if-cached] [apiserver|etcd|kwok|kubelet ...]
# The default is apiserver, etcd and kwok; kubelet is built only when named, and
# is optional for the tests on kwok's fake nodes (its tests skip without it).
# kube-apiserver is by far the largest: a cold build takes tens of minutes on 2 cores.
# With --if-cached nothing is built: it prints the AGENTENV_KUBE_BIN line when every
# binary asked for is already cached, and exits 1 naming what is missing otherwise
# (CI uses this: a cold kube-apiserver build does not fit its budget).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/agentenv/integration/bin
out=$cache/kube
mkdir -p "$out"
export CGO_ENABLED=0

# name of the builder folder -> binary name and package to build.
declare -A bin=([apiserver]=kube-apiserver [etcd]=etcd [kwok]=kwok [kubelet]=kubelet)
declare -A pkg=([apiserver]=k8s.io/kubernetes/cmd/kube-apiserver [etcd]=. [kwok]=sigs.k8s.io/kwok/cmd/kwok [kubelet]=k8s.io/kubernetes/cmd/kubelet)
# kube-apiserver and kubelet report their version from ldflags; without them they
# say v0.0.0, which clients such as kwok read as "too old".
kver="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=v1.37.2 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"
declare -A ldx=(
	[apiserver]="$kver" [kubelet]="$kver"
	[etcd]="" [kwok]="-X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0")

log() { printf '%s build.sh: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

key_of() { # $1 builder folder
	(cd "$here/$1" && cat go.mod go.sum *.go 2>/dev/null; go version) | sha256sum | cut -c1-16
}

build_one() { # $1 builder folder
	local d=$1 name=${bin[$1]} start=$SECONDS
	if [ ! -f "$here/$d/go.sum" ]; then
		log "$d: no go.sum yet, running go mod tidy"
		(cd "$here/$d" && go mod tidy)
	fi
	local key dst
	key=$(key_of "$d")
	dst=$cache/$name-$key/$name
	if [ -x "$dst" ]; then
		log "$name: cached ($dst)"
	elif [ "$if_cached" = 1 ]; then
		log "$name: not cached (build it with integration/kube/build.sh $d)"
		return 1
	else
		log "$name: go mod download"
		(cd "$here/$d" && go mod download)
		log "$name: building ${pkg[$d]} (package names follow as they compile)"
		mkdir -p "$cache/$name-$key"
		(cd "$here/$d" && go build -v -trimpath -ldflags="-s -w ${ldx[$d]}" -o "$dst.tmp" "${pkg[$d]}") 2>&1 |
			awk -v n="$name" '{ c++; printf "%s %s: [%d] %s\n", strftime("%H:%M:%S", systime(), 1), n, c, $0; fflush() }' >&2
		[ "${PIPESTATUS[0]}" = 0 ] || { log "$name: build FAILED"; return 1; }
		mv "$dst.tmp" "$dst"
		log "$name: built in $((SECONDS - start)) s"
	fi
	ln -sfn "$dst" "$out/$name"
	if [ "$d" = kwok ] && { [ "$if_cached" = 0 ] || [ ! -f "$out/kwok-stages.yaml" ]; }; then
		local src
		src=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
		for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
			echo "---"
			cat "$src/$f"
		done > "$out/kwok-stages.yaml.tmp"
		mv "$out/kwok-stages.yaml.tmp" "$out/kwok-stages.yaml"
	fi
}

if_cached=0
if [ "${1:-}" = --if-cached ]; then
	if_cached=1
	shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(apiserver etcd kwok)
for t in "${targets[@]}"; do
	[ -n "${bin[$t]:-}" ] || { log "unknown target $t (want apiserver, etcd, kwok or kubelet)"; exit 2; }
	build_one "$t" || exit 1
done
echo "AGENTENV_KUBE_BIN=$out"
