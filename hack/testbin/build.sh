#!/usr/bin/env bash
# Builds (or reuses) the test bed's control-plane binaries and prepares a
# KUBEBUILDER_ASSETS directory. Called by `make testbin` (hack/make/testbed.mk).
#
#   build.sh CACHE_DIR               build or reuse, then print "assets: DIR" last
#   build.sh --assets-dir CACHE_DIR  only print the assets directory (no build)
#
# Versions come from this directory's go.mod files, so bumping a version there
# changes the cache key and rebuilds:
#   CACHE_DIR/k8s-<version>/{kube-apiserver,kubectl,kube-controller-manager,kube-scheduler,kubelet,kube-proxy}
#   CACHE_DIR/etcd-<version>/etcd
#   CACHE_DIR/crictl-<version>/crictl   (cri-tools: the CRI client for the nodes)
#   CACHE_DIR/assets-k8s-<version>-etcd-<version>/  symlinks to all eight
# A binary present in its key directory counts as built (binaries are moved
# there only after a successful build). Build order: kube-apiserver + kubectl,
# etcd, then kube-controller-manager + kube-scheduler + kubelet + kube-proxy
# in one `go build` (they share most compiled packages with the first group
# through the Go build cache). kubelet and kube-proxy run the local
# cluster's real nodes (testbed/cluster).
set -euo pipefail

main() {
	here=$(cd "$(dirname "$0")" && pwd)
	local only_print=0
	if [[ ${1:-} == --assets-dir ]]; then only_print=1; shift; fi
	cache=${1:?usage: build.sh [--assets-dir] CACHE_DIR}
	k8s_ver=$(modver "$here/go.mod" k8s.io/kubernetes)
	etcd_ver=$(modver "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)
	crictl_ver=$(modver "$here/crictl/go.mod" sigs.k8s.io/cri-tools)
	[[ -n $k8s_ver && -n $etcd_ver && -n $crictl_ver ]] || { echo "testbin: cannot read versions from go.mod files" >&2; exit 1; }
	local assets="$cache/assets-k8s-$k8s_ver-etcd-$etcd_ver"
	if (( only_print )); then echo "$assets"; exit 0; fi
	mkdir -p "$cache"
	t0=$(date +%s)
	# One build at a time per cache (several worktrees may run make test).
	exec 9>"$cache/.testbin.lock"
	if ! flock -n 9; then
		log "another testbin build holds $cache/.testbin.lock; waiting"
		flock 9
	fi

	local minor ldf=""
	minor=$(echo "$k8s_ver" | cut -d. -f2)
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldf+=" -X $p.gitVersion=$k8s_ver -X $p.gitMajor=1 -X $p.gitMinor=$minor"
	done
	ldf+=" -X k8s.io/component-base/version.gitTreeState=clean -s -w"
	local k8s_dir="$cache/k8s-$k8s_ver" etcd_dir="$cache/etcd-$etcd_ver" crictl_dir="$cache/crictl-$crictl_ver"
	build_group "kubernetes $k8s_ver" "$here" "$ldf" "$k8s_dir" kube-apiserver kubectl
	build_group "etcd $etcd_ver" "$here/etcd" "-s -w" "$etcd_dir" etcd
	build_group "kubernetes $k8s_ver" "$here" "$ldf" "$k8s_dir" kube-controller-manager kube-scheduler kubelet kube-proxy
	build_group "cri-tools $crictl_ver" "$here/crictl" "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_ver" "$crictl_dir" crictl

	mkdir -p "$assets"
	ln -sfn "$etcd_dir/etcd" "$assets/etcd"
	ln -sfn "$crictl_dir/crictl" "$assets/crictl"
	for b in kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy; do ln -sfn "$k8s_dir/$b" "$assets/$b"; done
	log "ready: $("$assets/kube-apiserver" --version), etcd $("$assets/etcd" --version | awk '/etcd Version/ {print $3}')"
	echo "assets: $assets"
}

modver() { awk -v m="$2" '$1==m && $2 ~ /^v/ {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$1"; }

log() { echo "testbin [$(( $(date +%s) - t0 ))s] $*"; }

# build_group LABEL MODULE_DIR LDFLAGS DEST BIN...: builds the missing BINs
# (./cmd/BIN, or the module root for etcd) in one `go build` into a temporary
# directory, printing a heartbeat with the number of packages compiled, then
# moves them into DEST.
build_group() {
	local label=$1 moddir=$2 ldf=$3 dest=$4; shift 4
	local missing=() pkgs=() b
	for b in "$@"; do
		if [[ -x $dest/$b ]]; then continue; fi
		missing+=("$b")
		case $b in
		etcd) pkgs+=(.) ;;
		crictl) pkgs+=(sigs.k8s.io/cri-tools/cmd/crictl) ;;
		*) pkgs+=("./cmd/$b") ;;
		esac
	done
	if (( ${#missing[@]} == 0 )); then
		log "$label: $* cached in $dest"
		return
	fi
	mkdir -p "$dest"
	local tmp="$dest/.tmp.$$" vlog="$dest/build.log"
	rm -rf "$tmp"; mkdir -p "$tmp"
	log "$label: building ${missing[*]} (cold: several minutes on 2 cores; log $vlog)"
	local start last pid
	start=$(date +%s); last=$start
	( cd "$moddir" && exec go build -v -trimpath -ldflags "$ldf" -o "$tmp/" "${pkgs[@]}" ) >"$vlog" 2>&1 &
	pid=$!
	trap 'kill $pid 2>/dev/null; rm -rf "$tmp"; exit 130' INT TERM
	while kill -0 $pid 2>/dev/null; do
		sleep 2
		if (( $(date +%s) - last >= 30 )) && kill -0 $pid 2>/dev/null; then
			last=$(date +%s)
			log "$label: still building ${missing[*]}, $(( last - start ))s, $(grep -vc '^#' "$vlog" || true) packages compiled"
		fi
	done
	if ! wait $pid; then
		tail -n 40 "$vlog" >&2
		rm -rf "$tmp"
		echo "testbin: $label build failed (full log: $vlog)" >&2
		exit 1
	fi
	trap - INT TERM
	for b in "${missing[@]}"; do mv -f "$tmp/$b" "$dest/$b"; done
	rm -rf "$tmp"
	log "$label: built ${missing[*]} in $(( $(date +%s) - start ))s"
}

main "$@"
exit
