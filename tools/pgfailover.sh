#!/usr/bin/env bash
# A PostgreSQL primary and an asynchronous standby on loopback, made to fail
# over for real (issue 24: internal/failovertest). Needs root and
# postgresql-common (pg_createcluster, pg_ctlcluster), as on this machine kind.
#
#   tools/pgfailover.sh up              # a fresh pair (drops an old one first): primary on a free port,
#                                       # standby made by pg_basebackup -R streaming from it; prints the env below
#   tools/pgfailover.sh env             # prints the URLs of the pair that exists
#   tools/pgfailover.sh stop-receiver   # a network partition: SIGSTOP the standby's WAL receiver, take away its
#                                       # primary_conninfo so it cannot reconnect, then SIGKILL it while stopped
#                                       # (what sat unread in its socket is lost, as on a cut link)
#   tools/pgfailover.sh kill-primary    # SIGKILL the primary's postmaster and all its processes at once
#   tools/pgfailover.sh promote         # promote the standby; waits until it accepts writes
#   tools/pgfailover.sh down            # stop and drop both clusters (idempotent)
#   tools/pgfailover.sh down --all      # the same for every pair whose name starts with FAILOVER_CLUSTER
#   tools/pgfailover.sh --help          # this text
#
# Output of up and env, one a line, for eval or for a test to parse:
#   FAILOVER_PRIMARY_URL=postgres://postgres@127.0.0.1:<port>/postgres?sslmode=disable
#   FAILOVER_STANDBY_URL=postgres://postgres@127.0.0.1:<port>/postgres?sslmode=disable
# Clusters: <version>/<FAILOVER_CLUSTER>_primary and _standby (FAILOVER_CLUSTER default ackgapfo; set it to
# run two pairs side by side), version FAILOVER_PG_VERSION (default: the newest installed). Trust auth on
# loopback only. Every step is bounded (FAILOVER_TIMEOUT s, default 60); a step that fails says what and exits 1.
# Note: SIGSTOP alone loses nothing (the standby reads the socket after SIGCONT); the kill while stopped does.
set -euo pipefail

NAME=${FAILOVER_CLUSTER:-ackgapfo}
PRIMARY=${NAME}_primary
STANDBY=${NAME}_standby
TIMEOUT=${FAILOVER_TIMEOUT:-60}

say() { echo "pgfailover: $*" >&2; }
die() {
	say "$*"
	exit 1
}

case ${1:-} in
-h | --help | "")
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	[[ -n ${1:-} ]] || exit 2
	exit 0
	;;
esac

command -v pg_createcluster >/dev/null || die "pg_createcluster not found (install postgresql-common)"
VERSION=${FAILOVER_PG_VERSION:-$(ls /usr/lib/postgresql | sort -V | tail -n1)}
[[ -x /usr/lib/postgresql/$VERSION/bin/postgres ]] || die "PostgreSQL $VERSION is not installed (/usr/lib/postgresql/$VERSION)"
BIN=/usr/lib/postgresql/$VERSION/bin
((EUID == 0)) || die "must run as root (pg_createcluster, and signals to the postgres user's processes)"

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A loopback port that no socket uses, below the ephemeral range (as tools/brokers.sh picks them).
free_port() {
	local p i lo=20000 hi=32768 elo=32768 ehi=60999
	if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
		read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range
	fi
	if ((elo - lo >= 1000)); then hi=$elo; else lo=$((ehi + 1)) hi=65536; fi
	for ((i = 0; i < 100; i++)); do
		p=$((lo + RANDOM % (hi - lo)))
		tcp_open "$p" && continue
		if command -v ss >/dev/null && [[ -n $(ss -Htan "sport = :$p" 2>/dev/null) ]]; then continue; fi
		echo "$p"
		return
	done
	die "no free loopback port found in 100 tries in [$lo, $hi)"
}

exists() { [[ -d /etc/postgresql/$VERSION/$1 ]]; }
port_of() { sed -n 's/^port *= *\([0-9]*\).*/\1/p' "/etc/postgresql/$VERSION/$1/postgresql.conf"; }
datadir_of() { echo "/var/lib/postgresql/$VERSION/$1"; }
url_of() { echo "postgres://postgres@127.0.0.1:$(port_of "$1")/postgres?sslmode=disable"; }
psql_at() { # cluster sql
	timeout "$TIMEOUT" runuser -u postgres -- psql -X -q -At -h 127.0.0.1 -p "$(port_of "$1")" -U postgres -d postgres -c "$2"
}
postmaster_pid() { # cluster: the running postmaster's pid, or nothing
	local f pid
	f=$(datadir_of "$1")/postmaster.pid
	[[ -r $f ]] || return 0
	pid=$(head -n1 "$f")
	[[ -n $pid && -d /proc/$pid ]] && [[ $(cat "/proc/$pid/comm") == postgres ]] && echo "$pid"
	return 0
}
# wait_for <what> <command...>: runs the command every 0.2 s until it succeeds, for at most TIMEOUT s.
wait_for() {
	local what=$1 deadline=$((SECONDS + TIMEOUT))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for $what"
		sleep 0.2
	done
}

drop() { # cluster
	exists "$1" || return 0
	local pid
	pid=$(postmaster_pid "$1")
	if [[ -n $pid ]]; then
		timeout "$TIMEOUT" pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$1" stop -m immediate >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
	fi
	timeout "$TIMEOUT" pg_dropcluster "$VERSION" "$1" || die "pg_dropcluster $VERSION $1 failed"
}

