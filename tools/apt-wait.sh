#!/usr/bin/env bash
# apt-wait.sh ARGS...: apt-get ARGS, waiting while another apt-get or dpkg
# (unattended upgrades, a second install running beside this one) holds
# the dpkg or package-list lock, up to APT_WAIT_TIMEOUT seconds (default
# 600). Any other failure is returned at once, with apt-get's exit code.
set -uo pipefail
timeout=${APT_WAIT_TIMEOUT:-600}
deadline=$((SECONDS + timeout))
while :; do
	out=$(apt-get -o DPkg::Lock::Timeout=60 "$@" 2>&1)
	rc=$?
	if ((rc == 0)); then
		[[ -n $out ]] && printf '%s\n' "$out"
		exit 0
	fi
	if ! grep -q -e 'Could not get lock' -e 'Unable to acquire the dpkg frontend lock' -e 'Unable to lock directory' <<<"$out" || ((SECONDS >= deadline)); then
		printf '%s\n' "$out" >&2
		exit "$rc"
	fi
	echo "apt-wait: apt-get $1 waits for another apt or dpkg to release its lock" >&2
	sleep 5
done
