#!/usr/bin/env bash
# The project's test command (the README's).
#
#   ./scripts/test.sh                   checks, the main suite, then every group
#   ./scripts/test.sh --group docker    one group alone (repeat the flag for more)
#   ./scripts/test.sh --no-groups       checks and the main suite only
#   ./scripts/test.sh --list            the groups and what they need
#
# Every stage compiles with the same flags (-race), so the tree is compiled
# once: go vet's compilation is reused by go test. The static-build check
# compiles only the shipped commands, with the flags the image builder uses.
set -euo pipefail
cd "$(dirname "$0")/.."

# Slow suites, run after the main suite as named groups; their packages
# are left out of the main suite. One line per group:
#   name|needs|packages|what|how to meet the need
# needs: "-" (nothing), "env:VAR" (the variable must be set) or "docker"
# (an engine must answer). A group whose need is unmet prints one line
# saying so and is skipped, except under CI=true, where it runs (and fails).
TEST_GROUPS=(
	"docker|docker|./runner/sandbox/docker/...|Docker sandboxes, images and networks|start a Docker engine"
	"steps-docker|docker|./runner/steps/dockercontainer/...|task containers: run_docker_container and run_container_unit_tests_verifier on Docker|start a Docker engine"
	"kube|env:AGENTENV_KUBE_BIN|./runner/sandbox/kubernetes/... ./internal/kubecluster/...|the kubernetes provider on etcd, kube-apiserver and kwok fake nodes (tier 1); a real kubelet node on containerd when kubelet is built (tier 2)|integration/kube/build.sh, then export AGENTENV_KUBE_BIN=<the folder it prints>"
	"postgres|env:AGENTENV_TEST_POSTGRES_DSN|./registry/postgres/...|the document store on PostgreSQL|source .ci/postgres.sh && start_postgres (as root), or point AGENTENV_TEST_POSTGRES_DSN at a server"
	"temporal|env:AGENTENV_TEMPORAL_DEVSERVER|./runner/temporal/realserver/...|the Temporal runner on a real server: agent-env workers, a killed worker, cancel, eval|export AGENTENV_TEMPORAL_DEVSERVER=$(integration/temporal/build-devserver.sh)"
)

FLAGS=(-race)
TIMEOUT=20m

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }

want_groups=()
run_main=1
run_groups=1
while [ $# -gt 0 ]; do
	case "$1" in
	--group) [ $# -ge 2 ] || { usage >&2; exit 2; }; want_groups+=("$2"); run_main=0; shift 2 ;;
	--group=*) want_groups+=("${1#--group=}"); run_main=0; shift ;;
	--no-groups) run_groups=0; shift ;;
	--list)
		for g in "${TEST_GROUPS[@]}"; do
			IFS='|' read -r name needs pkgs what _ <<<"$g"
			printf '%-10s %s (%s; needs %s)\n' "$name" "$what" "$pkgs" "$needs"
		done
		exit 0 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
	esac
done

start=$SECONDS
step() { printf '== %s [%ds]\n' "$*" $((SECONDS - start)); }

group_line() {
	local g
	for g in "${TEST_GROUPS[@]}"; do
		[ "${g%%|*}" = "$1" ] && { echo "$g"; return 0; }
	done
	return 1
}

for name in "${want_groups[@]}"; do
	if ! group_line "$name" >/dev/null; then
		echo "unknown group \"$name\"; the groups are: $(for g in "${TEST_GROUPS[@]}"; do printf '%s ' "${g%%|*}"; done)" >&2
		exit 2
	fi
done

# unmet prints why a group cannot run here, or nothing when it can.
unmet() {
	case "$1" in
	-) ;;
	env:*) local v=${1#env:}; [ -n "${!v:-}" ] || echo "$v is unset" ;;
	docker)
		if [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ]; then
			echo "no Docker engine (no DOCKER_HOST, no /var/run/docker.sock)"
		fi ;;
	*) echo "unknown need $1" ;;
	esac
}

run_group() {
	local name needs pkgs what how why
	IFS='|' read -r name needs pkgs what how <<<"$(group_line "$1")"
	why=$(unmet "$needs")
	if [ -n "$why" ] && [ "${CI:-}" != true ]; then
		step "group $name ($what): skipped, $why; to run it: $how"
		return 0
	fi
	step "group $name: $what"
	# shellcheck disable=SC2086 # pkgs is a list of patterns
	go test "${FLAGS[@]}" -count=1 -timeout "$TIMEOUT" $pkgs
}

if [ "$run_main" = 1 ]; then
	step "gofmt"
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then
		echo "gofmt needed on:"; echo "$unformatted"; exit 1
	fi

	step "go vet ${FLAGS[*]}"
	go vet "${FLAGS[@]}" ./...

	step "static build of the commands (CGO_ENABLED=0)"
	CGO_ENABLED=0 go build -trimpath ./cmd/...

	# The main suite: every package but the groups'.
	grouped=()
	for g in "${TEST_GROUPS[@]}"; do
		IFS='|' read -r _ _ pkgs _ _ <<<"$g"
		# shellcheck disable=SC2086
		grouped+=($(go list $pkgs))
	done
	main=$(go list ./... | grep -vxF -f <(printf '%s\n' "${grouped[@]}" ""))
	step "go test ${FLAGS[*]}: $(wc -l <<<"$main") packages"
	# shellcheck disable=SC2086
	go test "${FLAGS[@]}" -count=1 -timeout "$TIMEOUT" $main

	if [ "$run_groups" = 1 ]; then
		for g in "${TEST_GROUPS[@]}"; do
			want_groups+=("${g%%|*}")
		done
	fi
fi

for name in "${want_groups[@]}"; do
	run_group "$name"
done
step "done"