cmd_down() {
	drop "$STANDBY"
	drop "$PRIMARY"
	say "dropped $VERSION/$PRIMARY and $VERSION/$STANDBY (if they existed)"
}

cmd_down_all() {
	local d c
	for d in /etc/postgresql/"$VERSION"/"$NAME"*_primary /etc/postgresql/"$VERSION"/"$NAME"*_standby; do
		[[ -d $d ]] || continue
		c=${d##*/}
		drop "$c"
		say "dropped $VERSION/$c"
	done
}

cmd_env() {
	exists "$PRIMARY" && exists "$STANDBY" || die "no pair $NAME: run tools/pgfailover.sh up"
	echo "FAILOVER_PRIMARY_URL=$(url_of "$PRIMARY")"
	echo "FAILOVER_STANDBY_URL=$(url_of "$STANDBY")"
}

create() { # cluster port
	timeout "$TIMEOUT" pg_createcluster -p "$2" \
		"$VERSION" "$1" -- --auth=trust >/dev/null || die "pg_createcluster $VERSION $1 on port $2 failed"
}

start() { # cluster
	timeout "$TIMEOUT" pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$1" start ||
		die "pg_ctlcluster start $VERSION $1 failed: see /var/log/postgresql/postgresql-$VERSION-$1.log"
	wait_for "$1 to accept connections" psql_at "$1" 'SELECT 1'
}

cmd_up() {
	cmd_down
	local p1 p2 data
	p1=$(free_port)
	create "$PRIMARY" "$p1"
	start "$PRIMARY"
	p2=$(free_port)
	[[ $p2 != "$p1" ]] || p2=$(free_port)
	create "$STANDBY" "$p2"
	data=$(datadir_of "$STANDBY")
	find "$data" -mindepth 1 -delete
	timeout "$TIMEOUT" runuser -u postgres -- "$BIN/pg_basebackup" -h 127.0.0.1 -p "$p1" -U postgres \
		-D "$data" -R -X stream -c fast || die "pg_basebackup from $PRIMARY (port $p1) failed"
	start "$STANDBY"
	streaming() { [[ $(psql_at "$STANDBY" "SELECT status FROM pg_stat_wal_receiver") == streaming ]]; }
	wait_for "$STANDBY to stream from $PRIMARY" streaming
	say "primary $VERSION/$PRIMARY on 127.0.0.1:$p1, asynchronous standby $VERSION/$STANDBY on 127.0.0.1:$p2 (streaming)"
	cmd_env
}

cmd_stop_receiver() {
	exists "$STANDBY" || die "no standby $STANDBY: run tools/pgfailover.sh up"
	local pid data
	pid=$(psql_at "$STANDBY" "SELECT pid FROM pg_stat_wal_receiver")
	[[ -n $pid ]] || die "the standby has no WAL receiver"
	kill -STOP "$pid"
	# The partition: the standby no longer knows where the primary is, so the
	# startup process does not start a new receiver that would catch up.
	data=$(datadir_of "$STANDBY")
	sed -i '/^primary_conninfo/d' "$data/postgresql.auto.conf"
	timeout "$TIMEOUT" pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$STANDBY" reload
	sleep 0.5
	kill -KILL "$pid"
	# A killed receiver makes the postmaster restart the standby (a child's
	# crash); wait until it serves reads again, in recovery, with no receiver.
	norecv() { [[ $(psql_at "$STANDBY" "SELECT pg_is_in_recovery() AND NOT EXISTS (SELECT FROM pg_stat_wal_receiver)") == t ]]; }
	wait_for "$STANDBY to come back without a WAL receiver" norecv
	say "standby $STANDBY cut off: WAL receiver $pid stopped, then killed; replayed up to $(psql_at "$STANDBY" "SELECT pg_last_wal_replay_lsn()")"
}

cmd_kill_primary() {
	exists "$PRIMARY" || die "no primary $PRIMARY: run tools/pgfailover.sh up"
	local pid pids
	pid=$(postmaster_pid "$PRIMARY")
	[[ -n $pid ]] || die "the primary $PRIMARY is not running"
	# The postmaster and its children at once: a backend left orphaned would
	# go on committing for a moment.
	pids=$(ps -o pid= --ppid "$pid" | tr -s ' \n' ' ')
	# shellcheck disable=SC2086 # one pid a word
	kill -KILL "$pid" $pids 2>/dev/null || true # a child may have exited since ps
	gone() { ! tcp_open "$(port_of "$PRIMARY")" && [[ ! -d /proc/$pid ]]; }
	wait_for "$PRIMARY's processes to die" gone
	say "primary $PRIMARY killed (SIGKILL to postmaster $pid and its children)"
}

cmd_promote() {
	exists "$STANDBY" || die "no standby $STANDBY: run tools/pgfailover.sh up"
	timeout "$TIMEOUT" pg_ctlcluster --skip-systemctl-redirect "$VERSION" "$STANDBY" promote || die "promote $STANDBY failed"
	primary() { [[ $(psql_at "$STANDBY" "SELECT pg_is_in_recovery()") == f ]]; }
	wait_for "$STANDBY to leave recovery" primary
	say "standby $STANDBY promoted: it accepts writes on 127.0.0.1:$(port_of "$STANDBY")"
}

case $1 in
up) cmd_up ;;
env) cmd_env ;;
stop-receiver) cmd_stop_receiver ;;
kill-primary) cmd_kill_primary ;;
promote) cmd_promote ;;
down)
	if [[ ${2:-} == --all ]]; then cmd_down_all; else cmd_down; fi
	;;
*) die "unknown command $1 (try --help)" ;;
esac
