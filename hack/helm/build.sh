#!/usr/bin/env bash
# Builds (or reuses) the real Helm CLI from the Go module proxy for the test
# bed (make helm): helm.sh/helm/v3/cmd/helm at the version this directory's
# go.mod requires, cached in CACHE_DIR/helm-<version>/helm, so bumping the
# version in go.mod rebuilds.
#
#   build.sh CACHE_DIR          build or reuse, then print "helm: PATH" last
#   build.sh --path CACHE_DIR   only print the binary's path (no build)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
only_print=0
if [[ ${1:-} == --path ]]; then only_print=1; shift; fi
cache=${1:?usage: build.sh [--path] CACHE_DIR}
ver=$(awk '$1=="helm.sh/helm/v3" {print $2; exit}' "$here/go.mod")
[[ -n $ver ]] || { echo "helm: cannot read the helm.sh/helm/v3 version from $here/go.mod" >&2; exit 1; }
dest="$cache/helm-$ver"
if (( only_print )); then echo "$dest/helm"; exit 0; fi
t0=$(date +%s)
log() { echo "helm [$(( $(date +%s) - t0 ))s] $*"; }
if [[ -x $dest/helm ]]; then
	log "helm $ver cached in $dest"
	echo "helm: $dest/helm"
	exit 0
fi
mkdir -p "$dest"
exec 9>"$dest/.lock"
if ! flock -n 9; then log "another helm build holds $dest/.lock; waiting"; flock 9; fi
if [[ -x $dest/helm ]]; then echo "helm: $dest/helm"; exit 0; fi

tmp="$dest/.tmp.$$" vlog="$dest/build.log"
rm -rf "$tmp"; mkdir -p "$tmp"
# As Helm's Makefile: the Kubernetes version helm template and lint assume
# is 1.<minor of client-go> (otherwise 1.20, older than the chart's kubeVersion).
kminor=$(awk '$1=="k8s.io/client-go" {print $2; exit}' "$here/go.mod" | cut -d. -f2)
ldf="-s -w -X helm.sh/helm/v3/internal/version.version=$ver -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	ldf+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$kminor"
done
log "building helm $ver from the module proxy (cold: a few minutes on 2 cores; log $vlog)"
( cd "$here" && exec go build -v -trimpath -ldflags "$ldf" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm ) >"$vlog" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$tmp"; exit 130' INT TERM
start=$(date +%s); last=$start
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
	echo "helm: build failed (full log: $vlog)" >&2
	exit 1
fi
trap - INT TERM
mv -f "$tmp/helm" "$dest/helm"
rm -rf "$tmp"
log "built $("$dest/helm" version --short) in $(( $(date +%s) - start ))s"
echo "helm: $dest/helm"
