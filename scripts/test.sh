#!/usr/bin/env bash
# The project's test command (the README's): vet, format check, race tests.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi

echo "== static build"
CGO_ENABLED=0 go build ./...

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...
