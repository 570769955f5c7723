#!/usr/bin/env bash
# Builds (or reuses) the S3 server of the backup tests, versitygw, from the Go
# module proxy (version pinned in hack/testbin/versitygw/go.mod) into
#   CACHE_DIR/versitygw-<version>/versitygw
# and checks that nfs-ganesha and rpcbind (Debian packages, .ci/packages) are
# installed. Called by `make testbin-backup` (hack/make/backup.mk).
#
#   backup-servers.sh CACHE_DIR          build or reuse
#   backup-servers.sh --path CACHE_DIR   only print the versitygw path
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
only_print=0
if [[ ${1:-} == --path ]]; then only_print=1; shift; fi
cache=${1:?usage: backup-servers.sh [--path] CACHE_DIR}
ver=$(awk '$1=="require" && $2=="github.com/versity/versitygw" {print $3}' "$here/versitygw/go.mod")
[[ -n $ver ]] || { echo "backup-servers: cannot read the versitygw version" >&2; exit 1; }
dest="$cache/versitygw-$ver"
if (( only_print )); then echo "$dest/versitygw"; exit 0; fi
t0=$(date +%s)
log() { echo "testbin-backup [$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p "$dest"
exec 9>"$dest/.build.lock"
flock 9
if [[ -x $dest/versitygw ]]; then
	log "versitygw $ver cached in $dest"
else
	log "versitygw $ver: building from the module proxy (cold: about 2 minutes on 2 cores)"
	tmp="$dest/.tmp.$$"
	rm -rf "$tmp"; mkdir -p "$tmp"
	(cd "$here/versitygw" && go build -ldflags '-s -w' -o "$tmp/versitygw" github.com/versity/versitygw/cmd/versitygw) &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do sleep 20; kill -0 "$pid" 2>/dev/null && log "still building versitygw"; done
	wait "$pid"
	mv "$tmp/versitygw" "$dest/versitygw"
	rm -rf "$tmp"
	log "versitygw $ver built"
fi
for b in ganesha.nfsd rpcbind; do
	if ! command -v "$b" >/dev/null; then
		echo "testbin-backup: $b not found: apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind (see .ci/packages)" >&2
	fi
done
