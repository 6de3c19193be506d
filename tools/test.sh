#!/usr/bin/env bash
# Runs ackgap's whole test suite from a fresh machine of the go-svc kind:
# starts PostgreSQL if it is down, installs and starts the local Kafka
# (kfake) and SQS (fauxqs) servers on loopback, installs Chromium for the
# console's browser test when it is missing, checks formatting and vet,
# then runs every test with the race detector. The servers stop on exit.
#
#   tools/test.sh              # everything
#   tools/test.sh ./router/... # only these packages (extra args go to go test)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

# PostgreSQL: preinstalled on 127.0.0.1:5432 with trust auth (design.md).
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
	echo "test: starting PostgreSQL" >&2
	pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
	for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
	pg_isready -h 127.0.0.1 -p 5432
fi
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}

# Chromium for the console's browser test (console/browser_test.go), from
# Debian's chromium package when it is missing.
if [[ ! -x ${ACKGAP_CHROMIUM:-/usr/bin/chromium} ]]; then
	echo "test: installing chromium" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

tools/brokers.sh install
tools/brokers.sh start
trap 'tools/brokers.sh stop' EXIT
eval "$(tools/brokers.sh env)"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/fauxqs/*'))
if [[ -n $unformatted ]]; then
	echo "test: gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
if [[ $# -eq 0 ]]; then set -- ./...; fi
go test -race -count=1 -timeout 20m "$@"
