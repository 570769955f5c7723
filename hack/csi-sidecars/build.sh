#!/usr/bin/env bash
# Builds (or reuses) the real Kubernetes CSI sidecars from the Go module proxy,
# in one `go build` so the shared k8s.io packages compile once. Called by
# `make csi-sidecars` (hack/make/csi.mk).
#
#   build.sh CACHE_DIR            build or reuse, then print "sidecars: DIR" last
#   build.sh --dir CACHE_DIR      only print the directory (no build)
#
# The versions are this directory's go.mod `tool` lines; the cache key is the
# hash of go.mod + go.sum, so a version bump rebuilds:
#   CACHE_DIR/csi-sidecars-<hash>/{csi-provisioner,csi-attacher,csi-resizer,
#                                   csi-snapshotter,snapshot-controller}
#   CACHE_DIR/csi-sidecars-<hash>/crd/  the VolumeSnapshot CRDs of client/v8
# node-driver-registrar and livenessprobe are not on the module proxy: the
# node plugin (`longhorn csi`) registers itself and serves its own health
# endpoint instead (see csi/registration.go).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bins=(csi-provisioner csi-attacher csi-resizer csi-snapshotter snapshot-controller)

main() {
	local only_print=0
	if [[ ${1:-} == --dir ]]; then only_print=1; shift; fi
	local cache=${1:?usage: build.sh [--dir] CACHE_DIR}
	local key dest
	key=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)
	dest="$cache/csi-sidecars-$key"
	if (( only_print )); then echo "$dest"; exit 0; fi
	mkdir -p "$cache"
	t0=$(date +%s)
	exec 9>"$cache/.csi-sidecars.lock"
	if ! flock -n 9; then
		log "another build holds $cache/.csi-sidecars.lock; waiting"
		flock 9
	fi
	if all_built "$dest"; then
		log "cached in $dest"
	else
		build "$dest"
	fi
	copy_crds "$dest"
	echo "sidecars: $dest"
}

log() { echo "csi-sidecars [$(( $(date +%s) - t0 ))s] $*"; }

all_built() {
	local b
	for b in "${bins[@]}"; do [[ -x $1/$b ]] || return 1; done
}

# build DEST: one `go build` of every tool package into a temporary directory
# (heartbeat every 30 s with the number of packages compiled), then moved.
build() {
	local dest=$1 tmp="$1/.tmp.$$" vlog="$1/build.log" pkgs start last pid
	mkdir -p "$dest"; rm -rf "$tmp"; mkdir -p "$tmp"
	mapfile -t pkgs < <(awk '/^tool \(/{t=1; next} t && /^\)/{t=0} t {print $1} /^tool [^(]/{print $2}' "$here/go.mod")
	log "building ${bins[*]} (cold: several minutes on 2 cores; log $vlog)"
	start=$(date +%s); last=$start
	( cd "$here" && exec go build -v -trimpath -ldflags "-s -w" -o "$tmp/" "${pkgs[@]}" ) >"$vlog" 2>&1 &
	pid=$!
	trap 'kill $pid 2>/dev/null; rm -rf "$tmp"; exit 130' INT TERM
	while kill -0 $pid 2>/dev/null; do
		sleep 2
		if (( $(date +%s) - last >= 30 )) && kill -0 $pid 2>/dev/null; then
			last=$(date +%s)
			log "still building, $(( last - start ))s, $(grep -vc '^#' "$vlog" || true) packages compiled"
		fi
	done
	if ! wait $pid; then
		tail -n 40 "$vlog" >&2
		rm -rf "$tmp"
		echo "csi-sidecars: build failed (full log: $vlog)" >&2
		exit 1
	fi
	trap - INT TERM
	local b
	for b in "${bins[@]}"; do mv -f "$tmp/$b" "$dest/$b"; done
	rm -rf "$tmp"
	log "built ${bins[*]} in $(( $(date +%s) - start ))s"
}

# copy_crds DEST: the snapshot.storage.k8s.io CRDs shipped in the
# external-snapshotter client module.
copy_crds() {
	local dir
	dir=$(cd "$here" && go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)
	mkdir -p "$1/crd"
	cp -f "$dir"/config/crd/snapshot.storage.k8s.io_*.yaml "$1/crd/"
	chmod 644 "$1"/crd/*.yaml
}

main "$@"
