#!/usr/bin/env bash
# Runs govulncheck on ackgap without network access beyond the Go module
# proxy: the Go vulnerability database is published as a Go module
# (golang.org/x/vulndb, its data/osv/*.json are the OSV entries vuln.go.dev
# serves), so this downloads that module through GOPROXY, indexes it into the
# v1 database layout govulncheck reads (index/db.json, index/modules.json,
# ID/GO-*.json) with the module's own cmd/indexdb, and points govulncheck at
# it with -db file://.
#
#   tools/vulncheck.sh                 # newest vulndb, ./...
#   VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018 tools/vulncheck.sh
#   tools/vulncheck.sh -show verbose ./kafkabroker/...   # extra args go to govulncheck
#   tools/vulncheck.sh --help          # this text
#
# On a machine with network access the same check is simply
#   go run golang.org/x/vuln/cmd/govulncheck@v1.10.0 ./...
# (it reads https://vuln.go.dev). Indexing takes a few minutes the first
# time (cmd/indexdb builds with vulndb's cloud dependencies); the database
# is cached in ${VULNDB_DIR:-$HOME/.cache/ackgap-vulndb/<version>}.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

case ${1:-} in
-h | --help)
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 0
	;;
esac

GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.10.0}
version=${VULNDB_VERSION:-$(cd /tmp && go mod download -json golang.org/x/vulndb@latest | sed -n 's/.*"Version": "\(.*\)".*/\1/p')}
src=$(cd /tmp && go mod download -json "golang.org/x/vulndb@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
db=${VULNDB_DIR:-$HOME/.cache/ackgap-vulndb/$version}
if [[ ! -f $db/index/db.json ]]; then
	echo "vulncheck: indexing golang.org/x/vulndb@$version into $db" >&2
	rm -rf "$db.tmp"
	(cd /tmp && go run "golang.org/x/vulndb/cmd/indexdb@$version" -vulns "$src/data/osv" -out "$db.tmp")
	rm -rf "$db"
	mv "$db.tmp" "$db"
fi
if [[ $# -eq 0 ]]; then set -- ./...; fi
exec go run "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION" -db "file://$db" "$@"
