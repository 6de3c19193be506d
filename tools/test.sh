#!/usr/bin/env bash
# Runs ackgap's whole test suite from a fresh machine of the go-svc kind:
# starts PostgreSQL if it is down, installs and starts the local Kafka
# (kfake) and SQS (fauxqs) servers on loopback, installs Chromium for the
# console's browser test when it is missing, checks formatting and vet,
# staticcheck (staticcheck.conf), then runs every test with the race detector.
# The failover test makes (and drops) PostgreSQL clusters of its own through
# tools/pgfailover.sh, so the run needs root and postgresql-common.
# On exit it stops the servers it started; a kfake or fauxqs already running
# (the user's) is reused and left running.
#
#   tools/test.sh              # everything
#   tools/test.sh ./router/... # only these packages (extra args go to go test)
#   tools/test.sh --load       # everything under background CPU load (also: TEST_LOAD=1)
#   tools/test.sh --help       # this text
#
# Load mode runs two busy loops per core (nproc) for the whole run, stopped on
# exit: the suite must hold on a busy machine (it asserts invariants, not
# counts that timing decides).
# Ports: the servers take 9092 (Kafka) and 4566 (SQS); when another process
# holds one, tools/brokers.sh picks a free port and the tests get it through
# KAFKA_BROKERS and SQS_ENDPOINT. Set KFAKE_PORT / FAUXQS_PORT to choose them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

case ${1:-} in
-h | --help)
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 0
	;;
esac

load=${TEST_LOAD:-0}
if [[ ${1:-} == --load ]]; then
	load=1
	shift
fi
load_pids=()
cleanup() {
	if ((${#load_pids[@]})); then
		kill "${load_pids[@]}" 2>/dev/null || true
		wait "${load_pids[@]}" 2>/dev/null || true
	fi
	# Only the servers this run started: kfake or fauxqs that were running
	# before (the user's) are reused and left running.
	if [[ -s $brokers_started ]]; then
		# shellcheck disable=SC2046 # one name a line
		tools/brokers.sh stop $(sort -u "$brokers_started")
	fi
	rm -f "$brokers_started"
	# The failover test's clusters, if a test left them (it drops its own).
	if [[ -n ${FAILOVER_SCRIPT:-} ]]; then "$FAILOVER_SCRIPT" down --all 2>/dev/null || true; fi
}
brokers_started=$(mktemp)
trap cleanup EXIT
if [[ $load == 1 ]]; then
	n=$((2 * $(nproc)))
	for ((i = 0; i < n; i++)); do
		(while :; do :; done) &
		load_pids+=($!)
	done
	echo "test: load mode: $n busy loops in the background (pids ${load_pids[*]})" >&2
fi

# PostgreSQL: preinstalled on 127.0.0.1:5432 with trust auth (design.md).
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
	echo "test: starting PostgreSQL" >&2
	pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
	for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
	pg_isready -h 127.0.0.1 -p 5432
fi
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}

# MariaDB: preinstalled on 127.0.0.1:3306, root without a password
# (/etc/mysql/my.cnf runs it as user mysql). Started as this machine kind
# does when it is down; the test database is created if missing; each
# test then makes a database of its own (internal/testdb.MySQLDatabase).
if ! mysqladmin -h127.0.0.1 -uroot ping >/dev/null 2>&1; then
	echo "test: starting MariaDB" >&2
	mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
	for _ in $(seq 1 30); do mysqladmin -h127.0.0.1 -uroot ping >/dev/null 2>&1 && break; sleep 1; done
	mysqladmin -h127.0.0.1 -uroot ping
fi
mysql -h127.0.0.1 -uroot -e 'CREATE DATABASE IF NOT EXISTS test'
export TEST_MYSQL_DSN=${TEST_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/test}

# Chromium for the console's browser test (console/browser_test.go), from
# Debian's chromium package when it is missing.
# A run of chosen packages that leaves ./console out does not need it.
need_chromium=1
if (($#)) && [[ " $* " != *console* && " $* " != *' ./... '* ]]; then need_chromium=0; fi
if ((need_chromium)) && [[ ! -x ${ACKGAP_CHROMIUM:-/usr/bin/chromium} ]]; then
	echo "test: installing chromium" >&2
	tools/apt-wait.sh update -qq
	DEBIAN_FRONTEND=noninteractive tools/apt-wait.sh install -y -qq chromium >/dev/null
fi

# The failover test (internal/failovertest) makes a primary and an
# asynchronous standby of its own with tools/pgfailover.sh (root,
# postgresql-common): named after this checkout, so a pair a killed run left
# is dropped by the next run and two checkouts do not share one. Under this
# script a pair that cannot be made fails the test; without FAILOVER_SCRIPT
# it skips.
export FAILOVER_SCRIPT=$ROOT/tools/pgfailover.sh
export FAILOVER_CLUSTER=${FAILOVER_CLUSTER:-ackgapfo_$(echo "$ROOT" | sha256sum | cut -c1-8)}

tools/brokers.sh install
BROKERS_STARTED_FILE=$brokers_started tools/brokers.sh start
eval "$(tools/brokers.sh env)"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/fauxqs/*'))
if [[ -n $unformatted ]]; then
	echo "test: gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# staticcheck, pinned; its configuration (and the reasoned exclusions) is
# staticcheck.conf at the root. govulncheck needs the vulnerability
# database: tools/vulncheck.sh runs it offline (not part of this run).
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
all=$(( $# == 0 ))
if [[ $# -eq 0 ]]; then set -- ./...; fi
go test -race -count=1 -timeout 30m "$@"

# Self-check: all of ackgap (the examples, the test kit, the brokers) passes
# ackgapvet, every check including the opt-in ones: a finding is either
# fixed or carries //ackgapvet:ignore <check> <reason>.
if (( all )); then
	go run ./cmd/ackgapvet -checks all ./...
fi
